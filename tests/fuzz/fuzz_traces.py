"""Fuzz harness: traces (JSON Lines written by training code), through the reader and every
comparison the rebuild and `reprogate compare` make of them, against the tiny example's
reference trace.

Expected: TraceError (a ValueError naming the line or the step and field) from the reader and
the comparisons; and from `compare_command`, the command itself, a UsageError. Seeds: the
example traces.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from harness import EXAMPLES, fuzz, instrumented, text

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.rebuild import compare
    from reprogate.rebuild.command import compare_command
    from reprogate.rebuild.step_figures import Tolerance
    from reprogate.runtime.trace import TraceError, meta_events, trace_events

FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-traces-"))
REFERENCE_PATH = FOLDER / "reference.jsonl"  # the example's first 24 lines: meta, metrics, steps (read once per input)
REFERENCE_PATH.write_text("".join((EXAMPLES / "tiny" / "reference" / "trace.jsonl").read_text().splitlines(keepends=True)[:24]))
REFERENCE = trace_events([REFERENCE_PATH.read_text()])


def seeds() -> list[tuple[str, bytes]]:
    """The head of each example trace (meta and the first steps) and its last lines (metrics)."""
    out = []
    for path in sorted((EXAMPLES / "tiny" / "reference").glob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        out += [(f"head-{path.name}", b"".join(lines[:6])), (f"tail-{path.name}", b"".join(lines[-4:]))]
    return [*out, ("metric", b'{"type": "metric", "rank": 0, "name": "val_loss", "value": 1.87, "step": 40}\n')]


def one(data: bytes) -> None:
    body = text(data)
    if body is None:
        return
    try:
        events = trace_events([body])
    except TraceError:
        events = None
    if events is not None:
        meta_events(events)
        compare.metrics(events)
        compare.loss_curve(events)
        reference, rebuilt = compare.step_events(REFERENCE, 1, None), compare.step_events(events, 1, None)
        compare.compare_batches(reference, rebuilt)
        compare.compare_tensors(reference, rebuilt, ["model_state"])
        compare.first_loss_difference(compare.loss_figures(reference, rebuilt, "exact", Tolerance(0.0, 0.0)))
        for pair in ((reference, rebuilt), (rebuilt, reference)):
            try:
                compare.compare_values(*pair, ["loss", "lr", "batch"], 1e-6, 1e-6)
            except TraceError:
                pass
    path = FOLDER / "rebuilt.jsonl"
    path.write_bytes(data)
    try:
        compare_command(REFERENCE_PATH, [path], (0.0, 0.0), ["model_state"], 1, None)
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds())
