"""poetry.lock: [[package]] tables with version, groups and file hashes."""

from __future__ import annotations

from reprogate.lockfiles.base import Locked, load_toml, member, normalize, strings, tables

FORMAT = "poetry"
PATTERNS = ["poetry.lock"]


def parse(text: str) -> list[Locked]:
    found = []
    for i, package in enumerate(tables(load_toml(text).get("package", []), "package")):
        where = f"package[{i}]"
        files = tables(package.get("files", []), f"{where}.files")
        hashes = frozenset(member(f, "hash", str, f"{where}.files[{j}]") for j, f in enumerate(files) if "hash" in f)
        if package.get("groups"):
            groups = strings(package["groups"], f"{where}.groups")
        else:
            groups = [member(package, "category", str, where, "main")]
        group = "" if "main" in groups else ",".join(sorted(groups))
        found.append(Locked(normalize(member(package, "name", str, where)), member(package, "version", str, where, "") or None, hashes, group))
    return found
