"""What every semantic rule shares: the Rule protocol, its context, and safe data access.

Rules must tolerate data the schema has already rejected (they run on every document so a person
sees all problems at once); the validate runner discards a crash only when the schema already
reported the document invalid. A run record's rules read `ctx.record`, the typed sections
(`core.record`), in which a section the schema rejected is None; `get` is for the kinds not yet
typed (the dataset manifest, `.reprogate.yaml`) and for whole-document walks.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from reprogate.core.diagnostics import Diagnostic, Severity, field_path
from reprogate.core.documents import Document
from reprogate.core.record import NO_RECORD, RunRecord


class Rule(Protocol):
    """A check a schema cannot express: reads the context, yields findings."""

    def __call__(self, ctx: RuleContext) -> Iterable[Diagnostic]: ...


@dataclass(frozen=True)
class RuleSpec:
    """A rule with the document kinds it applies to. `reads_files` marks rules that compare
    repository files with what the record pins: `rebuild` leaves those to its own stages, which
    diagnose them in order."""

    check: Rule
    kinds: tuple[str, ...]
    reads_files: bool = False


@dataclass
class RuleContext:
    """What a rule may look at: the document, the repository root its paths are relative to,
    today's date (for expiry), and a shared cache so one file addressed by many records is read
    and hashed once per run."""

    doc: Document
    kind: str
    root: Path
    today: datetime.date
    max_bytes: int
    cache: dict[Any, Any] = field(default_factory=dict)
    source: Path | None = None  # the document's own file, where it was read from one
    changed: frozenset[Path] | None = None  # files a pull request's diff changed (resolved); None: not known
    record: RunRecord = NO_RECORD  # a run record's typed sections (core.record.read_record); every section None for other kinds

    @property
    def data(self) -> Any:
        return self.doc.data

    def finding(self, path: tuple[Any, ...], message: str, code: str, hint: str = "", severity: Severity = Severity.ERROR) -> Diagnostic:
        return Diagnostic(self.doc.path, message, code, severity, self.doc.locate(path), field_path(path), hint)


def get(data: Any, *path: Any) -> Any:
    """Follow `path` through dicts and lists; None where any step is missing or of another type."""
    for part in path:
        if isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def items(data: Any) -> list[tuple[int, Any]]:
    """Enumerate a list that may be missing or malformed."""
    return list(enumerate(data)) if isinstance(data, list) else []
