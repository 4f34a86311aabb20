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


def trace_events(texts: Iterable[str]) -> list[dict[str, Any]]:
    """The events of trace texts (JSON Lines), sorted by (type, step, rank) for comparison. A
    line that is not a JSON object, or a step that is not an integer, is a ValueError naming it."""
    events = []
    for text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            event = json.loads(line)
            if not isinstance(event, dict):
                raise ValueError(f"line {number} is a JSON {type(event).__name__}, not an event object")
            if not isinstance(event.get("step", -1), int) or not isinstance(event.get("rank", 0), int):
                raise ValueError(f"line {number}: step and rank are integers")
            events.append(event)
    return sorted(events, key=lambda e: (str(e.get("type", "")), e.get("step", -1), e.get("rank", 0), str(e.get("name", ""))))


def meta_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The meta events of a trace, rank by rank."""
    return sorted((e for e in events if e.get("type") == "meta"), key=lambda e: e.get("rank", 0))


def leading_meta_events(path: Path) -> list[dict[str, Any]]:
    """The meta events at the head of a trace file (a Tracer writes meta first; a combined
    reference trace sorts meta events first), without reading the steps that follow."""
    metas: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                break
            if not isinstance(event, dict) or event.get("type") != "meta":
                break
            metas.append(event)
    return metas
