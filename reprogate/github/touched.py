"""Which reference records a pull request's diff reaches, judged from the records as the base
revision has them.

A record's inputs are every repository path it names (lock files, build recipe, project folder,
configuration, dataset manifest, reference trace, working folder) and the record itself. Reading
them at the base keeps a pull request from editing a record to disown the files it changes.
Editing only a record's `baseline` section (a promotion) does not count: the verdict's digest
leaves it out, so the earlier rebuild still stands for the promoted record.
"""

from __future__ import annotations

from typing import Any

from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.detect.pinned import RecordAtRevision, parse_record, pins_of, prefixed, record_paths


def inputs_of(record: RecordAtRevision, prefix: str) -> set[str]:
    """Repository-top paths (files or folders) the record's run depends on."""
    return {record.path, *(pin.path for pin in pins_of(record.data, prefix))}


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
