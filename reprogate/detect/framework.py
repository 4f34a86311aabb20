"""Framework layer: lock files, pyproject dependency tables and `pip install` lines in Dockerfiles,
compared package by package. Reordering, comments and whitespace are not changes."""

from __future__ import annotations

import re

from reprogate.detect import Change, DetectContext
from reprogate.detect.versions import Versions
from reprogate.lockfiles import LockFileError, Locked, format_for, normalize

LAYER = "framework"
_PIP_LINE = re.compile(r"\bpip3?\s+install\b(?P<args>[^&;|]*)")
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?(?P<spec>[<>=!~].*)?$")


def is_dockerfile(name: str) -> bool:
    return name in ("Dockerfile", "Containerfile") or name.startswith("Dockerfile.") or name.endswith((".Dockerfile", ".dockerfile"))


def matches(v: Versions) -> bool:
    return format_for(v.path) is not None or v.name == "pyproject.toml" or is_dockerfile(v.name)


Pins = dict[str, tuple[str | None, frozenset[str]]]


def _lock_pins(entries: list[Locked], ignore: set[str]) -> Pins:
    pins: Pins = {}
    for entry in entries:
        groups = set(filter(None, entry.group.split(",")))
        if groups and groups <= ignore:
            continue
        key = entry.name if entry.manager == "pip" else f"{entry.name} [{entry.manager}]"
        pins[key] = (entry.version, entry.hashes)
    return pins


def _pyproject_pins(text: str, ignore: set[str]) -> Pins:
    from reprogate.lockfiles._toml import load

    data = load(text)
    specs: dict[str, str] = {}

    def add(requirement: str, group: str) -> None:
        if group in ignore:
            return
        match = _SPEC.match(requirement.split(";")[0].strip().replace(" ", ""))
        if match:
            specs[normalize(match.group("name"))] = match.group("spec") or "*"

    project = data.get("project", {})
    for requirement in project.get("dependencies", []):
        add(requirement, "")
    for group, requirements in project.get("optional-dependencies", {}).items():
        for requirement in requirements:
            add(requirement, group)
    for group, requirements in data.get("dependency-groups", {}).items():
        for requirement in requirements:
            if isinstance(requirement, str):
                add(requirement, group)
    poetry = data.get("tool", {}).get("poetry", {})
    tables = [("", poetry.get("dependencies", {})), ("dev", poetry.get("dev-dependencies", {}))]
    tables += [(g, body.get("dependencies", {})) for g, body in poetry.get("group", {}).items()]
    for group, table in tables:
        if group in ignore:
            continue
        for name, spec in table.items():
            if name != "python":
                specs[normalize(name)] = spec if isinstance(spec, str) else str(spec.get("version", spec))
    return {name: (spec, frozenset()) for name, spec in specs.items()}


def _dockerfile_pins(text: str) -> Pins:
    joined = re.sub(r"\\\n", " ", text)
    pins: Pins = {}
    for match in _PIP_LINE.finditer(joined):
        for token in match.group("args").split():
            if token.startswith("-") or "/" in token or token.startswith("$"):
                continue
            spec = _SPEC.match(token.strip("'\""))
            if spec:
                pins[normalize(spec.group("name"))] = (spec.group("spec") or "*", frozenset())
    return pins


def pins(v: Versions, which: str, ctx: DetectContext) -> Pins:
    text = v.text(which)
    if text is None:
        return {}
    try:
        module = format_for(v.path)
        if module is not None:
            return _lock_pins(module.parse(text), ctx.ignore_groups)
        if v.name == "pyproject.toml":
            return _pyproject_pins(text, ctx.ignore_groups)
        return _dockerfile_pins(text)
    except (LockFileError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{'base' if which == 'old' else 'head'}: {exc}") from None


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    try:
        old, new = pins(v, "old", ctx), pins(v, "new", ctx)
    except ValueError as exc:
        return [Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")]
    changes = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before is None:
            changes.append(Change(LAYER, v.path, "added", name, None, after[0] if after else None))
        elif after is None:
            changes.append(Change(LAYER, v.path, "removed", name, before[0], None))
        elif before[0] != after[0]:
            changes.append(Change(LAYER, v.path, "version", name, before[0], after[0]))
        elif before[1] != after[1]:
            changes.append(Change(LAYER, v.path, "artifacts", name, before[0], after[0], "same version, different artifact hashes"))
    return changes

