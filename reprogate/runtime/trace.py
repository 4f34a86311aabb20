"""Trace files: their format, and reading them back for comparison.

A trace is JSON Lines, one object per event, written per rank by the Tracer (runtime.tracer):

  {"type": "meta", "rank": 0, "world_size": 2, "seed": 7, "digest": "sha256", "cpu": {...}, ...}
  {"type": "step", "rank": 0, "step": 1, "batch": "sha256:...", "loss": 2.31, "lr": 0.01,
   "metrics": {...}, "tensors": {"fc.weight": "sha256:..."}, "model_state": "sha256:..."}
  {"type": "metric", "rank": 0, "name": "val_loss", "value": 1.87, "step": 40}

The meta event states what the run really used, read inside the training process when the first
event is written (after the script has seeded and configured torch): the seed `seed_everything`
applied, the world size, the configuration and dataset-manifest digests the script passed, torch's
CPU capability, MKL's reproducibility mode, thread counts and the determinism switches. `validate`
and `rebuild` hold a record to its reference trace's meta, and `capture` takes the training
process's determinism switches from it. Standard library only: the rebuild reads traces here and
ranks may too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def read_trace(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Events of one or more trace files, sorted by (type, step, rank) for comparison."""
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts.append(fh.read())
    return trace_events(texts)


class TraceError(ValueError):
    """A trace line that is not an event of this format; the message names the line and field."""


NUMBERS = ("loss", "lr")  # step fields the comparisons read as numbers


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_event(event: object, where: str) -> dict[str, Any]:
    """`event` if it has the shape every reader of a trace relies on (an object; integer step and
    rank, a step event's step present; numeric loss and lr; a metric's string name and numeric
    value), else TraceError naming `where` and the field. Traces come from training code, so
    nothing later may assume more."""
    if not isinstance(event, dict):
        raise TraceError(f"{where}: a trace line is a JSON object, not a {type(event).__name__}")
    for name in ("step", "rank"):
        if name in event and not _integer(event[name]):
            raise TraceError(f"{where}: {name} is an integer, not {json.dumps(event[name])[:40]}")
    kind = event.get("type")
    if kind == "step":
        if "step" not in event:
            raise TraceError(f"{where}: a step event has no step")
        for name in NUMBERS:
            if name in event and not _number(event[name]):
                raise TraceError(f"{where}: {name} is a number, not {json.dumps(event[name])[:40]}")
    elif kind == "metric":
        if not isinstance(event.get("name"), str):
            raise TraceError(f"{where}: a metric event's name is a string")
        if not _number(event.get("value")):
            raise TraceError(f"{where}: metric {event['name'][:60]!r}: value is a number, not {json.dumps(event.get('value'))[:40]}")
    return event


def order(event: Mapping[str, Any]) -> tuple[str, int, int, str]:
    """The one sort key of trace events: (type, step, rank, name), on events check_event passed."""
    return str(event.get("type", "")), event.get("step", -1), event.get("rank", 0), str(event.get("name", ""))


def trace_events(texts: Iterable[str]) -> list[dict[str, Any]]:
    """The events of trace texts (JSON Lines), sorted by (type, step, rank) for comparison. A
    line that is not JSON, or not an event of this format (check_event), is a TraceError (a
    ValueError) naming it."""
    events = []
    for text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except RecursionError:
                raise TraceError(f"line {number}: JSON nested too deeply") from None
            except ValueError as exc:
                raise TraceError(f"line {number}: not JSON ({exc})") from None
            events.append(check_event(event, f"line {number}"))
    return sorted(events, key=order)


def meta_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The meta events of a trace, rank by rank."""
    return sorted((e for e in events if e.get("type") == "meta"), key=lambda e: e.get("rank", 0) if _integer(e.get("rank", 0)) else 0)


def leading_meta_events(path: Path) -> list[dict[str, Any]]:
    """The meta events at the head of a trace file (a Tracer writes meta first; a combined
    reference trace sorts meta events first), without reading the steps that follow. Each meta
    passes check_event (an integer rank: the readers sort and name ranks by it), else TraceError
    naming the line and the field."""
    metas: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                break
            if not isinstance(event, dict) or event.get("type") != "meta":
                break
            metas.append(check_event(event, f"line {number}"))
    return metas
