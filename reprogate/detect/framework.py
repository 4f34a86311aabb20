"""Framework layer: lock files, requirement files, pyproject dependency tables and `pip install`
lines in Dockerfiles, compared requirement by requirement.

Each entry is keyed by (group, name) within its file (a group is a dependency group, an extra,
`build-system`, or a Dockerfile stage), and compared on the whole requirement: specifier, extras,
marker, URL, and the index and include options around it. Reordering, comments and whitespace
are not changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from reprogate.detect.base import Change, DetectContext
from reprogate.detect.dockerfile import stages
from reprogate.detect.pip_commands import installs
from reprogate.detect.versions import Versions
from reprogate.lockfiles import Locked, LockFileError, format_for, load_toml, normalize, shaped
from reprogate.lockfiles import requirements as requirements_txt
from reprogate.lockfiles.requirements import requirement_text

LAYER = "framework"
DOCKERFILE_EXCLUDED_SUFFIXES = (".md", ".rst", ".txt", ".py", ".sh", ".yml", ".yaml", ".json", ".toml", ".lock", ".html", ".cfg", ".ini", ".dockerignore")


def is_dockerfile(name: str) -> bool:
    """`Dockerfile`, `Containerfile`, `Dockerfile.rocm`, `Dockerfile_trtllm`, `Dockerfile-base`,
    `train.Dockerfile`, `cuda.dockerfile`: any file whose name says it is one, but not notes or
    scripts about one (`Dockerfile.md`, `build_dockerfile.py`)."""
    lowered = name.lower()
    if "dockerfile" not in lowered and "containerfile" not in lowered:
        return False
    return not lowered.endswith(DOCKERFILE_EXCLUDED_SUFFIXES) or lowered in ("dockerfile", "containerfile")


def matches(v: Versions) -> bool:
    return format_for(v.path) is not None or v.name == "pyproject.toml" or is_dockerfile(v.name)


class Pin(NamedTuple):
    """One (group, name) entry: what to show, what to compare, and the artifact hashes (a
    NamedTuple, immutable as a frozen dataclass and a third of its cost to make: a lock file
    makes ten thousand)."""

    shown: str  # "2.4.0", "==2.4.0", "[cuda]>=1; python_version < '3.12'"
    identity: str  # the whole requirement (or version) that is compared
    hashes: frozenset[str] = frozenset()
    requirement: bool = False  # identity is a PEP 508 requirement (else a version or a table entry)
    line: int = 0  # the line the parser read it from (its first line); 0: not known, detect.lines finds it


Pins = dict[tuple[str, str], Pin]


def _add(pins: Pins, key: tuple[str, str], pin: Pin) -> None:
    """Two entries under one key (a package listed twice with different markers, a lock with two
    resolutions of one name) are one entry holding both."""
    before = pins.get(key)
    if before is None:
        pins[key] = pin
        return

    def join(a: str, b: str) -> str:
        return " | ".join(sorted({*a.split(" | "), *b.split(" | ")}))

    # no one line holds both: detect.lines chooses, as for any change without a line
    pins[key] = Pin(join(before.shown, pin.shown), join(before.identity, pin.identity), before.hashes | pin.hashes, before.requirement and pin.requirement)


def _requirement_pin(name: str, text: str, exact_shown: str | None = None, hashes: frozenset[str] = frozenset(), line: int = 0) -> Pin:
    shown = exact_shown or (text[len(name) :].strip() if text.startswith(name) else text)
    return Pin(shown or "*", text, hashes, True, line)


_NOT_NAME_AND_RANGE = re.compile(r"[\[;@|]")  # extras, a marker, a URL, or several requirements joined
_OPERATOR = re.compile(r"[=<>!~]")


def _without_specifier(pin: Pin) -> str:
    """The requirement(s) with their version ranges taken out: equal for two pins whose only
    difference is the range (a "version" change), different when extras, markers or URLs moved.
    Parsed only for entries that changed."""
    if not pin.requirement:
        return ""
    if not _NOT_NAME_AND_RANGE.search(pin.identity):  # `name<spec>`: the name, before the first operator, is all that is left
        return _OPERATOR.split(pin.identity, 1)[0].strip()
    from packaging.requirements import InvalidRequirement, Requirement

    rests = []
    for text in pin.identity.split(" | "):
        try:
            spec = str(Requirement(text.removeprefix("-e ")).specifier)
        except InvalidRequirement:
            spec = ""
        rests.append(text.replace(spec, "", 1) if spec else text)
    return " | ".join(rests)


def _lock_pins(entries: list[Locked], ignore: set[str]) -> Pins:
    pins: Pins = {}
    for entry in entries:
        groups = set(filter(None, entry.group.split(",")))
        if groups and groups <= ignore:
            continue
        name = entry.name if entry.manager == "pip" else f"{entry.name} [{entry.manager}]"
        # A lock file resolves one environment: its entries are keyed by name, the groups that
        # reach a package only decide whether it is ignored (a package that moves from a dev group
        # to the main dependencies is the same package).
        if entry.requirement:
            _add(pins, ("", name), _requirement_pin(entry.name, entry.requirement, entry.version, entry.hashes))
        else:
            version = entry.version or "*"
            _add(pins, ("", name), Pin(version, version, entry.hashes))
    return pins


def _requirements_pins(text: str, known: dict[str, tuple[str, Any]]) -> Pins:
    """Each requirement and option with the line pip's parser read it from: a change is placed
    there without searching the file for its name. `known`: the lines both revisions share."""
    entries, options = requirements_txt.read_entries(text, known)  # no groups in a requirements file: none is ignored
    pins: Pins = {}
    for name, requirement, version, hashes, line in entries:
        _add(pins, ("", name), _requirement_pin(name, requirement, version, hashes, line))
    for option in options:
        _add(pins, ("", option.label), Pin(option.value, option.value, line=option.line))
    return pins


def _canonical(spec: Any) -> str:
    """A poetry or uv table entry (string, table, or list of tables) in one stable spelling."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, list):
        return " | ".join(sorted(_canonical(item) for item in spec))
    if isinstance(spec, dict):
        return ", ".join(f"{k}={json.dumps(v, sort_keys=True) if not isinstance(v, str) else v}" for k, v in sorted(spec.items()))
    return json.dumps(spec, sort_keys=True)


