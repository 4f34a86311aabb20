"""The report's loss section: how far the rebuild's loss is from the reference's, step by step.

Two curves 1e-4 apart on a 0.6–3.6 axis are one line, so the chart a failure shows is the
difference itself: log10 |reference − rebuild| of the loss, on a numeric step axis (Mermaid draws
~10 ticks), with a grey spike at the first step whose loss differs and, for a behavioral contract,
the tolerance drawn as its own line (log10 of abs + rel·|reference|, the rule the steps stage
applies). A step where the two are equal has no logarithm: it sits on the chart's bottom edge, and
the legend says so. Mermaid xychart has no legend and no log axis; the text under the chart names
every series and its colour.

Every number here is a figure of the verdict's `loss` (rebuild/step_figures.py): measured once, at
a (step, rank) point, by the steps stage's rule, and named with its step and rank wherever it is
stated — the same values the stage table and the diagnosis give. Each drawn point is one rank's at
its step (the one furthest from the reference, of those outside the tolerance where any is), so the
red line crosses the blue exactly where a point is outside. A verdict written before these figures
has only the mean loss over ranks (`curves`): its figures are computed from that and labelled so.

A pass needs no chart above the fold: one sentence (equal at every step, or the largest
difference and its margin to the tolerance), the charts folded in `<details>`. Reads the typed
verdict (rebuild/verdict.py: the schema checked every field before it was built).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from reprogate.output.markdown import code_span
from reprogate.output.xychart import Series, XYChart, mermaid
from reprogate.rebuild.comparisons import TOLERANCE
from reprogate.rebuild.step_figures import MAX_DRAWN, Figures, Judged, Point, Tolerance, of_points, runs_of
from reprogate.rebuild.verdict import Verdict

MAX_POINTS = MAX_DRAWN  # points per series; beyond, each point stands for a run of steps
RED, BLUE, GREY = "#cf222e", "#0969da", "#6e7781"
DECADES = 8  # the least span of the log axis


def _curve(points: Sequence[Sequence[Any]]) -> dict[int, float]:
    found: dict[int, float] = {}
    for step, value in points:
        if isinstance(value, int | float) and math.isfinite(value):
            found[step] = float(value)
    return found


def _curves(verdict: Verdict) -> tuple[dict[int, float], dict[int, float]]:
    return _curve(verdict.curves.get("reference", ())), _curve(verdict.curves.get("rebuilt", ()))


def _judged_by_tests(verdict: Verdict) -> tuple[Judged, Tolerance | None]:
    """How a verdict without per-rank figures judged the loss: bitwise exactly; the steps stage's
    tolerance when it judged the loss; otherwise not step by step."""
    if verdict.record.level == "bitwise":
        return "exact", Tolerance(0.0, 0.0)
    for test in verdict.tests:
        if test.kind == TOLERANCE and "loss" in (test.quantities or ("loss",)):
            bounds = test.tolerance
            if not all(isinstance(b, int | float) and not isinstance(b, bool) and 0 <= b < math.inf for b in bounds):
                return "not judged", None  # the verdict schema leaves a test's fields open: a tolerance that is no number is not drawn
            tolerance = Tolerance(float(bounds[0]), float(bounds[1]))
            return ("exact" if tolerance.exact else "tolerance"), tolerance
    return "not judged", None


def loss_figures(verdict: Verdict) -> Figures | None:
    """The verdict's loss figures: its `loss` (per rank), or, for a verdict written before them,
    the mean loss over ranks of its curves on their common steps; None without a step both reached."""
    found = verdict.loss
    if found is not None:
        return found if found.steps else None
    reference, rebuilt = _curves(verdict)
    steps = sorted(set(reference) & set(rebuilt))
    if not steps:
        return None
    judged, tolerance = _judged_by_tests(verdict)
    points = [Point(s, None, reference[s], rebuilt[s]) for s in steps]
    return of_points("loss", points, judged, tolerance, len(reference), per_rank=False)


def _log(value: float) -> float:
    return math.log10(value) if value > 0 else -math.inf


def _clamped(value: float, bottom: float, top: float) -> float:
    """log10 of a value on the chart: 0 (no logarithm) on the bottom edge, never past the top."""
    return min(max(_log(value), bottom), top)


def _drawn_tolerance(loss: Figures) -> Tolerance | None:
    return loss.tolerance if loss.judged == "tolerance" else None


def difference_chart(loss: Figures) -> str:
    """log10 |Δ loss| per drawn point (red), the first differing step (a grey spike), the tolerance (blue).

    Mermaid's bars on a numeric axis are wider than a step and rise from below the axis minimum,
    so the marker is a line at the bottom edge that spikes to the top at that one step."""
    if loss.first_difference is None or len(loss.drawn) < 2 or loss.span is None:
        return ""
    shown = [p.difference for p in loss.drawn]
    tolerance = _drawn_tolerance(loss)
    allowed = [tolerance.at(p.reference) for p in loss.drawn] if tolerance else []
    finite = [_log(v) for v in shown + allowed if 0 < v < math.inf]
    if not finite:
        return ""
    top = math.ceil(max(finite))
    # at least 8 decades: Mermaid's ~10 ticks then fall on whole numbers, one per decade
    bottom = min(math.floor(min(finite)) - 1, top - DECADES)
    # the drawn point of a run of steps is its largest difference: the first nonzero one holds the first difference
    first_drawn = next((n for n, v in enumerate(shown) if v > 0), 0)
    series = [
        Series("line", tuple(float(top) if n == first_drawn else float(bottom) for n in range(len(shown))), GREY),
        Series("line", tuple(_clamped(v, bottom, top) for v in shown), RED),
    ]
    if allowed:
        series.append(Series("line", tuple(_clamped(v, bottom, top) for v in allowed), BLUE))
    return mermaid(
        XYChart(
            title="How far the rebuild's loss is from the reference's",
            x_title="step",
            x_range=loss.span,
            y_title="log10 |reference − rebuild|, −4 is 1e-4",
            y_range=(bottom, top),
            series=tuple(series),
        )
    )


def curves_chart(verdict: Verdict) -> str:
    """The two loss curves, mean over ranks (blue reference, red rebuild over it), on the steps both reached."""
    reference, rebuilt = _curves(verdict)
    steps = sorted(set(reference) & set(rebuilt))
    if len(steps) < 2:
        return ""
    first = [steps[run[0]] for run in runs_of(len(steps))]
    values = [reference[s] for s in first] + [rebuilt[s] for s in first]
    low, high = min(values), max(values)
    pad = (high - low) * 0.05 or 0.01
    return mermaid(
        XYChart(
            title="Training loss, mean over ranks",
            x_title="step",
            x_range=(steps[0], steps[-1]),
            y_title="loss",
            y_range=(float(f"{low - pad:.3g}"), float(f"{high + pad:.3g}")),
            series=(Series("line", tuple(reference[s] for s in first), BLUE), Series("line", tuple(rebuilt[s] for s in first), RED)),
        )
    )


def _size(point: Point) -> str:
    """A point's difference in words: `|Δ| = 0.000129`, or that the rebuild has no value there."""
    return f"|Δ| = {point.difference:.3g}" if point.rebuilt is not None else "no finite value in the rebuild"


