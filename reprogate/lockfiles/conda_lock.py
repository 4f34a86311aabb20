"""conda-lock.yml: a `package` list with name, version, manager, platform and hashes."""

from __future__ import annotations

from reprogate.lockfiles.base import Locked, load_yaml, member, normalize, shaped, tables

FORMAT = "conda-lock"
PATTERNS = ["conda-lock.yml", "conda-lock.yaml", "*.conda-lock.yml"]


def parse(text: str) -> list[Locked]:
    data = load_yaml(text, "conda-lock.yml")
    found = []
    packages = data.get("package") if isinstance(data, dict) else None
    for i, package in enumerate(tables(packages, "package") if packages is not None else []):
        where = f"package[{i}]"
        digests = package.get("hash") or {}
        hashes = frozenset(f"{k}:{v}" for k, v in shaped(digests, dict, f"{where}.hash").items())
        group = str(package.get("category", "main"))
        platform = str(package.get("platform", ""))
        manager = str(package.get("manager", "conda"))
        if "name" not in package or package["name"] is None:
            member(package, "name", str, where)  # raises: missing
        found.append(
            Locked(
                normalize(str(package["name"])),
                str(package.get("version")),
                hashes,
                "" if group == "main" else group,
                f"{manager}@{platform}" if platform else manager,
            )
        )
    return found
