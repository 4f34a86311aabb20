"""`reprogate interval RECORD`: compute the metric's interval and store it in the record.

The interval is fixed before any drill, from the reference seeds alone, so the verdict cannot be
tuned after seeing a rebuild. It is written into contract.metric.interval by splicing the YAML
text (comments and the rest of the record stay as written).

What it computes from is read once, at the boundary (`read_inputs`): the shapes the statistics
need checked with file, line and field (`refuse_shape`), then the typed record
(`core.record.read_record`); `compute` and the planner read its fields, never the mapping.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.capture.merge import FlowStyle, splice_path
from reprogate.core.diagnostics import Diagnostic, field_path
from reprogate.core.documents import Document, load_document, load_text
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.record import KIND, RunRecord, read_record
from reprogate.core.schema_check import schema_diagnostics
from reprogate.core.seedstats import MAX_MAGNITUDE, failing_side, metric_test, shape
from reprogate.core.timestamps import utc_now
from reprogate.rebuild.stats import prediction_interval

COMPUTED_BY = {
    "difference": "t prediction interval for one rebuild seed; the two-sample t on the means for more",
    "seeds": "t prediction interval for one rebuild seed, its variance widened by r²/24; test: seeds for more",
    "robust": "t prediction interval for one rebuild seed, holding the reference seeds' central band; test: robust for more",
}
ONE_SIDED = "; one-sided (fail_on: worse): only the {bound} bound is applied"


class IntervalError(CheckFailed):
    """The record lacks what the interval is computed from (exit 1; the record is left unchanged)."""


@dataclass(frozen=True)
class ShapeError:
    """Where a record's interval inputs are of the wrong shape: the field's path and what is wrong."""

    path: tuple[str | int, ...]
    message: str


def shape_errors(data: object) -> list[ShapeError]:
    """What the interval reads, checked before it is read: `contract` and `reference` and their
    `metric` mappings, `reference.metric.values` a list of {seed, value}, the resolution a number,
    each within MAX_MAGNITUDE. The schema allows 1e160 as a metric; its square does not fit a
    float, so the record is refused rather than computed into inf or an OverflowError."""
    if not isinstance(data, dict):
        return [ShapeError((), f"a run record is a mapping, not {_kind(data)}")]
    found: list[ShapeError] = []
    for section in ("contract", "reference"):
        part = data.get(section)
        if part is not None and not isinstance(part, dict):
            found.append(ShapeError((section,), f"expected a mapping, found {_kind(part)}"))
        elif isinstance(part, dict) and part.get("metric") is not None and not isinstance(part["metric"], dict):
            found.append(ShapeError((section, "metric"), f"expected a mapping, found {_kind(part['metric'])}"))
    metric = data["contract"]["metric"] if isinstance(data.get("contract"), dict) and isinstance(data["contract"].get("metric"), dict) else {}
    resolution = metric.get("resolution")
    if resolution is not None and not (_number(resolution) and 0 <= resolution <= MAX_MAGNITUDE):
        found.append(ShapeError(("contract", "metric", "resolution"), f"expected a number from 0 to {MAX_MAGNITUDE:g}, found {_shown(resolution)}"))
    reference = data["reference"]["metric"] if isinstance(data.get("reference"), dict) and isinstance(data["reference"].get("metric"), dict) else {}
    values = reference.get("values")
    where: tuple[str | int, ...] = ("reference", "metric", "values")
    if values is not None and not isinstance(values, list):
        found.append(ShapeError(where, f"expected a list of {{seed, value}}, found {_kind(values)}"))
    for i, item in enumerate(values if isinstance(values, list) else []):
        if not isinstance(item, dict):
            found.append(ShapeError((*where, i), f"expected a mapping {{seed, value}}, found {_kind(item)}"))
        elif not _number(item.get("value")):
            found.append(ShapeError((*where, i, "value"), f"expected a number, found {_shown(item.get('value'))}"))
        elif not (math.isfinite(item["value"]) and abs(item["value"]) <= MAX_MAGNITUDE):
            found.append(ShapeError((*where, i, "value"), f"{item['value']:g} is beyond ±{MAX_MAGNITUDE:g}, the largest metric the seed statistics compute on"))
    return found


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "nothing"}.get(type(value), "a number")


def _shown(value: object) -> str:
    return f"{_kind(value)} ({json.dumps(value, default=str)[:40]})"


def refuse_shape(doc: Document) -> None:
    """The record's interval inputs checked at the boundary: UsageError (exit 2) naming the
    file, line and field of each one of the wrong shape, before anything is computed or written."""
    errors = shape_errors(doc.data)
    if errors:
        diagnostics = [Diagnostic(doc.path, e.message, "interval-input-shape", location=doc.locate(e.path), field=field_path(e.path)) for e in errors]
        raise UsageError(
            f"{doc.path}: the interval's inputs are not of the right shape", diagnostics=diagnostics, hint="run `reprogate validate` on the record"
        )


INPUT_SECTIONS = ("contract", "reference")  # what the interval and the planner judge by; a broken one is refused


def read_inputs(doc: Document) -> RunRecord:
    """The record's interval inputs read once: shapes first (`refuse_shape`), then the typed
    record. A `contract` or `reference` the schema rejects would read as absent, and its interval
    be computed from nothing or stored into a record validate refuses: it is a usage error (exit 2)
    naming the schema's findings in that section, before anything is computed or written."""
    refuse_shape(doc)
    record = read_record(doc.data)
    rejected = [name for name in INPUT_SECTIONS if doc.data.get(name) is not None and getattr(record, name) is None]
    if rejected:
        found = [d for d in schema_diagnostics(doc, KIND) if d.field.split(".")[0].split("[")[0] in rejected]
        raise UsageError(
            f"{doc.path}: {' and '.join(rejected)} do(es) not pass the schema; the interval is computed from none of it",
            diagnostics=found,
            hint="run `reprogate validate` on the record",
        )
    return record


