"""The contract levels, a closed set: what a record promises a rebuild reproduces.

startup: the job starts and runs its first steps; statistical: the metric over seeds stays within
the declared interval; behavioral: the trace's quantities step by step within tolerances;
bitwise: the trace's digests step by step, equal. The schema's enum and the command line's choice
are this tuple (tests/test_registries.py holds them to it), and code past the record's boundary
takes a `Level`, never a free string.
"""

from __future__ import annotations

from typing import Literal, get_args

Level = Literal["bitwise", "behavioral", "statistical", "startup"]
LEVELS: tuple[Level, ...] = get_args(Level)
TRACE_LEVELS: tuple[Level, ...] = ("bitwise", "behavioral")  # compared step by step: the first rebuild run replays the reference's seed


def level_of(value: object) -> Level | None:
    """`value` as a Level when it is one (a schema-checked record's contract.level always is)."""
    for level in LEVELS:
        if value == level:
            return level
    return None


__all__ = ["LEVELS", "TRACE_LEVELS", "Level", "level_of"]