def _pyproject_pins(text: str, ignore: set[str]) -> Pins:
    from packaging.requirements import InvalidRequirement, Requirement

    data = load_toml(text)
    pins: Pins = {}

    def add(requirement: Any, group: str, where: str) -> None:
        if group in ignore or not isinstance(requirement, str):
            return  # an ignored group, or a {include-group = ...} entry
        try:
            parsed = Requirement(requirement)
        except InvalidRequirement as exc:
            raise LockFileError(f"{where}: {requirement!r}: {exc}") from None
        name = normalize(parsed.name)
        _add(pins, (group, name), _requirement_pin(name, requirement_text(name, parsed.extras, parsed.specifier, parsed.url, parsed.marker)))

    def table(entries: Any, group: str, where: str) -> None:
        for i, requirement in enumerate(entries if isinstance(entries, list) else []):
            add(requirement, group, f"{where}[{i}]")

    def part(parent: dict[str, Any], key: str, kind: type, where: str) -> Any:
        """`parent[key]` when it is a `kind` (absent or empty: an empty one), else LockFileError naming it."""
        value = parent.get(key)
        return kind() if not value else shaped(value, kind, where)

    project = part(data, "project", dict, "project")
    table(project.get("dependencies"), "", "project.dependencies")
    for group, requirements in part(project, "optional-dependencies", dict, "project.optional-dependencies").items():
        table(requirements, group, f"project.optional-dependencies.{group}")
    for group, requirements in part(data, "dependency-groups", dict, "dependency-groups").items():
        table(requirements, group, f"dependency-groups.{group}")
    table(part(data, "build-system", dict, "build-system").get("requires"), "build-system", "build-system.requires")
    tool = part(data, "tool", dict, "tool")
    uv = part(tool, "uv", dict, "tool.uv")
    table(uv.get("dev-dependencies"), "dev", "tool.uv.dev-dependencies")
    table(uv.get("override-dependencies"), "uv override", "tool.uv.override-dependencies")
    table(uv.get("constraint-dependencies"), "uv constraint", "tool.uv.constraint-dependencies")
    for name, source in part(uv, "sources", dict, "tool.uv.sources").items():
        value = _canonical(source)
        _add(pins, ("uv source", normalize(name)), Pin(value, value))
    for index in part(uv, "index", list, "tool.uv.index"):
        if isinstance(index, dict):
            _add(pins, ("uv index", str(index.get("name", index.get("url")))), Pin(str(index.get("url")), _canonical(index)))
    poetry = part(tool, "poetry", dict, "tool.poetry")
    tables = [
        ("", part(poetry, "dependencies", dict, "tool.poetry.dependencies")),
        ("dev", part(poetry, "dev-dependencies", dict, "tool.poetry.dev-dependencies")),
    ]
    for g, body in part(poetry, "group", dict, "tool.poetry.group").items():
        tables.append((g, part(shaped(body, dict, f"tool.poetry.group.{g}"), "dependencies", dict, f"tool.poetry.group.{g}.dependencies") if body else {}))
    for group, entries in tables:
        if group in ignore:
            continue
        for name, spec in entries.items():
            if name != "python":
                value = _canonical(spec)
                _add(pins, (group, normalize(name)), Pin(value, value))
    for source in part(poetry, "source", list, "tool.poetry.source"):
        if isinstance(source, dict):
            _add(pins, ("poetry source", str(source.get("name"))), Pin(str(source.get("url")), _canonical(source)))
    return pins


