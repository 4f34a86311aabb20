"""The verdict's `environment` section as a typed value: what was asked for and realized, whose
code ran, the machine the ranks got, and the reference and rebuilt environments side by side.

The runner assembles it from several stages (rebuild/runner.py `_environment`) and a realizer adds
its own facts (an image id, a lock digest, the engine), so the schema
(schemas/verdict.schema.json, `environment`) declares every fact a reader uses with its type and
leaves the others open. Readers (the report, `attest`) take the facts from here: `code` and
`compared` as values, the rest by name through `text`, `strings` and `count`, which give a value
only when it has the type the schema declares for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reprogate.core.frozen import freeze, thaw


@dataclass(frozen=True)
class CodeSaid:
    """Whose project tree ran (rebuild/code_origin.py, `CodeOrigin.to_json`)."""

    ran: str  # base, pull-request or record
    detail: str
    environment_changed: bool = False


@dataclass(frozen=True)
class ComparedRow:
    """One row of the side-by-side table (rebuild/environments.py `side_by_side`)."""

    what: str
    reference: Any
    rebuilt: Any
    same: bool
    from_trace: bool = False  # the reference value was read from the reference trace's meta


@dataclass(frozen=True)
class VerdictEnvironment:
    """The section as written, frozen and in its order (what `to_json` gives back)."""

    entries: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", freeze(self.entries))

    @staticmethod
    def from_json(data: Mapping[str, Any] | None) -> VerdictEnvironment:
        """The section of a verdict file (None: a verdict that has none, read as empty)."""
        return VerdictEnvironment(data or {})

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = thaw(self.entries)
        return found

    def text(self, key: str) -> str | None:
        """The fact `key` when it is a string, else None."""
        found = self.entries.get(key)
        return found if isinstance(found, str) else None

    def strings(self, key: str) -> tuple[str, ...] | None:
        """The fact `key` when it is a list: its strings; None when it is no list."""
        found = self.entries.get(key)
        return tuple(v for v in found if isinstance(v, str)) if isinstance(found, tuple) else None

    def count(self, key: str) -> int | None:
        """The fact `key` when it is a whole number of at least 1 (nodes, world_size), else None."""
        found = self.entries.get(key)
        return found if isinstance(found, int) and not isinstance(found, bool) and found >= 1 else None

    @property
    def requested(self) -> str:
        """reference or candidate: which environment the rebuild was asked to realize (reference
        where the verdict does not say)."""
        found = self.entries.get("requested")
        return found if found in ("reference", "candidate") else "reference"

    @property
    def code(self) -> CodeSaid | None:
        """Whose code ran, where the verdict says (a verdict older than code_origin does not)."""
        found = self.entries.get("code")
        if not isinstance(found, Mapping) or not isinstance(found.get("ran"), str):
            return None
        return CodeSaid(found["ran"], str(found.get("detail", "")), found.get("environment_changed") is True)

    @property
    def compared(self) -> tuple[ComparedRow, ...]:
        """The side-by-side rows (none where the verdict has none)."""
        rows = self.entries.get("compared")
        if not isinstance(rows, tuple):
            return ()
        return tuple(
            ComparedRow(str(row.get("what")), row.get("reference"), row.get("rebuilt"), bool(row.get("same")), row.get("reference_from") == "reference trace")
            for row in rows
            if isinstance(row, Mapping)
        )


__all__ = ["CodeSaid", "ComparedRow", "VerdictEnvironment"]