def _sampled(loss: Figures) -> str:
    if loss.steps <= MAX_POINTS:
        return ""
    return f" Each point stands for {loss.steps / MAX_POINTS:.3g} steps on average and shows the point furthest from the reference among them."


def _stopped(loss: Figures) -> str:
    if loss.steps >= loss.reference_steps or loss.span is None:
        return ""
    return f" The rebuild recorded {loss.steps} of the reference's {loss.reference_steps} steps (last: {loss.span[1]}); later steps are not drawn."


def _crossing(loss: Figures) -> str:
    """Where the loss first leaves the tolerance, or that it never does."""
    outside = loss.first_outside
    return f"first exceeded at {outside.where} ({_size(outside)})" if outside is not None else "never exceeded by the loss"


def difference_legend(loss: Figures, verdict: Verdict) -> str:
    """The words under the difference chart: every series by colour, the first divergence, the tolerance."""
    first = loss.first_difference
    assert first is not None
    bottom_note = " A step where the two losses are equal is drawn on the bottom edge." if any(p.difference == 0 for p in loss.drawn) else ""
    if loss.per_rank:
        per = "of the loss at each step, for the rank furthest from the reference there (of the ranks outside the tolerance, where any is)"
    else:
        per = "of the loss, mean over ranks, at each step"
    parts = [
        f"Legend — **red line**: log10 of |reference − rebuild| {per}.{bottom_note}",
        f"**Grey spike**: step {first.step}, the first step whose loss differs ({first.which}, {_size(first)}).",
    ]
    if loss.judged == "tolerance" and loss.tolerance is not None:
        parts.append(f"**Blue line**: log10 of the tolerance at each drawn point, {loss.tolerance.words()}; the loss is {_crossing(loss)}.")
    else:
        parts.append(f"**Tolerance**: {_no_tolerance(loss)}, so there is no tolerance line.")
    largest = loss.largest
    assert largest is not None
    parts.append(f"Largest difference: {_size(largest).removeprefix('|Δ| = ')} at {largest.where}.{_sampled(loss)}{_stopped(loss)}")
    return " ".join(parts)


