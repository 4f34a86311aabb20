"""Run every detector over a diff and decide whether the reference must be rebuilt."""

from __future__ import annotations

import fnmatch
import gc
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.config import Config
from reprogate.detect import detectors
from reprogate.detect.base import LAYERS, REBUILD_LAYERS, Change, DetectContext
from reprogate.detect.dataset import is_side_file
from reprogate.detect.git import (
    DetectError,
    FileChange,
    changed_files,
    read_blobs,
    resolve,
    toplevel,
)
from reprogate.detect.versions import Versions
from reprogate.validate.discovery import glob_to_regex


@dataclass
class DetectResult:
    base: str
    head: str
    files: int = 0
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def layers(self) -> list[str]:
        present = {c.layer for c in self.changes}
        return [layer for layer in LAYERS if layer in present]

    @property
    def rebuild_required(self) -> bool:
        return any(c.layer in REBUILD_LAYERS for c in self.changes) or any(c.kind == "reference" for c in self.changes)

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
            "notes": self.notes,
        }


def _matches_any(path: str, globs: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(glob_to_regex(g).match(path) or ("/" not in g and fnmatch.fnmatch(name, g)) for g in globs)


def detect(repo: Path, base: str, head: str, config: Config) -> DetectResult:
    """Changes between two revisions. The garbage collector is paused meanwhile: a 50,000-file
    diff allocates a few objects per file and no cycles, and its full collections, which scan
    every live object, would make the cost grow faster than the diff."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _detect(repo, base, head, config)
    finally:
        if collecting:
            gc.enable()


def _detect(repo: Path, base: str, head: str, config: Config) -> DetectResult:
    base_sha, head_sha = resolve(repo, base), resolve(repo, head)
    files = changed_files(repo, base_sha, head_sha)
    result = DetectResult(base_sha, head_sha, len(files))
    config = _rooted(config, toplevel(repo))
    ignore = config.watch.get("ignore", [])
    if ignore:
        files = [f for f in files if not _matches_any(f.path, ignore)]
    candidates = [f for f in files if _watched(f, config)]
    blobs = read_blobs(repo, sorted({b for f in candidates for b in (f.old_blob, f.new_blob) if b}))
    ctx = DetectContext(set(config.ignore_dependency_groups), config.reference)
    for f in candidates:
        versions = Versions(f.path, blobs.get(f.old_blob) if f.old_blob else None, blobs.get(f.new_blob) if f.new_blob else None)
        result.changes.extend(_judge(versions, config, ctx))
    return result


def _rooted(config: Config, top: Path) -> Config:
    """The configuration with its globs and reference made relative to the repository top (a
    .reprogate.yaml in a subfolder writes them relative to itself)."""
    import dataclasses

    try:
        prefix = config.folder.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        prefix = "."
    if prefix == ".":
        return config

    def root(glob: str) -> str:
        return glob if "/" not in glob else f"{prefix}/{glob.lstrip('/')}"

    watch = {layer: [root(g) for g in globs] for layer, globs in config.watch.items()}
    reference = f"{prefix}/{config.reference}" if config.reference else None
    return dataclasses.replace(config, watch=watch, records=[root(g) for g in config.records], reference=reference)


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


def _judge(v: Versions, config: Config, ctx: DetectContext) -> list[Change]:
    changes: list[Change] = []
    plain_yaml = v.name.endswith((".yaml", ".yml", ".json")) and not is_side_file(v.name) and not v.mentions(*_YAML_WORDS)
    for module in detectors():
        if module.matches(v) and not (plain_yaml and module.__name__ != "reprogate.detect.framework"):
            changes.extend(module.diff(v, ctx))
    for layer, globs in config.watch.items():
        if layer == "ignore" or not _matches_any(v.path, globs):
            continue
        if not any(c.layer == layer for c in changes) and v.old != v.new:
            changes.append(Change(layer, v.path, "changed", detail="watched by .reprogate.yaml"))
    return changes


def detect_files(listing: Path, config: Config) -> DetectResult:
    """From a pull request's file list (GitHub's pulls/{n}/files JSON), without a clone: paths
    only, so every watched file counts as changed, and detail needs contents."""
    try:
        entries = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DetectError(f"cannot read {listing}: {exc}") from None
    if not isinstance(entries, list):
        raise DetectError(f"{listing}: expected a JSON list of files (GitHub's pulls/{{n}}/files)")
    result = DetectResult("(pull request)", "(pull request)", len(entries))
    result.notes.append("file list only: contents were not read, so watched files count as changed; run in a clone for per-package detail")
    from reprogate.detect.dataset import SIDE_FILES
    from reprogate.detect.framework import is_dockerfile
    from reprogate.lockfiles import format_for

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
            result.changes.append(Change(layer, path, status, detail="by path; contents not read"))
    return result
