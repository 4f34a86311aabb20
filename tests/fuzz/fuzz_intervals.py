"""Fuzz harness: a record's interval inputs, through `reprogate interval` and (one input in 16)
`interval --plan` (the shape check at the boundary, the seed statistics, the splice that writes the interval into
the YAML and the check that it reads back), as the command reads a record file.

Half the inputs are the example records mutated structurally (`harness.structured`: a member
deleted or given a value of another kind, so the statistics behind the shape check are reached),
the rest the bytes as they are. Expected: a ReprogateError (exit 1 or 2, the record unchanged);
a stored interval that the record no longer reads back as is a finding. Seeds: the example records.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, files, fuzz, instrumented, structured, write_input

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.rebuild.command import plan_command
    from reprogate.rebuild.interval import store

FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-intervals-"))
TARGET = FOLDER / "record.yaml"
RECORDS = [yaml.safe_load(p.read_text()) for p in files("**/records/*.yaml", under=EXAMPLES)]


def seeds() -> list[tuple[str, bytes]]:
    raw = [(p.name, b"\x00" + p.read_bytes()) for p in files("**/records/*.yaml", under=EXAMPLES)]
    return raw + [(f"structured-{i}", bytes([1, i]) + b"\x00" * 16) for i in range(len(RECORDS))]


def one(data: bytes) -> None:
    if not data:
        return
    document = structured(data, RECORDS)
    if not write_input(TARGET, document, data):
        return
    # the planner prices many (n, m) pairs (a quarter of a second a record): one input in 16
    # takes it, past the same boundary check as the interval
    actions = (lambda: store(TARGET),) if data[-1] % 16 != 7 else (lambda: plan_command(TARGET), lambda: store(TARGET))
    for action in actions:
        try:
            action()
        except ReprogateError:
            pass


if __name__ == "__main__":
    fuzz(one, seeds())