def compute(record: RunRecord, alpha: float | None = None) -> dict[str, Any]:
    metric = record.contract.metric if record.contract is not None else None
    if metric is None:
        raise IntervalError("contract.metric is not declared")
    values = reference_values(record)
    a = checked_alpha(
        alpha if alpha is not None else (metric.alpha if metric.alpha is not None else 0.05), "--alpha" if alpha is not None else "contract.metric.alpha"
    )
    resolution = float(metric.resolution or 0.0)
    if not 0 <= resolution <= MAX_MAGNITUDE:  # the schema says a number >= 0; the statistics, no more than MAX_MAGNITUDE
        raise UsageError(f"contract.metric.resolution: expected a number from 0 to {MAX_MAGNITUDE:g}, found {resolution:g}")
    test = metric_test(metric)
    side = failing_side(metric)
    interval = prediction_interval(values, a, resolution, test, side)
    stored = interval.as_record()
    if resolution:
        stored["resolution"] = resolution
    notices = seed_notices(values)
    if notices:
        stored["notice"] = "; ".join(notices)
    how = COMPUTED_BY[test if test in ("seeds", "robust") else "difference"]
    if side != "both":
        how += ONE_SIDED.format(bound="high" if side == "higher" else "low")
    stored["computed_by"] = f"reprogate {__version__} ({how})"
    stored["computed_at"] = utc_now()
    return stored


def reference_values(record: RunRecord) -> list[float]:
    """`reference.metric.values` as floats, in the record's order: finite, within MAX_MAGNITUDE, at least 2."""
    reference = record.reference.metric if record.reference is not None else None
    values = [float(v.value) for v in reference.values] if reference is not None else []
    if not all(math.isfinite(v) for v in values):
        raise IntervalError("reference.metric.values holds a value that is not a finite number")
    beyond = next((i for i, v in enumerate(values) if abs(v) > MAX_MAGNITUDE), None)
    if beyond is not None:
        raise IntervalError(
            f"reference.metric.values[{beyond}].value: {values[beyond]:g} is beyond ±{MAX_MAGNITUDE:g}, the largest metric the seed statistics compute on"
        )
    if len(values) < 2:
        raise IntervalError(f"reference.metric.values holds {len(values)} seed(s); at least 2 are needed (5 or more recommended)")
    return values


MIN_ALPHA = 1e-6


def checked_alpha(value: object, where: str) -> float:
    """α as a number in [1e-6, 0.5]: NaN, 0, 1, 1e-300 or a word is a usage error (exit 2), never
    `nan%` or a t quantile out of reach."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(value)
        a = float(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{where} must be a number in [{MIN_ALPHA:g}, 0.5], not {value!r}") from None
    if not math.isfinite(a) or not MIN_ALPHA <= a <= 0.5:
        raise UsageError(f"{where} must be a number in [{MIN_ALPHA:g}, 0.5], not {value!r}")
    return a


def seed_notices(values: list[float]) -> list[str]:
    """What the reference seeds say about how far the normal-theory error rate can be trusted."""

    found = []
    if len(set(values)) == 1:
        found.append(f"the {len(values)} reference seeds showed no spread: the interval is the resolution band (declare contract.metric.resolution)")
    if len(values) < 3:
        found.append(f"only {len(values)} reference seeds: the interval is very wide and the power low (5 or more recommended)")
    notice = shape(values).notice
    if notice:
        found.append(notice)
    return found


def store(record: Path, alpha: float | None = None) -> dict[str, Any]:

    doc = load_document(record)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        raise UsageError(f"{record} is not a run record (kind: RunRecord)")
    interval = compute(read_inputs(doc), alpha)
    # --alpha sets the contract's α too: an interval at one α and a contract at another would
    # state one and apply the other (validate refuses such a record)
    doc.data["contract"]["metric"]["interval"] = interval
    if alpha is not None or doc.syntax == "json":
        doc.data["contract"]["metric"]["alpha"] = interval["alpha"]
    if doc.syntax == "json":
        atomic_write(record, json.dumps(doc.data, indent=2, ensure_ascii=False) + "\n")
        return interval
    try:
        text = splice_path(record.read_text(encoding="utf-8"), ("contract", "metric", "interval"), doc.data)
        if alpha is not None:
            text = splice_path(text, ("contract", "metric", "alpha"), doc.data)
    except FlowStyle:
        raise UsageError(
            f"{record}: the record is written as one flow mapping ({{...}}); the interval cannot be added without rewriting all of it",
            hint="write the record in block style (one key per line), or as JSON, and run `reprogate interval` again",
        ) from None
    # what is written must read back as the record with its interval, or nothing is written
    if load_text(text, doc.path).data != doc.data:
        raise UsageError(f"{record}: storing the interval would change more than contract.metric; the record is left unchanged")
    atomic_write(record, text)
    return interval
