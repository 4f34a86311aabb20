"""The figures of one traced step quantity (the loss, a gradient norm) of a rebuild against its
reference, computed once at (step, rank) points — the unit the steps stage judges.

A report that computes "the first difference" in one place from rank 0 and in another from the
mean over ranks states two numbers for one fact. So each figure is defined here, once, and carries
where it was measured: the steps stage's verdict (`compare.compare_values`), the model-state
stage's note on the loss, the verdict's `loss` section and the report's loss chart all read these
values. A figure is a `Point` (one step of one rank, or the mean over ranks of a verdict written
before the per-rank figures existed, which says so); its difference and whether it is outside the
tolerance follow from it by the steps stage's rule, |rebuilt − reference| <= abs + rel·|reference|.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from reprogate.rebuild.stats import within
from reprogate.runtime.trace import StepEvent

Key = tuple[int, int]  # (step, rank)
# Reads one traced value as a number: (event, quantity, key, side) -> the value, or None to leave it out.
ValueReader = Callable[[StepEvent, str, Key, str], float | None]
Judged = Literal["exact", "tolerance", "not judged"]
MAX_DRAWN = 100  # points a chart draws; beyond, each drawn point stands for a run of steps


@dataclass(frozen=True)
class Tolerance:
    """The steps stage's rule for one quantity: exact (0, 0) or abs + rel·|reference|."""

    abs: float
    rel: float

    def at(self, reference: float) -> float:
        return self.abs + self.rel * abs(reference)

    @property
    def exact(self) -> bool:
        return self.abs == 0 and self.rel == 0

    def words(self) -> str:
        if self.exact:
            return "exactly equal"
        if self.rel == 0:
            return f"{self.abs:.3g}"
        if self.abs == 0:
            return f"{self.rel:.3g}·|reference|"
        return f"{self.abs:.3g} + {self.rel:.3g}·|reference|"


@dataclass(frozen=True)
class Point:
    """One compared value: a step of one rank (rank None: the mean over ranks)."""

    step: int
    rank: int | None
    reference: float
    rebuilt: float | None  # None: the rebuild has no value there

    @property
    def difference(self) -> float:
        """|rebuilt − reference|; infinite where the rebuild has no (finite) value."""
        if self.rebuilt is None or not math.isfinite(self.rebuilt):
            return math.inf
        return abs(self.rebuilt - self.reference)

    def outside(self, tolerance: Tolerance | None) -> bool:
        """Outside the rule the steps stage applies (None: not judged step by step); a value the
        rebuild lacks is outside any tolerance."""
        if tolerance is None:
            return False
        return self.rebuilt is None or not within(self.rebuilt, self.reference, tolerance.abs, tolerance.rel)

    @property
    def which(self) -> str:
        """`rank 0`, or `mean over ranks`: every figure says which it is."""
        return f"rank {self.rank}" if self.rank is not None else "mean over ranks"

    @property
    def where(self) -> str:
        """`step 41, rank 0` (or `step 41, mean over ranks`)."""
        return f"step {self.step}, {self.which}"

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "rank": self.rank, "reference": self.reference, "rebuilt": self.rebuilt}

    @staticmethod
    def from_json(data: Any) -> Point | None:
        """A point from a verdict file (which the schema checked), or None when it is not one."""
        if not isinstance(data, Mapping):
            return None
        step, rank, reference, rebuilt = data.get("step"), data.get("rank"), data.get("reference"), data.get("rebuilt")
        if not _integer(step) or not _number(reference):
            return None
        if rank is not None and not _integer(rank) or rebuilt is not None and not _number(rebuilt):
            return None
        return Point(step, rank, float(reference), None if rebuilt is None else float(rebuilt))


def _integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Figures:
    """What a report states about one quantity, each figure a point measured once."""

    quantity: str
    judged: Judged
    tolerance: Tolerance | None  # the rule it was judged by (exact: 0, 0); None when not judged
    per_rank: bool  # False: a verdict of before the per-rank figures (mean over ranks)
    compared: int  # points compared (one the rebuild lacks counts, as outside)
    span: tuple[int, int] | None  # the first and last step both traces reached
    steps: int  # how many steps both traces reached
    reference_steps: int  # how many steps the reference recorded
    first_difference: Point | None  # at the first step whose value differs at all, the point that stands for it
    largest: Point | None  # the point of the largest difference (the first of equals)
    first_outside: Point | None  # at the first step outside the tolerance, the point that stands for it
    drawn: tuple[Point, ...]  # what a chart draws: at most MAX_DRAWN points, in step order

    @property
    def passed(self) -> bool:
        return self.first_outside is None

    def to_json(self) -> dict[str, Any]:
        return {
            "quantity": self.quantity,
            "judged": self.judged,
            **({"abs": self.tolerance.abs, "rel": self.tolerance.rel} if self.tolerance is not None else {}),
            "per": "rank" if self.per_rank else "mean over ranks",
            "compared": self.compared,
            "steps": self.steps,
            "span": list(self.span) if self.span else None,
            "reference_steps": self.reference_steps,
            "first_difference": self.first_difference.to_json() if self.first_difference else None,
            "largest": self.largest.to_json() if self.largest else None,
            "first_outside": self.first_outside.to_json() if self.first_outside else None,
            "drawn": [p.to_json() for p in self.drawn],
        }


