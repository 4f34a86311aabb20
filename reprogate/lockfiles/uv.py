"""uv.lock: [[package]] tables with version, sdist and wheel hashes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from reprogate.lockfiles.base import Locked, load_toml, normalize

FORMAT = "uv"
PATTERNS = ["uv.lock"]


def _is_project(package: dict[str, Any]) -> bool:
    source = package.get("source", {})
    return "editable" in source or "virtual" in source


def _edges(entries: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    return [(normalize(d["name"]), tuple(d.get("extra", ()))) for d in entries if isinstance(d, dict) and "name" in d]


def reach(packages: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Package name -> the ways the project reaches it: "" for its main dependencies, the extra's
    or the dependency group's name for those (so `ignore_dependency_groups` treats an extra and a
    group named alike the same way, as it does in pyproject.toml). Walked
    transitively, through the extras a dependency asks for, so a package that a dev group names
    directly but the main dependencies also pull in is main, not dev-only."""
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for package in packages:
        by_name[normalize(package["name"])].append(package)
    reached: dict[str, set[str]] = defaultdict(set)
    for project in (p for p in packages if _is_project(p)):
        roots: list[tuple[str, list[tuple[str, tuple[str, ...]]]]] = [("", _edges(project.get("dependencies", [])))]
        roots += [(extra, _edges(deps)) for extra, deps in project.get("optional-dependencies", {}).items()]
        roots += [(group, _edges(deps)) for group, deps in project.get("dev-dependencies", {}).items()]
        for label, edges in roots:
            stack, seen = list(edges), set()
            while stack:
                name, extras = stack.pop()
                if (name, extras) in seen:
                    continue
                seen.add((name, extras))
                reached[name].add(label)
                for package in by_name.get(name, []):
                    if _is_project(package):
                        continue
                    stack += _edges(package.get("dependencies", []))
                    for extra in extras:
                        stack += _edges(package.get("optional-dependencies", {}).get(extra, []))
    return reached


def parse(text: str) -> list[Locked]:
    found = []
    packages = load_toml(text).get("package", [])
    reached = reach(packages)
    for package in packages:
        hashes = {w["hash"] for w in package.get("wheels", []) if "hash" in w}
        if "hash" in package.get("sdist", {}):
            hashes.add(package["sdist"]["hash"])
        if _is_project(package):
            continue  # the project itself, not a dependency
        name = normalize(package["name"])
        ways = reached.get(name, {""})  # unreached (a workspace member's own dependency, say): count it as main
        group = "" if "" in ways else ",".join(sorted(ways))
        found.append(Locked(name, package.get("version"), frozenset(hashes), group))
    return found
