"""Seed statistics the verdict, `validate` and the planner share, in plain Python (the core runs
without the scientific stack).

One test for every number of rebuild seeds m: a two-sided two-sample t on the means, pooled
(under "the build reproduces" both samples come from one distribution, so one variance), widened
by half the metric's resolution:

    |mean(rebuilt) - mean(reference)| <= t(1 - α/2, n + m - 2) · s_p · sqrt(1/n + 1/m) + r/2

At m = 1 the pooled s is the reference's own s and this is the t prediction interval
mean ± t(1 - α/2, n - 1) · s · sqrt(1 + 1/n) + r/2. Under normal seed noise its false-fail rate
is α for every n and m; its power at a shift δ is exact too, integrated here over the
distribution of s_p (with r = 0 it is the noncentral t's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reprogate.core.tdist import t_quantile

POWER = 0.8  # the power a shift is called detectable at
MAX_PLANNED_SEEDS = 200


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, sd


def pooled_sd(reference: Sequence[float], rebuilt: Sequence[float]) -> float:
    n, m = len(reference), len(rebuilt)
    _, sx = mean_sd(reference)
    _, sy = mean_sd(rebuilt)
    return math.sqrt(((n - 1) * sx * sx + (m - 1) * sy * sy) / (n + m - 2))


def bound(n: int, m: int, sd: float, alpha: float, resolution: float = 0.0) -> float:
    """The largest |difference of means| the test accepts (at m = 1: the prediction interval's
    half width)."""
    return t_quantile(1 - alpha / 2, n + m - 2) * sd * math.sqrt(1 / n + 1 / m) + resolution / 2


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def power(n: int, m: int, shift: float, sigma: float, alpha: float, resolution: float = 0.0) -> float:
    """The chance the test fails a build whose mean moved by `shift`, seed noise sigma.

    The difference D ~ N(shift, σ²k²), k = sqrt(1/n + 1/m), is rejected beyond
    c = t·σ·u·k + r/2 where u = s_p/σ ~ chi(df)/sqrt(df): Simpson's rule over u."""
    df = n + m - 2
    k = math.sqrt(1 / n + 1 / m)
    if sigma <= 0:
        return 1.0 if abs(shift) > resolution / 2 else 0.0
    t = t_quantile(1 - alpha / 2, df)
    spread = sigma * k

    def rejected(u: float) -> float:
        c = t * sigma * u * k + resolution / 2
        return 1 - _normal_cdf((c - shift) / spread) + _normal_cdf((-c - shift) / spread)

    return _expected_over_sd(df, rejected)


def _expected_over_sd(df: int, chance: Callable[[float], float]) -> float:
    """E[chance(u)] for u = s/σ of a sample variance with df degrees of freedom (u·sqrt(df) is
    chi-distributed): Simpson's rule over the few units around sqrt(df) where chi lives."""
    centre = math.sqrt(df)
    low, high = max(0.0, centre - 9.0), centre + 9.0
    steps = 600
    width = (high - low) / steps
    log_norm = (1 - df / 2) * math.log(2) - math.lgamma(df / 2)
    total = 0.0
    for i in range(steps + 1):
        chi = low + i * width
        if chi <= 0 and df != 1:
            continue  # the chi density is 0 at 0 for df > 1 (and finite, sqrt(2/π), for df = 1)
        density = math.exp(log_norm - chi * chi / 2) if df == 1 else math.exp(log_norm + (df - 1) * math.log(chi) - chi * chi / 2)
        weight = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += weight * density * chance(chi / centre)
    return min(1.0, max(0.0, total * width / 3))


def minimum_detectable_shift(n: int, m: int, sigma: float, alpha: float, target: float = POWER, resolution: float = 0.0) -> float:
    """The smallest shift the test catches with probability `target` (bisection on `power`)."""
    if sigma <= 0:
        return resolution / 2
    if not (math.isfinite(sigma) and math.isfinite(resolution)):
        return math.inf
    low, high = 0.0, sigma
    while power(n, m, high, sigma, alpha, resolution) < target:
        high *= 2
        if high > 1e12 * (sigma + resolution):  # power never reaches the target (a degenerate input): no finite shift does
            return math.inf
    for _ in range(40):
        middle = (low + high) / 2
        if power(n, m, middle, sigma, alpha, resolution) < target:
            low = middle
        else:
            high = middle
    return high


def seeds_needed(n: int, sigma: float, shift: float, alpha: float, target: float = POWER, resolution: float = 0.0, most: int = MAX_PLANNED_SEEDS) -> int | None:
    """The fewest rebuild seeds m that catch `shift` with probability `target`; None when no m up
    to `most` does (the reference's own n then limits what any rebuild can see)."""
    if power(n, most, shift, sigma, alpha, resolution) < target:
        return None
    low, high = 1, most
    while low < high:  # power grows with m
        middle = (low + high) // 2
        if power(n, middle, shift, sigma, alpha, resolution) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def tost_pass_chance(n: int, m: int, sigma: float, margin: float, alpha: float) -> float:
    """The chance that a build which reproduces exactly (no shift) passes the equivalence test:
    |D| + t(1-α, df)·s_p·k < margin (pooled, as the planner states it)."""
    df = n + m - 2
    if df < 1:
        return 0.0
    k = math.sqrt(1 / n + 1 / m)
    if sigma <= 0:
        return 1.0
    t = t_quantile(1 - alpha, df)
    spread = sigma * k

    def inside(u: float) -> float:
        room = margin - t * sigma * u * k
        return 0.0 if room <= 0 else _normal_cdf(room / spread) - _normal_cdf(-room / spread)

    return _expected_over_sd(df, inside)