def _no_tolerance(loss: Figures) -> str:
    """Why no tolerance line is drawn: an exact contract, or a tolerance that does not judge the loss."""
    if loss.judged == "exact":
        return "exact — the contract fails on any difference"
    return "none on the loss (the steps stage judged other quantities, or no step tolerance is stated)"


def _cause(verdict: Verdict, loss: Figures) -> str:
    """Where the trace differs first, when that is before the loss does (the diagnosis's cause)."""
    cause = verdict.first_difference
    if cause is None or cause.field == "loss":
        return ""
    first = loss.first_difference
    if first is not None and cause.step >= first.step:
        return ""
    return f" The trace differs earlier, in {code_span(cause.field)} at step {cause.step}, rank {cause.rank} (the diagnosis above)."


def _fold(summary: str, blocks: Sequence[str]) -> list[str]:
    body = [line for block in blocks if block for line in (block, "")]
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "</details>", ""] if body else []


CURVES_LEGEND = "Legend — **blue line**: the reference's loss, mean over ranks; **red line**: the rebuild's, drawn over it (where they agree, only red shows)."


def lead(loss: Figures, verdict: Verdict) -> str:
    """The section's first sentence: the first difference, the largest, the tolerance — each
    named by its step and rank (or as the mean over ranks)."""
    first, largest = loss.first_difference, loss.largest
    if first is None or largest is None:
        which = "every rank" if loss.per_rank else "mean over ranks"
        equal = f"The rebuild's loss equals the reference's at every one of the {loss.steps} steps both recorded ({which})."
        return equal + _stopped(loss) + _cause(verdict, loss)
    text = f"The loss first differs at {first.where} ({_size(first)}); the largest difference is {_size(largest).removeprefix('|Δ| = ')} at {largest.where}."
    if loss.judged == "tolerance" and loss.tolerance is not None:
        text += f" Tolerance {loss.tolerance.words()}: {_crossing(loss)}."
    else:
        text += f" Tolerance: {_no_tolerance(loss)}."
    return text + _cause(verdict, loss)


def section(verdict: Verdict) -> list[str]:
    """The report's `### Loss` lines: the difference chart above the fold for a failure, a sentence
    and folded charts for a pass or a loss that did not move; nothing without two curves."""
    loss = loss_figures(verdict)
    if loss is None:
        return []
    passed = verdict.passed
    curves = curves_chart(verdict)
    curves_block = f"{curves}\n\n{CURVES_LEGEND}" if curves else ""
    lines = ["### Loss", "", lead(loss, verdict), ""]
    if loss.first_difference is None:
        return lines + _fold("The loss curves", [curves_block])
    chart = difference_chart(loss)
    block = f"{chart}\n\n{difference_legend(loss, verdict)}" if chart else ""
    if passed:
        return [*lines, *_fold("The loss difference and the loss curves", [block, curves_block])]
    return [*lines, *([block, ""] if block else []), *_fold("The loss curves", [curves_block])]
