"""Semantic rules: what a record must satisfy that JSON Schema cannot say.

Each rule is a small function registered for one document kind; adding a rule is one function
with the `@rule` decorator in one of the modules below, nothing else. Rules receive a RuleContext
and yield findings. They must tolerate data the schema has already rejected (they run on every
document so a person sees all problems at once); validation.py discards a crash only when the
schema already reported the document invalid.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from reprogate.core.diagnostics import Diagnostic, Severity, field_path
from reprogate.core.documents import Document

RuleFn = Callable[["RuleContext"], Iterable[Diagnostic]]
RULES: dict[str, list[RuleFn]] = {}
READS_FILES: set[RuleFn] = set()  # rules that compare addressed files with the record


def rule(kind: str, reads_files: bool = False) -> Callable[[RuleFn], RuleFn]:
    """Register a rule. `reads_files` marks rules that compare repository files with what the
    record pins: `rebuild` leaves those to its own stages, which diagnose them in order."""

    def register(fn: RuleFn) -> RuleFn:
        RULES.setdefault(kind, []).append(fn)
        if reads_files:
            READS_FILES.add(fn)
        return fn

    return register


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


def rules_for(kind: str, addressed_files: bool = True) -> list[RuleFn]:
    # Importing the modules registers their rules; done here so the registry fills on first use.
    from reprogate.rules import addressed, compat, config, contract, envelope, manifest, ranks, retention, secrets, trace_meta  # noqa: F401

    return [fn for fn in RULES.get(kind, []) if addressed_files or fn not in READS_FILES]
