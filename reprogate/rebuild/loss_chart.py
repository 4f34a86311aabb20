"""The report's loss section: how far the rebuild's loss is from the reference's, step by step.

Two curves 1e-4 apart on a 0.6–3.6 axis are one line, so the chart a failure shows is the
difference itself: log10 |reference − rebuild| of the mean loss over ranks at each step both
reached, on a numeric step axis (Mermaid draws ~10 ticks), with a grey spike at the first step whose
loss differs and, for a behavioral contract, the tolerance drawn as its own line (log10 of
abs + rel·|reference| at each step, the rule the steps stage applies). A step where the two are
equal has no logarithm: it sits on the chart's bottom edge, and the legend says so. Mermaid
xychart has no legend and no log axis; the text under the chart names every series and its colour.

A pass needs no chart above the fold: one sentence (equal at every step, or the largest
difference and its margin to the tolerance), the charts folded in `<details>`. Reads the verdict
JSON (the report renders any verdict file), so every field is checked before it is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reprogate.output.markdown import code_span
from reprogate.output.xychart import Series, XYChart, mermaid

MAX_POINTS = 100  # points per series; beyond, each point is the largest difference of its run of steps
RED, BLUE, GREY = "#cf222e", "#0969da", "#6e7781"
DECADES = 8  # the least span of the log axis


@dataclass(frozen=True)
class Tolerance:
    abs: float
    rel: float

    def at(self, reference: float) -> float:
        return self.abs + self.rel * abs(reference)

    def words(self) -> str:
        if self.rel == 0:
            return f"{self.abs:.3g}"
        if self.abs == 0:
            return f"{self.rel:.3g}·|reference|"
        return f"{self.abs:.3g} + {self.rel:.3g}·|reference|"


@dataclass(frozen=True)
class LossDifference:
    """The two mean-loss curves on the steps both reached, and what the chart marks."""

    steps: tuple[int, ...]
    reference: tuple[float, ...]
    rebuilt: tuple[float, ...]
    reference_steps: int  # steps the reference recorded (the rebuild may have stopped earlier)
    tolerance: Tolerance | None  # None: exact (bitwise), or a tolerance that does not cover the loss

    @property
    def differences(self) -> tuple[float, ...]:
        return tuple(abs(a - b) for a, b in zip(self.reference, self.rebuilt, strict=True))

    @property
    def first(self) -> int | None:
        """Index of the first step whose loss differs."""
        return next((i for i, d in enumerate(self.differences) if d > 0), None)

    @property
    def largest(self) -> int:
        differences = self.differences
        return max(range(len(differences)), key=differences.__getitem__)

    @property
    def first_outside(self) -> int | None:
        if self.tolerance is None:
            return self.first
        tolerance = self.tolerance
        return next((i for i, (d, r) in enumerate(zip(self.differences, self.reference, strict=True)) if d > tolerance.at(r)), None)


def _curve(points: Any) -> dict[int, float]:
    found: dict[int, float] = {}
    for point in points if isinstance(points, list) else []:
        if isinstance(point, list | tuple) and len(point) == 2:
            step, value = point
            if isinstance(step, int) and isinstance(value, int | float) and math.isfinite(value):
                found[step] = float(value)
    return found


def _tolerance(verdict: dict[str, Any]) -> Tolerance | None:
    """The steps stage's tolerance when it judged the loss; None for exact or a loss it did not judge."""
    for test in verdict.get("tests") or []:
        if isinstance(test, dict) and test.get("test") == "step tolerance" and "loss" in (test.get("quantities") or ["loss"]):
            bounds = [test.get("abs", 0.0), test.get("rel", 0.0)]
            if not all(isinstance(b, int | float) and not isinstance(b, bool) and 0 <= b < math.inf for b in bounds):
                return None  # the verdict schema leaves a test's fields open: a tolerance that is no number is not drawn
            tol = Tolerance(float(bounds[0]), float(bounds[1]))
            return tol if tol.abs > 0 or tol.rel > 0 else None
    return None


