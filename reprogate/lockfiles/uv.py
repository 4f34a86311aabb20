"""uv.lock: [[package]] tables with version, sdist and wheel hashes."""

from __future__ import annotations

from reprogate.lockfiles import Locked, normalize
from reprogate.lockfiles._toml import load

FORMAT = "uv"
PATTERNS = ["uv.lock"]


def parse(text: str) -> list[Locked]:
    found = []
    for package in load(text).get("package", []):
        hashes = {w["hash"] for w in package.get("wheels", []) if "hash" in w}
        if "hash" in package.get("sdist", {}):
            hashes.add(package["sdist"]["hash"])
        source = package.get("source", {})
        if "editable" in source or "virtual" in source:
            continue  # the project itself, not a dependency
        found.append(Locked(normalize(package["name"]), package.get("version"), frozenset(hashes)))
    return found
