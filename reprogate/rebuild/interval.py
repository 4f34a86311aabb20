"""`reprogate interval RECORD`: compute the metric's interval and store it in the record.

The interval is fixed before any drill, from the reference seeds alone, so the verdict cannot be
tuned after seeing a rebuild. It is written into contract.metric.interval by splicing the YAML
text (comments and the rest of the record stay as written).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.capture.merge import splice
from reprogate.core.documents import load_document
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.seedstats import failing_side, metric_test, shape
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


def compute(data: dict[str, Any], alpha: float | None = None) -> dict[str, Any]:
    metric = (data.get("contract") or {}).get("metric")
    if not isinstance(metric, dict):
        raise IntervalError("contract.metric is not declared")
    values = reference_values(data)
    a = checked_alpha(alpha if alpha is not None else metric.get("alpha", 0.05), "--alpha" if alpha is not None else "contract.metric.alpha")
    resolution = float(metric.get("resolution", 0.0) or 0.0)
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


def reference_values(data: dict[str, Any]) -> list[float]:
    try:
        values = [float(v["value"]) for v in ((data.get("reference") or {}).get("metric") or {}).get("values", [])]
    except (TypeError, KeyError, ValueError, AttributeError):
        raise IntervalError("reference.metric.values must be a list of {seed, value} with numeric values; run `reprogate validate`") from None
    if not all(math.isfinite(v) for v in values):
        raise IntervalError("reference.metric.values holds a value that is not a finite number")
    if len(values) < 2:
        raise IntervalError(f"reference.metric.values holds {len(values)} seed(s); at least 2 are needed (5 or more recommended)")
    return values


MIN_ALPHA = 1e-6


def checked_alpha(value: object, where: str) -> float:
    """α as a number in [1e-6, 0.5]: NaN, 0, 1, 1e-300 or a word is a usage error (exit 2), never
    `nan%` or a t quantile out of reach."""
    try:
        a = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
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
    interval = compute(doc.data, alpha)
    # --alpha sets the contract's α too: an interval at one α and a contract at another would
    # state one and apply the other (validate refuses such a record)
    if doc.syntax == "json":
        doc.data["contract"]["metric"]["interval"] = interval
        doc.data["contract"]["metric"]["alpha"] = interval["alpha"]
        atomic_write(record, json.dumps(doc.data, indent=2, ensure_ascii=False) + "\n")
    else:
        text = splice(record.read_text(encoding="utf-8"), ("contract", "metric", "interval"), interval)
        if alpha is not None:
            text = splice(text, ("contract", "metric", "alpha"), interval["alpha"])
        atomic_write(record, text)
    return interval
