"""Which reference records a pull request's diff reaches, judged from the records as the base
revision has them.

A record's inputs are every repository path it names (lock files, build recipe, project folder,
configuration, dataset manifest, reference trace, working folder) and the record itself. Reading
them at the base keeps a pull request from editing a record to disown the files it changes.
Editing only a record's `baseline` section (a promotion) does not count: the verdict's digest
leaves it out, so the earlier rebuild still stands for the promoted record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.core.config import Config
from reprogate.core.documents import DocumentError, load_text
from reprogate.validate.discovery import glob_to_regex


@dataclass(frozen=True)
class RecordAtRevision:
    path: str  # relative to the repository top
    data: dict[str, Any] | None  # None where the file is missing or unreadable at that revision


def prefixed(prefix: str, rel: str) -> str:
    """A config-relative path as a repository-top path (records and their inputs are written
    relative to the folder that holds .reprogate.yaml)."""
    joined = PurePosixPath(prefix, rel) if prefix not in ("", ".") else PurePosixPath(rel)
    parts: list[str] = []
    for part in joined.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def record_paths(config: Config, prefix: str, files: list[str]) -> list[str]:
    """Records the configuration names: its `records:` globs matched against the files of a
    revision, plus its `reference`, as repository-top paths."""
    found: list[str] = []
    patterns = [glob_to_regex(prefixed(prefix, g)) for g in config.records]
    for path in files:
        if path.endswith((".yaml", ".yml", ".json")) and any(p.match(path) for p in patterns):
            found.append(path)
    if config.reference:
        reference = prefixed(prefix, config.reference)
        if reference not in found:
            found.insert(0, reference)
    return found


def parse_record(path: str, blob: bytes | None) -> RecordAtRevision:
    if blob is None:
        return RecordAtRevision(path, None)
    try:
        data = load_text(blob.decode("utf-8"), path, "json" if path.endswith(".json") else "yaml").data
    except (DocumentError, UnicodeDecodeError):
        return RecordAtRevision(path, None)
    if not isinstance(data, dict) or data.get("kind") != "RunRecord":
        return RecordAtRevision(path, None)
    return RecordAtRevision(path, data)


def _named_paths(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("path", "workdir") and isinstance(value, str):
                yield value
            else:
                yield from _named_paths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _named_paths(value)


def inputs_of(record: RecordAtRevision, prefix: str) -> set[str]:
    """Repository-top paths (files or folders) the record's run depends on."""
    if record.data is None:
        return {record.path}
    return {record.path, *(prefixed(prefix, p) for p in _named_paths(record.data) if p and "\0" not in p)}


def reaches(inputs: set[str], changed: str) -> bool:
    return any(changed == item or changed.startswith(item.rstrip("/") + "/") for item in inputs if item)


def rebuild_digest(data: dict[str, Any] | None) -> str | None:
    """The digest a verdict binds to: the record without its baseline section."""
    if data is None:
        return None
    try:
        return canonical_digest({k: v for k, v in data.items() if k != "baseline"})
    except CanonicalError:
        return None


def touched_records(base_records: list[RecordAtRevision], head_records: dict[str, RecordAtRevision], changed: list[str], prefix: str) -> dict[str, str]:
    """Records (as the base has them) whose inputs the diff changes, each with what it pins that
    changed. A record whose own file changed counts only when its content beyond `baseline`
    changed (a new lock path, a new checksum, a new contract: the record now pins something else)."""
    out: dict[str, str] = {}
    for record in base_records:
        inputs = inputs_of(record, prefix) - {record.path}
        hit = next((path for path in changed if path != record.path and reaches(inputs, path)), None)
        if hit is not None:
            out[record.path] = f"{record.path} pins {hit}, which changed"
        elif record.path in changed:
            head = head_records.get(record.path)
            if head is not None and head.data is not None and rebuild_digest(head.data) != rebuild_digest(record.data):
                out[record.path] = f"{record.path} itself changed (more than its baseline)"  # a removed or unreadable record: validate says why
    return out


__all__ = ["RecordAtRevision", "inputs_of", "parse_record", "prefixed", "rebuild_digest", "record_paths", "touched_records"]
