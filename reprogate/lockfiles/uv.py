"""uv.lock: [[package]] tables with version, sdist and wheel hashes."""

from __future__ import annotations

from reprogate.lockfiles import Locked, normalize
from reprogate.lockfiles._toml import load

FORMAT = "uv"
PATTERNS = ["uv.lock"]


def _group_only(packages: list[dict]) -> dict[str, str]:
    """Packages the project pulls in only through a dependency group (dev, docs, ...): direct
    entries of the root package's dev-dependencies that its main dependencies do not name."""
    groups: dict[str, str] = {}
    for package in packages:
        source = package.get("source", {})
        if "editable" not in source and "virtual" not in source:
            continue
        main = {normalize(d["name"]) for d in package.get("dependencies", [])}
        for group, deps in package.get("dev-dependencies", {}).items():
            for dep in deps:
                if normalize(dep["name"]) not in main:
                    groups[normalize(dep["name"])] = group
    return groups


def parse(text: str) -> list[Locked]:
    found = []
    packages = load(text).get("package", [])
    groups = _group_only(packages)
    for package in packages:
        hashes = {w["hash"] for w in package.get("wheels", []) if "hash" in w}
        if "hash" in package.get("sdist", {}):
            hashes.add(package["sdist"]["hash"])
        source = package.get("source", {})
        if "editable" in source or "virtual" in source:
            continue  # the project itself, not a dependency
        name = normalize(package["name"])
        found.append(Locked(name, package.get("version"), frozenset(hashes), groups.get(name, "")))
    return found
