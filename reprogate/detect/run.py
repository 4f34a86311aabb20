"""Run every detector over a diff and decide whether the reference must be rebuilt."""

from __future__ import annotations

import dataclasses
import fnmatch
import gc
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reprogate.core.config import Config
from reprogate.core.documents import DocumentError, load_text, parse_json, read_text
from reprogate.core.globs import glob_to_regex
from reprogate.detect import detectors
from reprogate.detect.base import LAYERS, REBUILD_LAYERS, Change, DetectContext
from reprogate.detect.dataset import SIDE_FILES, is_side_file
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.git import (
    DetectError,
    FileChange,
    changed_files,
    files_at,
    read_blobs,
    resolve,
    toplevel,
)
from reprogate.detect.lines import Placer
from reprogate.detect.pinned import Pin, parse_record, pins_of, record_paths, shard_pins
from reprogate.detect.versions import Versions
from reprogate.lockfiles import format_for

LISTED_PER_FILE = 500  # changes listed for one file in one layer; beyond it they are counted


@dataclass
class Beyond:
    """The changes of one file in one layer past the LISTED_PER_FILE listed: how many of each kind."""

    layer: str
    path: str
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def describe(self) -> str:
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.kinds.items()))
        return f"{self.count:,} more change(s) not listed ({kinds}); the first {LISTED_PER_FILE:,} are"

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "listed": LISTED_PER_FILE, "more": self.count, "kinds": dict(sorted(self.kinds.items()))}


