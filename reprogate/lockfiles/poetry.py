"""poetry.lock: [[package]] tables with version, groups and file hashes."""

from __future__ import annotations

from reprogate.lockfiles.base import Locked, load_toml, normalize

FORMAT = "poetry"
PATTERNS = ["poetry.lock"]


def parse(text: str) -> list[Locked]:
    found = []
    for package in load_toml(text).get("package", []):
        hashes = frozenset(f["hash"] for f in package.get("files", []) if "hash" in f)
        groups = package.get("groups") or [package.get("category", "main")]
        group = "" if "main" in groups else ",".join(sorted(groups))
        found.append(Locked(normalize(package["name"]), package.get("version"), hashes, group))
    return found
