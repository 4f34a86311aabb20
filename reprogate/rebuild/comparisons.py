"""Each comparison a rebuild stage made, stated fully: what was compared, by which test, with what
α, n, m and power, and whether it passed. The steps and metric stages return one with their
result; the verdict lists them in stage order and the claim repeats them in words."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reprogate.core.frozen import freeze, thaw
from reprogate.rebuild.seed_plan import SeedPlan

EXACT = "exact step values"
TOLERANCE = "step tolerance"
PREDICTION = "t prediction interval (one rebuild seed)"
DIFFERENCE = "two-sample t on the means (pooled, two-sided)"
EQUIVALENCE = "Welch TOST equivalence"
RANK_SUM = "Wilcoxon rank-sum (exact mid-p, two-sided)"
DIFFERENCE_ONE_SIDED = "two-sample t on the means (pooled, one-sided: fails only worse)"
RANK_SUM_ONE_SIDED = "Wilcoxon rank-sum (exact mid-p, one-sided: fails only worse)"


@dataclass(frozen=True)
class StepTest:
    """The steps stage: quantities step by step, exactly (bitwise) or within a tolerance
    (behavioral). Its first point outside and its largest difference are points of the stage's
    figures (compare.StepJudgement), each named by step, rank and quantity."""

    kind: str  # EXACT or TOLERANCE
    quantities: tuple[str, ...]
    abs: float
    rel: float
    compared: int  # (step, rank) points compared
    first_outside: int | None  # its step
    max_deviation: float | None
    passed: bool
    first_outside_rank: int | None = None
    first_outside_quantity: str | None = None
    max_deviation_step: int | None = None
    max_deviation_rank: int | None = None
    max_deviation_quantity: str | None = None

    def to_json(self) -> dict[str, Any]:
        finite = self.max_deviation is not None and math.isfinite(self.max_deviation)
        return {
            "test": self.kind,
            "quantities": list(self.quantities),
            "abs": self.abs,
            "rel": self.rel,
            "compared": self.compared,
            "first_outside": self.first_outside,
            "first_outside_rank": self.first_outside_rank,
            "first_outside_quantity": self.first_outside_quantity,
            "max_deviation": self.max_deviation if finite else None,  # not finite: a value the rebuild lacks (the quantity and point say where)
            "max_deviation_step": self.max_deviation_step,
            "max_deviation_rank": self.max_deviation_rank,
            "max_deviation_quantity": self.max_deviation_quantity,
            "passed": self.passed,
        }


@dataclass(frozen=True)
class MetricTest:
    """The metric stage: the rebuild's metric seeds against the reference seeds."""

    kind: str  # PREDICTION, DIFFERENCE(_ONE_SIDED), RANK_SUM(_ONE_SIDED) or EQUIVALENCE
    metric: str
    alpha: float
    n: int
    m: int
    passed: bool
    seeds: SeedPlan
    power: Mapping[str, Any]  # what the test could catch (or, for TOST, how often a good build passes)
    figures: Mapping[str, Any] = field(default_factory=dict)  # the test's own numbers, in the verdict's words
    notice: str = ""  # what the reference seeds' shape says of the normal-theory error rate

    @property
    def interval(self) -> tuple[float, float] | None:
        found = self.figures.get("interval")
        return (float(found[0]), float(found[1])) if found else None

    @property
    def limit(self) -> float | None:
        return self.figures.get("limit")

    @property
    def margin(self) -> float | None:
        return self.figures.get("margin")

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.kind,
            "metric": self.metric,
            "alpha": self.alpha,
            "n": self.n,
            "m": self.m,
            **self.figures,
            "seeds": list(self.seeds.metric_seeds),
            "seed_source": self.seeds.source,
            "seeds_note": self.seeds.describe(),
            **({"notice": self.notice} if self.notice else {}),
            "passed": self.passed,
            "power": dict(self.power),
        }


Comparison = StepTest | MetricTest


@dataclass(frozen=True)
class StatedTest:
    """A comparison as the verdict states it: its test and result typed, its parameters (α, n, m,
    the tolerance, the figures, the power) as they were written, read-only and in their order.

    The verdict schema leaves a test's parameters open (each test states its own), so a verdict
    read back holds this, not the StepTest or MetricTest that wrote it: those carry what the file
    does not (the seed plan's trace seed), and a verdict made by an older reprogate states fewer
    figures. The typed properties below are every parameter a reader of a verdict uses."""

    kind: str
    passed: bool
    stated: Mapping[str, Any]  # the whole test as written (test and passed included), frozen

    @staticmethod
    def of(comparison: Comparison) -> StatedTest:
        """The comparison as the verdict states it."""
        return StatedTest.from_json(comparison.to_json())

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> StatedTest:
        """One entry of a verdict's `tests` (which the schema checked: `test` a string, `passed` a boolean)."""
        return StatedTest(str(data["test"]), data["passed"] is True, freeze(data))

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = thaw(self.stated)
        return found

    @property
    def parameters(self) -> tuple[tuple[str, Any], ...]:
        """Every stated field but the test's name and its result, in the order written."""
        return tuple((key, value) for key, value in self.stated.items() if key not in ("test", "passed"))

    @property
    def power(self) -> Mapping[str, Any]:
        found = self.stated.get("power")
        return found if isinstance(found, Mapping) else {}

    @property
    def seeds_note(self) -> str:
        return _text(self.stated.get("seeds_note"))

    @property
    def notice(self) -> str:
        return _text(self.stated.get("notice"))

    @property
    def step_points(self) -> bool:
        """Whether it is a steps test that names its points by step, rank and quantity (a verdict
        written before those names states only the step)."""
        return self.kind in (EXACT, TOLERANCE) and "max_deviation_rank" in self.stated

    @property
    def first_outside(self) -> tuple[Any, Any, Any]:
        """The first point outside: its step (None: none), rank and quantity, as stated."""
        return self.stated.get("first_outside"), self.stated.get("first_outside_rank"), self.stated.get("first_outside_quantity")

    @property
    def largest(self) -> tuple[Any, Any, Any, Any]:
        """The largest difference (None: no finite value in the rebuild), its step (None: not
        stated), rank and quantity, as stated."""
        found = self.stated
        return found.get("max_deviation"), found.get("max_deviation_step"), found.get("max_deviation_rank"), found.get("max_deviation_quantity")

    @property
    def quantities(self) -> tuple[Any, ...] | None:
        """The quantities a steps test judged (None: not stated)."""
        found = self.stated.get("quantities")
        return tuple(found) if isinstance(found, tuple) else None

    @property
    def tolerance(self) -> tuple[Any, Any]:
        """A steps test's abs and rel as stated (0.0 where not stated; not checked to be numbers)."""
        return self.stated.get("abs", 0.0), self.stated.get("rel", 0.0)


def _text(value: Any) -> str:
    return str(value) if value else ""