@dataclass
class DetectResult:
    base: str
    head: str
    files: int = 0
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    beyond: dict[tuple[str, str], Beyond] = field(default_factory=dict)  # (layer, path) -> what is counted, not listed
    _listed: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    def add(self, changes: Iterable[Change]) -> None:
        """Keep the first LISTED_PER_FILE changes of each file and layer, count the rest: a diff
        that bumps ten thousand pins says so in a line, and its JSON stays a few hundred KB."""
        listed, beyond = self._listed, self.beyond
        for change in changes:
            key = (change.layer, change.path)
            count = listed.get(key, 0)
            if count < LISTED_PER_FILE:
                listed[key] = count + 1
                self.changes.append(change)
                continue
            more = beyond.get(key)
            if more is None:
                more = beyond[key] = Beyond(change.layer, change.path)
            more.kinds[change.kind] = more.kinds.get(change.kind, 0) + 1

    @property
    def layers(self) -> list[str]:
        present = {c.layer for c in self.changes}
        return [layer for layer in LAYERS if layer in present]

    @property
    def rebuild_required(self) -> bool:
        # every counted change's file has listed ones of its layer (the first LISTED_PER_FILE):
        # the listed changes decide alone, except a counted `reference` change
        return (
            any(c.layer in REBUILD_LAYERS for c in self.changes)
            or any(c.kind == "reference" for c in self.changes)
            or any("reference" in more.kinds for more in self.beyond.values())
        )

    def _not_listed(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for more in self.beyond.values():
            out.setdefault(more.layer, []).append(more.as_dict())
        return {layer: out[layer] for layer in LAYERS if layer in out}

    def as_json(self) -> dict[str, Any]:
        return {
            "apiVersion": "reprogate/v1",
            "kind": "Detection",
            "base": self.base,
            "head": self.head,
            "files_changed": self.files,
            "layers": self.layers,
            "rebuild_required": self.rebuild_required,
            "changes": {layer: [c.as_dict() for c in self.changes if c.layer == layer] for layer in LAYERS},
            "not_listed": {
                layer: [more.as_dict() for more in self.beyond.values() if more.layer == layer]
                for layer in LAYERS
                if any(m.layer == layer for m in self.beyond.values())
            },
            "notes": self.notes,
        }


def _matches_any(path: str, globs: Sequence[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(glob_to_regex(g).match(path) or ("/" not in g and fnmatch.fnmatch(name, g)) for g in globs)


@dataclass(frozen=True)
class Resolved:
    """The repository's top and the two commits, as a caller that asked git already knows them:
    detect does not ask again (each question is a git process)."""

    top: Path
    base: str  # commit ids
    head: str


def detect(repo: Path, base: str, head: str, config: Config, resolved: Resolved | None = None) -> DetectResult:
    """Changes between two revisions. The garbage collector is paused meanwhile: a 50,000-file
    diff allocates a few objects per file and no cycles, and its full collections, which scan
    every live object, would make the cost grow faster than the diff."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _detect(repo, resolved or Resolved(toplevel(repo), resolve(repo, base), resolve(repo, head)), config)
    finally:
        if collecting:
            gc.enable()


def _detect(repo: Path, resolved: Resolved, config: Config) -> DetectResult:
    top, base_sha, head_sha = resolved.top, resolved.base, resolved.head
    files = changed_files(repo, base_sha, head_sha)
    result = DetectResult(base_sha, head_sha, len(files))
    prefix = _prefix(config, top)
    rooted = _rooted(config, prefix)
    ignore = rooted.watch.get("ignore", ())
    kept = [f for f in files if not _matches_any(f.path, ignore)] if ignore else files
    candidates = [f for f in kept if _watched(f, rooted)]
    blobs = read_blobs(repo, sorted({b for f in candidates for b in (f.old_blob, f.new_blob) if b}))
    ctx = DetectContext(set(rooted.ignore_dependency_groups), rooted.reference)
    for f in candidates:
        versions = Versions(f.path, blobs.get(f.old_blob) if f.old_blob else None, blobs.get(f.new_blob) if f.new_blob else None)
        first = len(result.changes)
        result.add(_judge(versions, rooted, ctx))
        placer = Placer(versions)
        for change in result.changes[first:]:  # only the listed ones are placed, unless their detector knew the line
            if not change.line:
                change.line = placer.line(change)
    _pinned_changes(repo, base_sha, config, prefix, files, result)  # every file, ignored or not: a record's pins outrank watch.ignore
    return result


def _prefix(config: Config, top: Path) -> str:
    """The folder of .reprogate.yaml relative to the repository top ("." at the top)."""
    try:
        return config.folder.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return "."


def _record_pins(repo: Path, base: str, config: Config, prefix: str) -> dict[str, list[tuple[str, Pin]]]:
    """Pinned path -> (record, pin) for every record the base names, its in-repository shards
    included; read from the base so a pull request cannot disown what it changes."""
    paths = record_paths(config, prefix, files_at(repo, base))
    if not paths:
        return {}
    blobs = read_blobs(repo, [f"{base}:{p}" for p in paths])
    pins: list[tuple[str, Pin]] = []
    manifests: list[tuple[str, Pin]] = []
    for path in paths:
        for pin in pins_of(parse_record(path, blobs.get(f"{base}:{path}")).data, prefix):
            if pin.path != path:
                pins.append((path, pin))
                if pin.field == "dataset.manifest.path":
                    manifests.append((path, pin))
    if manifests:
        found = read_blobs(repo, [f"{base}:{pin.path}" for _, pin in manifests])
        for record, pin in manifests:
            blob = found.get(f"{base}:{pin.path}")
            try:
                data = load_text(blob.decode("utf-8"), pin.path, "json" if pin.path.endswith(".json") else "yaml").data if blob else None
            except (DocumentError, UnicodeDecodeError):
                data = None  # an unreadable or streamed manifest: dataset-manifest-matches says why
            pins += [(record, shard) for shard in shard_pins(pin, data)]
    index: dict[str, list[tuple[str, Pin]]] = {}
    for record, pin in pins:
        index.setdefault(pin.path.rstrip("/"), []).append((record, pin))
    return index


def _pinned_changes(repo: Path, base: str, config: Config, prefix: str, files: list[FileChange], result: DetectResult) -> None:
    """Each changed file a record pins, as the layer its pin belongs to, naming the record: the
    detectors' own changes of that file are marked with it, and a file no detector reads (code in
    the project folder, a shard, a lock file under a name no pattern knows) becomes a change."""
    index = _record_pins(repo, base, config, prefix)
    if not index:
        return
    by_path: dict[str, list[Change]] = {}
    for change in result.changes:
        by_path.setdefault(change.path, []).append(change)
    for f in files:
        for path in dict.fromkeys(p for p in (f.path, f.old_path) if p):
            reached = _reached(index, path)
            if not reached:
                continue
            known = by_path.get(path, [])
            for change in known:
                change.record = change.record or ", ".join(reached)
            if not known:
                verb = {"A": "added", "D": "removed", "R": "renamed", "C": "copied"}.get(f.status, "changed")
                for record, pin in reached.items():
                    kind = "reference" if pin.layer == "records" else "pinned"  # a reference artifact: the record no longer describes its run
                    result.add([Change(pin.layer, path, kind, detail=f"{verb}; {record} pins it ({pin.field})", record=record)])


def _reached(index: dict[str, list[tuple[str, Pin]]], path: str) -> dict[str, Pin]:
    """Record -> its most specific pin holding `path` (the file itself, else the nearest folder):
    one lookup per folder level, not one comparison per pin."""
    reached: dict[str, Pin] = {}
    candidate = path
    while candidate:
        for record, pin in index.get(candidate, []):
            reached.setdefault(record, pin)
        candidate = candidate.rpartition("/")[0]
    return reached


def _rooted(config: Config, prefix: str) -> Config:
    """The configuration with its globs and reference made relative to the repository top (a
    .reprogate.yaml in a subfolder writes them relative to itself)."""

    if prefix == ".":
        return config

    def root(glob: str) -> str:
        return glob if "/" not in glob else f"{prefix}/{glob.lstrip('/')}"

    watch = MappingProxyType({layer: tuple(root(g) for g in globs) for layer, globs in config.watch.items()})
    reference = f"{prefix}/{config.reference}" if config.reference else None
    return dataclasses.replace(config, watch=watch, records=tuple(root(g) for g in config.records), reference=reference)


# A superset of the names any detector watches (every detector's `matches` implies this; a test
# holds them together): most files of a large diff are rejected by one expression, before any
# detector is asked.
_MAYBE_WATCHED = re.compile(r"(?i)(?:.*\.(?:ya?ml|json|dvc|lock|txt|in|toml|model|spm)$|.*(?:dockerfile|containerfile))")


def _watched(f: FileChange, config: Config) -> bool:
    if _MAYBE_WATCHED.match(f.path.rsplit("/", 1)[-1]):
        v = Versions(f.path, None, None)
        if any(module.matches(v) for module in detectors()):
            return True
    return any(_matches_any(f.path, globs) for layer, globs in config.watch.items() if layer != "ignore")


# Words without which a YAML/JSON file holds nothing a detector reads (no image, container,
# runner, record or manifest): such files, most YAML in a large diff, are not parsed at all.
_YAML_WORDS = (b"image", b"container", b"docker://", b"runs-on", b"reprogate")


def _judge(v: Versions, config: Config, ctx: DetectContext) -> Iterator[Change]:
    """The detectors' changes of one file as they come, then a `changed` for each watch glob
    layer none of them reported."""
    reported: set[str] = set()
    plain_yaml = v.name.endswith((".yaml", ".yml", ".json")) and not is_side_file(v.name) and not v.mentions(*_YAML_WORDS)
    for module in detectors():
        if module.matches(v) and not (plain_yaml and module.__name__ != "reprogate.detect.framework"):
            for change in module.diff(v, ctx):
                reported.add(change.layer)
                yield change
    for layer, globs in config.watch.items():
        if layer == "ignore" or not _matches_any(v.path, globs):
            continue
        if layer not in reported and v.old != v.new:
            yield Change(layer, v.path, "changed", detail="watched by .reprogate.yaml")


def detect_files(listing: Path, config: Config) -> DetectResult:
    """From a pull request's file list (GitHub's pulls/{n}/files JSON), without a clone: paths
    only, so every watched file counts as changed, and detail needs contents."""

    try:  # bounded, UTF-8, never waits on a FIFO; big integers and lone surrogates refused
        entries = parse_json(read_text(listing, str(listing)), str(listing))
    except DocumentError as exc:
        raise DetectError(f"cannot read {listing}: {exc.diagnostics[0].message if exc.diagnostics else exc.message}") from None
    if not isinstance(entries, list):
        raise DetectError(f"{listing}: expected a JSON list of files (GitHub's pulls/{{n}}/files)")
    result = DetectResult("(pull request)", "(pull request)", len(entries))
    result.notes.append("file list only: contents were not read, so watched files count as changed; run in a clone for per-package detail")

    for entry in entries:
        path = str(entry.get("filename", "")) if isinstance(entry, dict) else ""
        if not path or _matches_any(path, config.watch.get("ignore", [])):
            continue
        name = path.rsplit("/", 1)[-1]
        status = str(entry.get("status", "modified"))
        layer = None
        if format_for(path) or name == "pyproject.toml":
            layer = "framework"
        elif is_dockerfile(name) or fnmatch.fnmatch(name, "*compose*.y*ml"):
            layer = "base-image"
        elif name.endswith(".dvc") or name == "dvc.lock" or "manifest" in name or any(fnmatch.fnmatch(name, p) for p in SIDE_FILES):
            layer = "dataset"
        elif config.records and _matches_any(path, config.records):
            layer = "records"
        for extra_layer, globs in config.watch.items():
            if extra_layer != "ignore" and _matches_any(path, globs):
                layer = extra_layer
        if layer:
            result.add([Change(layer, path, status, detail="by path; contents not read")])
    return result
