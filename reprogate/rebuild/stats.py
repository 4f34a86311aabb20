"""The statistics behind a verdict, each stating its test, α, margin, n and m.

- Step comparison: |a - b| <= abs + rel * |b| (`within`) at each compared (step, rank) point;
  rebuild/step_figures.py finds the first point outside and the largest deviation.
- Bitwise: digests equal or not; one unequal tensor fails however close the numbers are.
- Metric, any number m of rebuild seeds: the test core/seedstats.choose picks from the record's
  `test` and m, whose α is the false-fail rate of a build that reproduces. The two-sided
  two-sample t on the means (at m = 1 the t prediction interval predeclared from the n
  reference seeds, mean ± t(1-α/2, n-1) · s · sqrt(1 + 1/n)), the metric's resolution entering
  as `test` says; or, for `test: seeds` at m >= 3 on a fine grid (`test: robust`: whenever the
  reference has a spread), the Wilcoxon rank-sum test. `fail_on: worse` makes each one-sided.
  Every comparison has the rounding floor (core/seedstats.floor): equal seeds always pass.
- Metric, opt-in `test: equivalence`: Welch's two one-sided tests for equivalence within ±margin
  at level α, equivalently the (1-2α) Welch interval of the difference inside (-margin, margin).
  Its α bounds the false *pass* at the margin; a good build needs enough seeds to pass it, and
  the verdict states how likely that was.
tests/rebuild/test_stats.py holds these to scipy's own Welch test and confidence intervals (scipy is a test dependency only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from reprogate.core.seedstats import Kind, Side, bound, choose, floor, interval_bounds, mean_sd, pooled_sd, rank_sum_p
from reprogate.core.tdist import t_cdf, t_quantile


def within(a: float, b: float, abs_tol: float, rel_tol: float) -> bool:
    return abs(a - b) <= abs_tol + rel_tol * abs(b)


@dataclass
class Interval:
    method: str
    low: float
    high: float
    alpha: float
    n: int
    mean: float
    sd: float
    resolution: float = 0.0
    side: Side = "both"

    def contains(self, value: float) -> bool:
        """Whether the value passes: inside, or (one-sided) not beyond the failing side's bound."""
        if self.side == "higher":
            return value <= self.high
        if self.side == "lower":
            return value >= self.low
        return self.low <= value <= self.high

    def as_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "low": round(self.low, 10),
            "high": round(self.high, 10),
            "alpha": self.alpha,
            "n": self.n,
            "mean": round(self.mean, 10),
            "sd": round(self.sd, 10),
        }
        return out


def prediction_interval(values: Sequence[float], alpha: float = 0.05, resolution: float = 0.0, test: str | None = None, side: Side = "both") -> Interval:
    """Where one new run should land with probability 1-α, given n reference runs (one-sided:
    not beyond the failing side's bound)."""
    n = len(values)
    if n < 2:
        raise ValueError("a prediction interval needs at least 2 reference seeds")
    mean, sd = mean_sd(values)
    low, high = interval_bounds(values, alpha, resolution, test, side)
    return Interval("prediction", low, high, alpha, n, mean, sd, resolution, side)


@dataclass
class Difference:
    """A test of m rebuild seeds against the n reference seeds: passed when |difference| <= limit
    (the t; the limit is the rounding floor included), or when the rank-sum p value exceeds α."""

    passed: bool
    difference: float
    limit: float | None  # None for the rank-sum test, which has no limit on the difference
    sd_pooled: float
    df: int
    p_value: float
    alpha: float
    resolution: float
    n: int
    m: int
    kind: Kind = "t"
    reason: str = ""
    side: Side = "both"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def difference_test(
    reference: Sequence[float], rebuilt: Sequence[float], alpha: float, resolution: float = 0.0, test: str | None = None, side: Side = "both"
) -> Difference:
    """Do m rebuild seeds come from the reference's distribution (level α; two-sided, or with
    `side` higher / lower only a rebuild that way fails)? The test is the one `choose` names for
    the record's `test` and m. For the t, the p value is of the difference beyond the widening
    and the floor (1 within them)."""

    n, m = len(reference), len(rebuilt)
    if n < 2 or m < 1:
        raise ValueError("the two-sample t needs at least 2 reference seeds and 1 rebuild seed")
    mean_x, sd_x = mean_sd(reference)
    mean_y = mean_sd(rebuilt)[0]
    difference = mean_y - mean_x
    sd = pooled_sd(reference, rebuilt)
    choice = choose(test, m, sd_x, resolution, n)
    if not all(math.isfinite(v) for v in rebuilt):  # a diverged seed is no metric: never a rank among the others
        reason = "a rebuild seed's metric is not a finite number"
        return Difference(False, difference, None, sd, n + m - 2, 0.0, alpha, resolution, n, m, choice.kind, reason, side)
    if choice.kind == "rank-sum":
        p_value = rank_sum_p(reference, rebuilt, side)
        return Difference(p_value > alpha, difference, None, sd, n + m - 2, p_value, alpha, resolution, n, m, "rank-sum", choice.reason, side)
    rounding = floor(mean_x, mean_y)
    limit = bound(n, m, sd, alpha, resolution, choice.widening, side != "both") + rounding
    half = resolution / 2 if choice.widening == "half-step" else 0.0
    toward = {"both": abs(difference), "higher": difference, "lower": -difference}[side]  # the difference the failing way
    excess = max(0.0, toward - half - rounding)
    se = sd * math.sqrt(1 / n + 1 / m)
    tail = 1 - t_cdf(excess / se, n + m - 2) if se > 0 else 0.0
    p_value = 1.0 if excess == 0 else (tail if side != "both" else 2 * tail)
    return Difference(toward <= limit, difference, limit, sd, n + m - 2, p_value, alpha, resolution, n, m, choice.kind, choice.reason, side)


@dataclass
class Tost:
    equivalent: bool
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    df: float
    alpha: float
    margin: float
    n: int
    m: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def welch_tost(reference: Sequence[float], rebuilt: Sequence[float], margin: float, alpha: float = 0.05) -> Tost:
    """Is the rebuilt mean within ±margin of the reference mean (Welch TOST at level α)? Student's
    t at Welch's (fractional) degrees of freedom from core/tdist.py: no scientific stack needed."""
    n, m = len(reference), len(rebuilt)
    if n < 2 or m < 2:
        raise ValueError("Welch TOST needs at least 2 seeds on each side")
    mx, sx = mean_sd(reference)
    my, sy = mean_sd(rebuilt)
    difference = my - mx
    var = sx * sx / n + sy * sy / m
    if var == 0:  # both sides exactly constant: the difference is known exactly
        inside = abs(difference) < margin
        return Tost(inside, difference, difference, difference, 0.0 if inside else 1.0, math.inf, alpha, margin, n, m)
    se = math.sqrt(var)
    df = var**2 / ((sx * sx / n) ** 2 / (n - 1) + (sy * sy / m) ** 2 / (m - 1))
    t_low = (difference + margin) / se
    t_high = (difference - margin) / se
    p = max(t_cdf(-t_low, df), t_cdf(t_high, df))  # upper tail by symmetry: no 1 - cdf cancellation
    crit = t_quantile(1 - alpha, df)
    return Tost(p < alpha, difference, difference - crit * se, difference + crit * se, p, df, alpha, margin, n, m)
