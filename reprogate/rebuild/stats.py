"""The statistics behind a verdict, each stating its test, α, margin, n and m.

- Step comparison: |a - b| <= abs + rel * |b| (`within`) at each compared (step, rank) point;
  rebuild/step_figures.py finds the first point outside and the largest deviation.
- Bitwise: digests equal or not; one unequal tensor fails however close the numbers are.
- Metric, any number m of rebuild seeds: the two-sided two-sample t on the means of
  core/seedstats.py, whose α is the false-fail rate of a build that reproduces. At m = 1 it is
  the t prediction interval predeclared from the n reference seeds,
  mean ± t(1-α/2, n-1) · s · sqrt(1 + 1/n); at every m it is widened by half the metric's
  declared resolution on each side (a value measured on a finite eval set, or every K steps, is
  quantised; without this the test is stricter than the measurement and users ask for bypasses).
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

from reprogate.core.seedstats import bound, mean_sd, pooled_sd
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

    def contains(self, value: float) -> bool:
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


def prediction_interval(values: Sequence[float], alpha: float = 0.05, resolution: float = 0.0) -> Interval:
    """Where one new run should land with probability 1-α, given n reference runs."""
    n = len(values)
    if n < 2:
        raise ValueError("a prediction interval needs at least 2 reference seeds")
    mean, sd = mean_sd(values)
    half = bound(n, 1, sd, alpha, resolution)
    return Interval("prediction", mean - half, mean + half, alpha, n, mean, sd, resolution)


@dataclass
class Difference:
    """The two-sample t on the means: passed when |difference| <= limit."""

    passed: bool
    difference: float
    limit: float
    sd_pooled: float
    df: int
    p_value: float
    alpha: float
    resolution: float
    n: int
    m: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def difference_test(reference: Sequence[float], rebuilt: Sequence[float], alpha: float, resolution: float = 0.0) -> Difference:
    """Do m rebuild seeds come from the reference's distribution (two-sided, pooled, level α)?
    The p value is of the difference beyond half the resolution (1 when within it)."""

    n, m = len(reference), len(rebuilt)
    if n < 2 or m < 1:
        raise ValueError("the two-sample t needs at least 2 reference seeds and 1 rebuild seed")
    difference = mean_sd(rebuilt)[0] - mean_sd(reference)[0]
    sd = pooled_sd(reference, rebuilt)
    limit = bound(n, m, sd, alpha, resolution)
    excess = max(0.0, abs(difference) - resolution / 2)
    se = sd * math.sqrt(1 / n + 1 / m)
    p_value = 1.0 if excess == 0 else (0.0 if se == 0 else 2 * (1 - t_cdf(excess / se, n + m - 2)))
    return Difference(abs(difference) <= limit, difference, limit, sd, n + m - 2, p_value, alpha, resolution, n, m)


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