def loss_difference(verdict: dict[str, Any]) -> LossDifference | None:
    """The curves of a verdict on their common steps; None without two curves that share a step."""
    curves = verdict.get("curves") if isinstance(verdict.get("curves"), dict) else {}
    reference, rebuilt = _curve(curves.get("reference")), _curve(curves.get("rebuilt"))
    steps = tuple(sorted(set(reference) & set(rebuilt)))
    if not steps:
        return None
    return LossDifference(steps, tuple(reference[s] for s in steps), tuple(rebuilt[s] for s in steps), len(reference), _tolerance(verdict))


def _buckets(count: int, limit: int = MAX_POINTS) -> list[range]:
    """Consecutive runs of indices, at most `limit` of them, covering all `count`."""
    if count <= limit:
        return [range(i, i + 1) for i in range(count)]
    return [range(i * count // limit, (i + 1) * count // limit) for i in range(limit)]


def _log(value: float) -> float:
    return math.log10(value) if value > 0 else -math.inf


def _clamped(value: float, bottom: float, top: float) -> float:
    """log10 of a value on the chart: 0 (no logarithm) on the bottom edge, never past the top."""
    return min(max(_log(value), bottom), top)


def difference_chart(loss: LossDifference) -> str:
    """log10 |Δ loss| per step (red), the first differing step (a grey spike), the tolerance (blue).

    Mermaid's bars on a numeric axis are wider than a step and rise from below the axis minimum,
    so the marker is a line at the bottom edge that spikes to the top at that one step."""
    if loss.first is None:
        return ""
    differences = loss.differences
    buckets = _buckets(len(loss.steps))
    if len(buckets) < 2:
        return ""
    shown = [max(differences[i] for i in b) for b in buckets]
    allowed = [min(loss.tolerance.at(loss.reference[i]) for i in b) for b in buckets] if loss.tolerance else []
    finite = [_log(v) for v in shown + allowed if 0 < v < math.inf]
    top = math.ceil(max(finite))
    # at least 8 decades: Mermaid's ~10 ticks then fall on whole numbers, one per decade
    bottom = min(math.floor(min(finite)) - 1, top - DECADES)
    first_bucket = next(n for n, b in enumerate(buckets) if loss.first in b)
    series = [
        # the marker: a spike from the bottom edge (where the axis is) to the top at the first differing step
        Series("line", tuple(float(top) if n == first_bucket else float(bottom) for n in range(len(buckets))), GREY),
        Series("line", tuple(_clamped(v, bottom, top) for v in shown), RED),
    ]
    if allowed:
        series.append(Series("line", tuple(_clamped(v, bottom, top) for v in allowed), BLUE))
    return mermaid(
        XYChart(
            title="How far the rebuild's loss is from the reference's",
            x_title="step",
            x_range=(loss.steps[0], loss.steps[-1]),
            y_title="log10 |reference − rebuild|, −4 is 1e-4",
            y_range=(bottom, top),
            series=tuple(series),
        )
    )


def curves_chart(loss: LossDifference) -> str:
    """The two loss curves (blue reference, red rebuild over it) on the steps both reached."""
    buckets = _buckets(len(loss.steps))
    if len(buckets) < 2:
        return ""
    reference = [loss.reference[b[0]] for b in buckets]
    rebuilt = [loss.rebuilt[b[0]] for b in buckets]
    low, high = min(reference + rebuilt), max(reference + rebuilt)
    pad = (high - low) * 0.05 or 0.01
    return mermaid(
        XYChart(
            title="Training loss, mean over ranks",
            x_title="step",
            x_range=(loss.steps[0], loss.steps[-1]),
            y_title="loss",
            y_range=(float(f"{low - pad:.3g}"), float(f"{high + pad:.3g}")),
            series=(Series("line", tuple(reference), BLUE), Series("line", tuple(rebuilt), RED)),
        )
    )


def _sampled(loss: LossDifference) -> str:
    count = len(loss.steps)
    return "" if count <= MAX_POINTS else f" Each point stands for {count / MAX_POINTS:.3g} steps on average and shows the largest difference among them."


def _stopped(loss: LossDifference) -> str:
    if len(loss.steps) >= loss.reference_steps:
        return ""
    return f" The rebuild recorded {len(loss.steps)} of the reference's {loss.reference_steps} steps (last: {loss.steps[-1]}); later steps are not drawn."


def difference_legend(loss: LossDifference, verdict: dict[str, Any]) -> str:
    """The words under the difference chart: every series by colour, the first divergence, the tolerance."""
    first = loss.first
    assert first is not None
    d = loss.differences
    bottom_note = " A step where the two losses are equal is drawn on the bottom edge." if any(v == 0 for v in d) else ""
    parts = [
        f"Legend — **red line**: log10 of |reference − rebuild| of the loss (mean over ranks) at each step.{bottom_note}",
        f"**Grey spike**: step {loss.steps[first]}, the first step whose loss differs (|Δ| = {d[first]:.3g}).",
    ]
    if loss.tolerance is not None:
        outside = loss.first_outside
        crossed = f"the loss first exceeds it at step {loss.steps[outside]}" if outside is not None else "the loss stays within it at every step"
        parts.append(f"**Blue line**: log10 of the tolerance at each step, {loss.tolerance.words()}; {crossed}.")
    else:
        parts.append(f"**Tolerance**: {_no_tolerance(verdict)}, so there is no tolerance line.")
    parts.append(f"Largest difference: {d[loss.largest]:.3g} at step {loss.steps[loss.largest]}.{_sampled(loss)}{_stopped(loss)}")
    return " ".join(parts)


def _no_tolerance(verdict: dict[str, Any]) -> str:
    """Why no tolerance line is drawn: an exact contract, or a tolerance that does not judge the loss."""
    record = verdict.get("record") if isinstance(verdict.get("record"), dict) else {}
    if record.get("level") == "bitwise":
        return "exact — the bitwise contract fails on any difference"
    return "none on the loss (the steps stage judged other quantities, or no step tolerance is stated)"


def _cause(verdict: dict[str, Any], loss: LossDifference) -> str:
    """Where the trace differs first, when that is before the loss does (the diagnosis's cause)."""
    cause = verdict.get("first_difference")
    if not isinstance(cause, dict) or not isinstance(cause.get("step"), int) or cause.get("field") == "loss":
        return ""
    first = loss.first
    if first is not None and cause["step"] >= loss.steps[first]:
        return ""
    return f" The trace differs earlier, in {code_span(str(cause.get('field')))} at step {cause['step']} (the diagnosis above)."


def _fold(summary: str, blocks: Sequence[str]) -> list[str]:
    body = [line for block in blocks if block for line in (block, "")]
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "</details>", ""] if body else []


CURVES_LEGEND = "Legend — **blue line**: the reference's loss; **red line**: the rebuild's, drawn over it (where they agree, only red shows)."


def section(verdict: dict[str, Any]) -> list[str]:
    """The report's `### Loss` lines: the difference chart above the fold for a failure, a sentence
    and folded charts for a pass or a loss that did not move; nothing without two curves."""
    loss = loss_difference(verdict)
    if loss is None:
        return []
    passed = verdict.get("verdict") == "pass"
    curves = curves_chart(loss)
    curves_block = f"{curves}\n\n{CURVES_LEGEND}" if curves else ""
    lines = ["### Loss", ""]
    if loss.first is None:
        lines += [
            f"The rebuild's loss equals the reference's at every one of the {len(loss.steps)} steps both recorded.{_stopped(loss)}{_cause(verdict, loss)}",
            "",
        ]
        return lines + _fold("The loss curves", [curves_block])
    chart = difference_chart(loss)
    d = loss.differences
    first, largest = loss.first, loss.largest
    lead = (
        f"The loss first differs at step {loss.steps[first]} (|Δ| = {d[first]:.3g}); the largest difference is {d[largest]:.3g} at step {loss.steps[largest]}."
    )
    if loss.tolerance is not None:
        outside = loss.first_outside
        lead += f" Tolerance {loss.tolerance.words()}: " + (
            f"first exceeded at step {loss.steps[outside]}." if outside is not None else "never exceeded by the loss."
        )
    else:
        lead += f" Tolerance: {_no_tolerance(verdict)}."
    lead += _cause(verdict, loss)
    block = f"{chart}\n\n{difference_legend(loss, verdict)}" if chart else ""
    if passed:
        return [*lines, lead, "", *_fold("The loss difference and the loss curves", [block, curves_block])]
    return [*lines, lead, "", *([block, ""] if block else []), *_fold("The loss curves", [curves_block])]