@dataclass(frozen=True)
class Shape:
    """How far the reference seeds are from the normal noise the test assumes, said only when
    normal noise would rarely look like this (each test at SHAPE_ALPHA): a rule of thumb such as
    "beyond 5 MAD of the median" fires on one in five sets of five perfectly normal seeds, so it
    was a notice on every other validate that meant nothing."""

    skew: float
    outliers: int  # seeds Grubbs' test (iterated, at SHAPE_ALPHA) finds too far from the rest
    distinct: int
    skewed: bool = False  # D'Agostino's skewness test rejects symmetry at SHAPE_ALPHA (n >= 8)

    @property
    def notice(self) -> str | None:
        parts = []
        if self.skewed:
            parts.append(f"skew (skewness {self.skew:+.2f}, which normal noise gives fewer than {percent(SHAPE_ALPHA)} of the time)")
        if self.outliers:
            parts.append(f"{self.outliers} outlier(s) (Grubbs' test at {percent(SHAPE_ALPHA)})")
        if not parts:
            return None
        return (
            "the reference seeds show " + " and ".join(parts) + ": the normal-theory error rate may be exceeded; "
            "rerun more reference seeds, or judge a positive metric on a log scale"
        )


SHAPE_ALPHA = 0.01  # how often normal seeds may draw a notice about their shape
SKEW_MIN_SEEDS = 8  # D'Agostino's transformation holds from 8 values; fewer tell nothing of skew


def _skewness(values: Sequence[float]) -> float:
    n = len(values)
    mean = sum(values) / n
    m2 = sum((v - mean) ** 2 for v in values) / n
    return (sum((v - mean) ** 3 for v in values) / n) / m2**1.5 if m2 > 0 else 0.0


def _skew_z(g1: float, n: int) -> float:
    """D'Agostino's normal approximation of the sample skewness of n normal values."""
    y = g1 * math.sqrt((n + 1) * (n + 3) / (6.0 * (n - 2)))
    beta2 = 3.0 * (n * n + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1.0 + math.sqrt(2.0 * (beta2 - 1.0))
    delta = 1.0 / math.sqrt(0.5 * math.log(w2))
    alpha = math.sqrt(2.0 / (w2 - 1.0))
    return delta * math.asinh(y / alpha)


def _grubbs_outliers(values: Sequence[float], alpha: float) -> int:
    """Seeds Grubbs' two-sided test rejects one by one (the farthest from the mean first) while
    three or more remain; exact at `alpha` for normal values."""
    rest = list(values)
    found = 0
    while len(rest) >= 3:
        n = len(rest)
        mean, sd = mean_sd(rest)
        if sd <= 0:
            break
        far = max(rest, key=lambda v: abs(v - mean))
        t = t_quantile(1.0 - alpha / (2 * n), n - 2)
        critical = (n - 1) / math.sqrt(n) * math.sqrt(t * t / (n - 2 + t * t))
        if abs(far - mean) / sd <= critical:
            break
        rest.remove(far)
        found += 1
    return found


def shape(values: Sequence[float]) -> Shape:
    n = len(values)
    skew = _skewness(values) if n >= 3 else 0.0
    skewed = n >= SKEW_MIN_SEEDS and abs(_skew_z(skew, n)) > -_normal_quantile(SHAPE_ALPHA / 2)
    return Shape(skew, _grubbs_outliers(values, SHAPE_ALPHA), len(set(values)), skewed)


def _normal_quantile(p: float) -> float:
    """The standard normal quantile, by bisection on the CDF (plain Python, like the rest)."""
    low, high = -40.0, 40.0
    for _ in range(200):
        middle = (low + high) / 2
        if _normal_cdf(middle) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def grid_step(values: Sequence[float]) -> float:
    """The evaluation grid the values sit on: the smallest gap between distinct values when every
    gap is a whole multiple of it (accuracy on N examples, a step count every K steps); 0 for
    values that show no grid. One gap is no evidence of a grid (any two numbers have one): it
    takes two gaps, or a value seen twice."""
    distinct = sorted(set(values))
    if len(distinct) < 2 or (len(distinct) == 2 and len(values) == 2):
        return 0.0
    gaps = [b - a for a, b in zip(distinct, distinct[1:], strict=False)]
    step = min(gaps)
    if step <= 0:
        return 0.0
    scale = max(abs(v) for v in distinct) or 1.0
    for gap in gaps:
        multiple = gap / step
        if abs(multiple - round(multiple)) > 1e-6 * max(1.0, multiple) + 1e-12 * scale / step:
            return 0.0
    return float(f"{step:.12g}")  # 0.52 - 0.5 is 0.020000000000000018 in binary


def declared_shift(metric: object, mean: float) -> float | None:
    """The shift `contract.metric.detect` says the test must catch, in the metric's units
    (`relative` is a share of the reference mean's magnitude); None where none is declared."""
    detect = metric.get("detect") if isinstance(metric, dict) else None
    if not isinstance(detect, dict):
        return None
    for key, scale in (("absolute", 1.0), ("relative", abs(mean))):
        value = detect.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value) * scale
    return None


def target_power(metric: object) -> float:
    value = metric.get("detect", {}).get("power") if isinstance(metric, dict) and isinstance(metric.get("detect"), dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1 else POWER


def percent(share: float) -> str:
    """A share as an exact percentage: 0.95 -> "95 %", 0.975 -> "97.5 %"."""
    return f"{round(share * 100, 6):g} %"


__all__ = [
    "MAX_PLANNED_SEEDS",
    "POWER",
    "Shape",
    "bound",
    "declared_shift",
    "grid_step",
    "mean_sd",
    "minimum_detectable_shift",
    "percent",
    "pooled_sd",
    "power",
    "seeds_needed",
    "shape",
    "target_power",
    "tost_pass_chance",
]
