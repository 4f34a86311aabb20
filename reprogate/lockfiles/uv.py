"""uv.lock: [[package]] tables with version, sdist and wheel hashes.

Every table is checked for its shape as it is read (`lockfiles.base.shaped`): a well-formed TOML
file whose `package` is not a list of tables, or whose name is not a string, is a LockFileError
naming the field, not a KeyError.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from reprogate.lockfiles.base import Locked, load_toml, member, normalize, shaped, strings, tables

FORMAT = "uv"
PATTERNS = ["uv.lock"]


def _is_project(package: dict[str, Any]) -> bool:
    source = package.get("source", {})
    return isinstance(source, dict) and ("editable" in source or "virtual" in source)


def _edges(entries: object, where: str) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for i, d in enumerate(shaped(entries, list, where)):
        if isinstance(d, dict) and "name" in d:
            out.append((normalize(member(d, "name", str, f"{where}[{i}]")), tuple(strings(d.get("extra", []), f"{where}[{i}].extra"))))
    return out


def _groups(package: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    return member(package, key, dict, where, {}) if key in package else {}


def reach(packages: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Package name -> the ways the project reaches it: "" for its main dependencies, the extra's
    or the dependency group's name for those (so `ignore_dependency_groups` treats an extra and a
    group named alike the same way, as it does in pyproject.toml). Walked
    transitively, through the extras a dependency asks for, so a package that a dev group names
    directly but the main dependencies also pull in is main, not dev-only."""
    by_name: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for i, package in enumerate(packages):
        by_name[normalize(member(package, "name", str, f"package[{i}]"))].append((f"package[{i}]", package))
    reached: dict[str, set[str]] = defaultdict(set)
    for i, project in ((i, p) for i, p in enumerate(packages) if _is_project(p)):
        where = f"package[{i}]"
        roots: list[tuple[str, list[tuple[str, tuple[str, ...]]]]] = [("", _edges(project.get("dependencies", []), f"{where}.dependencies"))]
        roots += [(extra, _edges(deps, f"{where}.optional-dependencies.{extra}")) for extra, deps in _groups(project, "optional-dependencies", where).items()]
        roots += [(group, _edges(deps, f"{where}.dev-dependencies.{group}")) for group, deps in _groups(project, "dev-dependencies", where).items()]
        for label, edges in roots:
            stack, seen = list(edges), set()
            while stack:
                name, extras = stack.pop()
                if (name, extras) in seen:
                    continue
                seen.add((name, extras))
                reached[name].add(label)
                for at, package in by_name.get(name, []):
                    if _is_project(package):
                        continue
                    stack += _edges(package.get("dependencies", []), f"{at}.dependencies")
                    optional = _groups(package, "optional-dependencies", at)
                    for extra in extras:
                        stack += _edges(optional.get(extra, []), f"{at}.optional-dependencies.{extra}")
    return reached


def parse(text: str) -> list[Locked]:
    found = []
    packages = tables(load_toml(text).get("package", []), "package")
    reached = reach(packages)
    for i, package in enumerate(packages):
        where = f"package[{i}]"
        wheels = tables(package.get("wheels", []), f"{where}.wheels")
        hashes = {member(w, "hash", str, f"{where}.wheels[{j}]") for j, w in enumerate(wheels) if "hash" in w}
        sdist = member(package, "sdist", dict, where, {}) if "sdist" in package else {}
        if "hash" in sdist:
            hashes.add(member(sdist, "hash", str, f"{where}.sdist"))
        if _is_project(package):
            continue  # the project itself, not a dependency
        name = normalize(member(package, "name", str, where))
        ways = reached.get(name, {""})  # unreached (a workspace member's own dependency, say): count it as main
        group = "" if "" in ways else ",".join(sorted(ways))
        found.append(Locked(name, member(package, "version", str, where, "") or None, frozenset(hashes), group))
    return found