def judged_as(level: str, quantities: Iterable[str], quantity: str, abs_tol: float, rel_tol: float) -> tuple[Judged, Tolerance | None]:
    """How the steps stage judges `quantity` under a contract: bitwise exactly, behavioral by its
    tolerance when the tolerance names the quantity; otherwise not step by step."""
    if quantity not in quantities or level not in ("bitwise", "behavioral"):
        return "not judged", None
    if level == "bitwise":
        return "exact", Tolerance(0.0, 0.0)
    tolerance = Tolerance(abs_tol, rel_tol)
    return ("exact" if tolerance.exact else "tolerance"), tolerance


def _drawn_at(points: list[Point], tolerance: Tolerance | None) -> Point:
    """The point a chart draws for a run of points: of those outside the tolerance where any
    is (so the drawn line crosses the tolerance exactly where a point is outside), the one with
    the largest difference; the first of equals."""
    outside = [p for p in points if p.outside(tolerance)]
    return max(outside or points, key=lambda p: p.difference)


def runs_of(count: int, limit: int = MAX_DRAWN) -> list[range]:
    """Consecutive runs of indices, at most `limit` of them, covering all `count`."""
    if count <= limit:
        return [range(i, i + 1) for i in range(count)]
    return [range(i * count // limit, (i + 1) * count // limit) for i in range(limit)]


def of_points(quantity: str, points: list[Point], judged: Judged, tolerance: Tolerance | None, reference_steps: int, per_rank: bool = True) -> Figures:
    """The figures of `points` (in (step, rank) order). At each step one point stands for it — of
    the points outside the tolerance where any is, the one furthest from the reference — so the
    first step that differs, the first step outside and the chart name the same rank there."""
    by_step: dict[int, list[Point]] = {}
    for p in points:
        by_step.setdefault(p.step, []).append(p)
    per_step = [_drawn_at(by_step[s], tolerance) for s in sorted(by_step)]
    first = next((p for p in per_step if p.difference > 0), None)
    outside = next((p for p in per_step if p.outside(tolerance)), None)
    largest = max(points, key=lambda p: p.difference) if points else None
    reached = [p for p in per_step if any(q.rebuilt is not None for q in by_step[p.step])]
    drawn = tuple(_drawn_at([reached[i] for i in run], tolerance) for run in runs_of(len(reached)))
    span = (reached[0].step, reached[-1].step) if reached else None
    return Figures(quantity, judged, tolerance, per_rank, len(points), span, len(reached), reference_steps, first, largest, outside, drawn)


def figures(
    reference: Mapping[Key, StepEvent],
    rebuilt: Mapping[Key, StepEvent],
    quantity: str,
    judged: Judged,
    tolerance: Tolerance | None,
    read: ValueReader | None = None,
) -> Figures:
    """The figures of `quantity` over the (step, rank) points the reference records it at.
    `read` takes one value as a number (the steps stage's raises for a value that is not one); by
    default a value that is not a finite number is left out. A rebuilt value that is not finite
    is no value (outside any tolerance)."""
    read = read or _finite
    points = []
    for key in sorted(reference):
        if not reference[key].has(quantity):
            continue
        expected = read(reference[key], quantity, key, "reference")
        if expected is None:
            continue
        theirs = rebuilt.get(key)
        got = read(theirs, quantity, key, "rebuilt") if theirs is not None and theirs.has(quantity) else None
        points.append(Point(key[0], key[1], expected, got if got is not None and math.isfinite(got) else None))
    steps = len({key[0] for key, event in reference.items() if event.has(quantity)})
    return of_points(quantity, points, judged, tolerance, steps)


def _finite(event: StepEvent, quantity: str, key: Key, side: str) -> float | None:
    value = event.named(quantity)
    return float(value) if _number(value) else None


def from_json(data: Any) -> Figures | None:
    """The verdict's `loss` figures, or None when the verdict has none (or they are not figures)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("drawn"), list | tuple):
        return None
    judged = data.get("judged")
    if judged not in ("exact", "tolerance", "not judged"):
        return None
    low, high = data.get("abs"), data.get("rel")
    tolerance = Tolerance(float(low), float(high)) if _number(low) and _number(high) and low >= 0 and high >= 0 else None
    if judged != "not judged" and tolerance is None:
        return None
    drawn = tuple(p for p in (Point.from_json(d) for d in data["drawn"]) if p is not None)
    span, steps, reference_steps, compared = data.get("span"), data.get("steps"), data.get("reference_steps"), data.get("compared")
    if not _integer(steps):
        return None
    if span is None and steps == 0:
        found_span = None  # no step both traces reached: nothing to span (to_json writes null)
    elif isinstance(span, list | tuple) and len(span) == 2 and _integer(span[0]) and _integer(span[1]):
        found_span = (span[0], span[1])
    else:
        return None
    return Figures(
        str(data.get("quantity") or "loss"),
        "exact" if judged == "exact" else "tolerance" if judged == "tolerance" else "not judged",
        tolerance,
        data.get("per") != "mean over ranks",
        compared if _integer(compared) else len(drawn),
        found_span,
        steps,
        reference_steps if _integer(reference_steps) else steps,
        Point.from_json(data.get("first_difference")),
        Point.from_json(data.get("largest")),
        Point.from_json(data.get("first_outside")),
        drawn,
    )
