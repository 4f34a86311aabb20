"""Each comparison a rebuild stage made, stated fully: what was compared, by which test, with what
α, n, m and power, and whether it passed. The steps and metric stages return one with their
result; the verdict lists them in stage order and the claim repeats them in words."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
