"""Fuzz harness: a reference trace's meta events, through `validate`'s rule
reference-trace-meta-agrees and the rebuild's envelope comparison (`reference_disagreements`),
against the tiny example's record.

The input is the trace file's text (JSON Lines). Expected: a TraceError from reading the meta
(the line and field named); otherwise a list of disagreements, never an exception. Seeds: the
example traces' meta lines, and each with its ranks given as "1" and 0.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, fuzz, instrumented, text

with instrumented():
    from reprogate.core.record import read_record
    from reprogate.rules.trace_meta import reference_disagreements
    from reprogate.runtime.trace import TraceError, leading_meta_events

FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-trace-meta-"))
TRACE = FOLDER / "trace.jsonl"
RECORD = read_record(yaml.safe_load((EXAMPLES / "tiny" / "records" / "tiny.yaml").read_text()))


def seeds() -> list[tuple[str, bytes]]:
    out = []
    for path in sorted((EXAMPLES / "tiny" / "reference").glob("*.jsonl")):
        metas = [line for line in path.read_text().splitlines()[:4] if '"type": "meta"' in line]
        out.append((path.name, ("\n".join(metas) + "\n").encode()))
        mixed = [json.dumps({**json.loads(line), "rank": rank}) for line, rank in zip(metas, ["1", 0], strict=False)]  # the first two ranks
        out.append((f"mixed-{path.name}", ("\n".join(mixed) + "\n").encode()))
    return out


def one(data: bytes) -> None:
    if text(data) is None:
        return
    TRACE.write_bytes(data)
    try:
        events = leading_meta_events(TRACE)
    except TraceError:
        return
    reference_disagreements(RECORD, events)


if __name__ == "__main__":
    fuzz(one, seeds())