def _dockerfile_pins(text: str) -> Pins:

    pins: Pins = {}
    for stage in stages(text)[1]:
        for command, heredocs, scope in stage.runs:
            for item in installs(command, heredocs, scope):
                if item.name:
                    _add(pins, (stage.key, item.name), _requirement_pin(item.name, item.text))
                else:
                    # a requirement file copied in from the repository is named by its repository path:
                    # the same file copied to another folder installs the same packages
                    value = (stage.context_file(item.text) if item.label in ("-r", "-c") else None) or item.text
                    _add(pins, (stage.key, item.label), Pin(value, value))
    return pins


def pins(v: Versions, which: str, ctx: DetectContext) -> Pins:
    """(group, name) -> Pin for one side of a file; ValueError names the side and the reason."""
    text = v.text(which)
    if text is None:
        return {}

    def read() -> Pins:
        module = format_for(v.path)
        if module is not None and module.FORMAT == "pip-requirements":
            known: dict[str, tuple[str, Any]] = v.memo("requirement lines", dict)
            return _requirements_pins(text, known)
        if module is not None:
            return _lock_pins(module.parse(text), ctx.ignore_groups)
        if v.name == "pyproject.toml":
            return _pyproject_pins(text, ctx.ignore_groups)
        return _dockerfile_pins(text)

    try:
        return v.memo(f"framework pins {which}", read)
    except ValueError as exc:  # LockFileError, DockerfileError, InvalidRequirement: the file's own errors, naming the field or line
        raise ValueError(f"{'base' if which == 'old' else 'head'}: {exc}") from None


def diff(v: Versions, ctx: DetectContext) -> Iterator[Change]:
    """Each change of one file, entry by entry, as it is found: both sides are parsed once into
    pins keyed by (group, name) and compared key by key (a ten-thousand-pin lock file costs a
    dictionary lookup per pin, and the caller keeps only as many changes as it lists)."""
    try:
        old, new = pins(v, "old", ctx), pins(v, "new", ctx)
    except ValueError as exc:
        yield Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")
        return
    for group, name in sorted(old.keys() | new.keys()):
        before, after = old.get((group, name)), new.get((group, name))
        if before is None and after is not None:
            yield Change(LAYER, v.path, "added", name, None, after.shown, group=group, line=after.line)
        elif after is None and before is not None:
            yield Change(LAYER, v.path, "removed", name, before.shown, None, group=group, line=before.line)
        elif before is not None and after is not None and before.identity != after.identity:
            if name.startswith("-") or name in ("path or URL", "argument") or group in ("uv index", "uv source", "poetry source"):
                kind = "changed"  # an index, include, path or source: compared as a whole
            else:
                kind = "version" if _without_specifier(before) == _without_specifier(after) else "requirement"
            yield Change(LAYER, v.path, kind, name, before.shown, after.shown, group=group, line=after.line)
        elif before is not None and after is not None and before.hashes != after.hashes:
            yield Change(LAYER, v.path, "artifacts", name, before.shown, after.shown, "same version, different artifact hashes", group=group, line=after.line)
