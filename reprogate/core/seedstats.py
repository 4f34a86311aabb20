"""Seed statistics the verdict, `validate` and the planner share, in plain Python (the core runs
without the scientific stack).

Two tests, chosen by `contract.metric.test` before any rebuild runs:

- `difference` (what a record that names no test gets, as it did before 0.6): a two-sided
  two-sample t on the means, pooled (under "the build reproduces" both samples come from one
  distribution, so one variance), widened by half the metric's resolution:

      |mean(rebuilt) - mean(reference)| <= t(1 - α/2, n + m - 2) · s_p · sqrt(1/n + 1/m) + r/2

  At m = 1 the pooled s is the reference's own s and this is the t prediction interval.
- `seeds` (what `init` wrote in 0.6's first builds; kept for the records that name it): the rule `choose` states. The same pooled t, but the
  resolution enters as a variance: at m = 1 the prediction interval's s² is widened by r²/24,
  half of Sheppard's r²/12 grouping variance (the one rebuild value is itself a grid point); at
  m >= 2 the mean of several grid values carries its grouping variance already, so s_p is used
  as measured. Where the reference lies on a grid no coarser than its spread, m >= 3 seeds are
  judged by the Wilcoxon rank-sum test instead (exact, given ties), which a seed that did not
  converge cannot turn into a failure by itself. The half-step widening of `difference` makes a
  quantised metric's false-fail rate fall to 1-2 % and costs power (benchmarks/calibration.py).
- `robust` (what `init` writes): `seeds` made to hold α on skewed seeds, coarse grids and seeds
  that do not converge. At m = 1 the t prediction interval (the resolution not added) widened to
  hold the reference seeds' own central band [x_(j), x_(n+1-j)], j = floor(2α(n + 1)) (from
  n = 9 at α = 5 %): a new seed lies outside that band with probability 2j/(n + 1) <= 4α
  whatever the seeds' distribution, so the t decides only beyond values the reference reached
  itself. At m = 2 the pooled t; from m = 3 the rank-sum test where `seeds` runs it (a spread,
  a grid no coarser than it) and, from RANK_ANY_GRID_SEEDS reference seeds, on a coarse grid
  too: there a seed that did not converge is one highest rank, where it pulls the t's mean far
  off (with fewer reference seeds the tied ranks leave the exact test too few splits to hold α).

`contract.metric.fail_on: worse` makes any of them one-sided: only a rebuild worse than the
reference in `direction` fails, at the same α, so a shift the worse way is caught with more
power; a record without it is two-sided (`failing_side`).

Every comparison has a floor: a difference of a few units in the last place of the means'
magnitude is rounding, never a shift (ten equal values average to a number a few ULPs from
each of them). Power is stated as an assurance: the power at the seed spread σ that the n
reference seeds' s does not exceed with the same confidence (`assured_sigma`), so that over
records, a share of at least the stated power reaches the power stated.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from reprogate.core.levels import TRACE_LEVELS
from reprogate.core.record import Detect, Metric
from reprogate.core.tdist import chi2_quantile, t_quantile

POWER = 0.8  # the power a shift is called detectable at
MAX_PLANNED_SEEDS = 200
FLOOR_ULPS = 16  # a difference this many units in the last place of the means, or less, is rounding
RANK_EFFICIENCY = 0.7  # the rank-sum test is planned as the t at sqrt(0.7) of the shift: below its 3/π, as its few splits at m = 3 demand
EXACT_RANK_WORK = 4_000_000  # beyond this many steps of counting, the rank-sum p value is the normal approximation
SHEPPARD_SHARE = 0.5  # at m = 1 (test: seeds) the prediction interval's variance gains this share of r²/12

TestName = Literal["difference", "seeds", "robust", "equivalence"]
Kind = Literal["prediction", "t", "rank-sum"]
Widening = Literal["half-step", "variance", "none"]  # how the resolution r enters the t's bound
Side = Literal["both", "higher", "lower"]  # which deviation of the rebuild fails: either (two-sided), or only a higher / a lower one
TESTS: tuple[TestName, ...] = ("difference", "seeds", "robust", "equivalence")
RANK_ANY_GRID_SEEDS = 20  # test: robust judges m >= 3 by ranks on a coarse grid too from this many reference seeds
MAX_MAGNITUDE = 1e100  # the largest |metric| the statistics take: the shape's cubes and the power's squares of it stay finite floats
BAND_SHARE = 2.0  # test: robust at m = 1 holds the reference's band [x_(j), x_(n+1-j)], j = floor(BAND_SHARE · α · (n + 1))


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """The mean and sample sd, exactly the value and 0 for seeds that are all alike (a sum and a
    division would leave them a few ULPs apart)."""
    n = len(values)
    if n and all(v == values[0] for v in values):
        return float(values[0]), 0.0
    # computed on the values scaled by a power of two (exact) so that no square overflows: a
    # schema-valid metric of 1e160 squares past the largest float, and its sd is still a float
    scale = _scale(values)
    scaled = [v / scale for v in values]
    mean = math.fsum(scaled) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in scaled) / (n - 1)) if n > 1 else 0.0
    return mean * scale, sd * scale


def _scale(values: Iterable[float]) -> float:
    """A power of two near the largest magnitude (1 for none or zeros): dividing by it is exact
    and brings every value to at most 1, so sums of squares stay finite."""
    largest = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    return math.ldexp(1.0, math.frexp(largest)[1]) if largest > 0 else 1.0


def pooled_sd(reference: Sequence[float], rebuilt: Sequence[float]) -> float:
    n, m = len(reference), len(rebuilt)
    _, sx = mean_sd(reference)
    _, sy = mean_sd(rebuilt)
    scale = _scale((sx, sy))
    sx, sy = sx / scale, sy / scale
    return math.sqrt(((n - 1) * sx * sx + (m - 1) * sy * sy) / (n + m - 2)) * scale


def floor(*means: float) -> float:
    """The rounding floor of a comparison of means: FLOOR_ULPS units in the last place of the
    largest magnitude (equal seeds average to a value a few ULPs away from each of them)."""
    return FLOOR_ULPS * math.ulp(max((abs(v) for v in means if math.isfinite(v)), default=0.0))


@dataclass(frozen=True)
class Choice:
    """Which test judges m rebuild seeds, and why: decided from the record and m alone, before
    any rebuild value is seen."""

    kind: Kind
    widening: Widening
    reason: str
    band: bool = False  # m = 1 under test: robust: the interval also holds the reference seeds' central band


def choose(test: str | None, m: int, sd: float, resolution: float, n: int = 0) -> Choice:
    """The rule `contract.metric.test` names. `difference` (or none): the t with the half-step
    widening at every m. `seeds`: the rank-sum test at m >= 3 when the reference has a spread and
    sits on a grid no coarser than it (0 < s, r <= s); the t otherwise, its resolution as a
    variance at m = 1. `robust`: the rank-sum test at m >= 3 where `seeds` runs it and, from
    n = RANK_ANY_GRID_SEEDS reference seeds, on a coarse grid too; the pooled t otherwise; at
    m = 1 the t prediction interval (no widening) that also holds the reference's central band.
    n, the reference seeds, is part of the record (0: not known, fewer than any threshold)."""
    if test == "robust":
        if m == 1:
            why = "test: robust, one rebuild seed: the t prediction interval, widened to hold the reference seeds' central band"
            return Choice("prediction", "none", why, band=True)
        if m >= 3 and 0 < sd and (resolution <= sd or n >= RANK_ANY_GRID_SEEDS):
            grid = "is not coarser than the reference sd" if resolution <= sd else f"is coarser than the reference sd, with n = {n} >= {RANK_ANY_GRID_SEEDS}"
            return Choice("rank-sum", "none", f"test: robust, m = {m} >= 3 and the resolution ({resolution:g}) {grid}: the rank-sum test")
        if m < 3:
            why = "fewer than 3 rebuild seeds"
        elif sd <= 0:
            why = "the reference seeds show no spread"
        else:
            why = f"the resolution ({resolution:g}) is coarser than the reference sd ({sd:.4g}) with n = {n} < {RANK_ANY_GRID_SEEDS}: ranks would tie"
        return Choice("t", "none", f"test: robust, {why}: the two-sample t")
    if test in (None, "difference", "equivalence"):
        return Choice("prediction" if m == 1 else "t", "half-step", "contract.metric.test: difference (the t widened by half the resolution)")
    if m >= 3 and 0 < sd and resolution <= sd:
        return Choice("rank-sum", "none", f"test: seeds, m = {m} >= 3 and the resolution ({resolution:g}) is not coarser than the reference sd ({sd:.4g})")
    if m == 1:
        return Choice("prediction", "variance", "test: seeds, one rebuild seed: the prediction interval, its variance widened by r²/24")
    if m < 3:
        why = "fewer than 3 rebuild seeds"
    elif sd <= 0:
        why = "the reference seeds show no spread"
    else:
        why = f"the resolution ({resolution:g}) is coarser than the reference sd ({sd:.4g}): ranks would tie"
    return Choice("t", "none", f"test: seeds, {why}: the two-sample t")


def effective_sd(sd: float, m: int, resolution: float, widening: Widening) -> float:
    """The spread the t's bound is computed from: s itself, or at m = 1 with `variance`
    widening sqrt(s² + SHEPPARD_SHARE · r²/12)."""
    if widening == "variance" and m == 1:
        return math.hypot(sd, math.sqrt(SHEPPARD_SHARE / 12) * resolution)  # hypot: no square overflows
    return sd


def t_level(alpha: float, one_sided: bool) -> float:
    """The t quantile's level: 1 - α/2 for a two-sided test, 1 - α for a one-sided one."""
    return 1 - alpha if one_sided else 1 - alpha / 2


def bound(n: int, m: int, sd: float, alpha: float, resolution: float = 0.0, widening: Widening = "half-step", one_sided: bool = False) -> float:
    """The largest difference of means the t accepts (at m = 1: the prediction interval's half
    width), before the rounding floor: either way, or (`one_sided`) the failing way."""
    spread = effective_sd(sd, m, resolution, widening)
    return t_quantile(t_level(alpha, one_sided), n + m - 2) * spread * math.sqrt(1 / n + 1 / m) + (resolution / 2 if widening == "half-step" else 0.0)


def reference_band(values: Sequence[float], alpha: float) -> tuple[float, float] | None:
    """The reference seeds' central band [x_(j), x_(n+1-j)], j = floor(BAND_SHARE · α · (n + 1)):
    a new seed from the same distribution lies beyond it with probability 2j/(n + 1) (j/(n + 1)
    on one side), whatever that distribution; None where j < 1 (fewer than 9 seeds at α = 5 %)."""
    n = len(values)
    j = math.floor(BAND_SHARE * alpha * (n + 1) + 1e-9)
    if j < 1 or n < 2 * j:
        return None
    ordered = sorted(values)
    return ordered[j - 1], ordered[n - j]


def band_minimum(alpha: float) -> int:
    """The fewest reference seeds that give `test: robust` its band at m = 1 (9 at α = 5 %)."""
    n = max(2, math.ceil(1 / (BAND_SHARE * alpha)) - 2)  # j = floor(BAND_SHARE·α·(n + 1)) reaches 1 at or just above this
    while reference_band([0.0] * n, alpha) is None:
        n += 1
    return n


TAIL_SEEDS = 3  # the judged rebuild seeds init writes instead of one where the reference has no band (the rank-sum test from here)


def holds_tails(n: int, m: int, alpha: float) -> bool:
    """Whether n reference and m judged rebuild seeds keep the false-fail rate near α on skewed or
    sometimes non-converging seeds, not on normal ones alone: one rebuild seed needs the
    reference's band (n >= band_minimum). Below that, a rebuild seed from a tail the few reference
    seeds did not show fails, whatever the rule (no distribution-free interval from 5 values
    reaches 95 %); benchmarks/calibration.py measures 8.5 % at n = 5 on skewed MLPerf sets."""
    return m != 1 or n >= band_minimum(alpha)


def interval_half_width(values: Sequence[float], alpha: float, resolution: float = 0.0, test: str | None = None, one_sided: bool = False) -> float:
    """The half width of the t part of the prediction interval (the test at m = 1), the rounding
    floor included."""
    mean, sd = mean_sd(values)
    return bound(len(values), 1, sd, alpha, resolution, choose(test, 1, sd, resolution).widening, one_sided) + floor(mean)


def interval_bounds(values: Sequence[float], alpha: float, resolution: float = 0.0, test: str | None = None, side: Side = "both") -> tuple[float, float]:
    """The prediction interval `reprogate interval` stores (the test at m = 1): what the rebuild
    applies and what `validate` recomputes. Mean ± the t's half width, which under `test: robust`
    also holds the reference's central band. A one-sided record (`side` higher or lower) applies
    only the bound on its failing side; the other is the same distance from the mean, shown only."""
    mean, sd = mean_sd(values)
    half = interval_half_width(values, alpha, resolution, test, side != "both")
    low, high = mean - half, mean + half
    band = reference_band(values, alpha) if choose(test, 1, sd, resolution).band else None
    if band is not None:
        low, high = min(low, band[0]), max(high, band[1])
    return low, high


def _field(metric: object, name: str) -> object:
    """A field of `contract.metric`, typed (`core.record.Metric`) or, from readers not yet typed, a mapping."""
    if isinstance(metric, Metric):
        return getattr(metric, name)
    return metric.get(name) if isinstance(metric, dict) else None


def metric_test(metric: object) -> str | None:
    """`contract.metric.test` as the rule reads it: None (the record names none: `difference`)."""
    value = _field(metric, "test")
    return value if isinstance(value, str) and value in TESTS else None


FAIL_ON = ("any", "worse")


def failing_side(metric: object) -> Side:
    """Which deviation of the rebuild fails: `fail_on: worse` with `direction: lower` fails only
    a higher metric, with `direction: higher` only a lower one; anything else (a record without
    `fail_on`, as before) either way. `validate` refuses `fail_on: worse` without a direction."""
    if _field(metric, "fail_on") != "worse":
        return "both"
    direction = _field(metric, "direction")
    return "higher" if direction == "lower" else ("lower" if direction == "higher" else "both")


def side_words(side: Side, name: str = "the metric") -> str:
    """The sidedness as the verdict says it."""
    if side == "both":
        return "two-sided: a rebuild that moved either way can fail"
    return f"one-sided (fail_on: worse): only a {side} {name} than the reference's fails; a {'lower' if side == 'higher' else 'higher'} one passes"


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def power(
    n: int,
    m: int,
    shift: float,
    sigma: float,
    alpha: float,
    resolution: float = 0.0,
    test: str | None = None,
    reference_sd: float | None = None,
    one_sided: bool = False,
) -> float:
    """The chance the test `choose` picks fails a build whose mean moved by `shift`, seed noise
    sigma (`reference_sd`, the reference's s, decides the rule; sigma when not given).

    For the t: the difference D ~ N(shift, σ²k²), k = sqrt(1/n + 1/m), is rejected beyond the
    bound c(u) computed from s_p = σ·u, u ~ chi(df)/sqrt(df): Simpson's rule over u. For the
    rank-sum test: the t's power at sqrt(RANK_EFFICIENCY) of the shift (its asymptotic
    efficiency under normal noise is 3/π ≈ 0.95; with m = 3 seeds and its few splits it is
    nearer 0.7, benchmarks/calibration.py measures it). `one_sided`: the shift is the failing
    way and only that side's bound, at t(1 - α), rejects. Under `test: robust` at m = 1 the
    interval's band is not counted: it widens the interval only where the reference's own
    seeds reach beyond the t, which normal noise seldom does (benchmarks/calibration.py
    measures the power the record states against the rule's own)."""
    choice = choose(test, m, sigma if reference_sd is None else reference_sd, resolution, n)
    widening = choice.widening
    if choice.kind == "rank-sum":
        shift *= math.sqrt(RANK_EFFICIENCY)
    df = n + m - 2
    k = math.sqrt(1 / n + 1 / m)
    if sigma <= 0:
        return 1.0 if abs(shift) > power_reach(n, m, alpha, resolution, widening, one_sided) else 0.0
    t = t_quantile(t_level(alpha, one_sided), df)
    spread = sigma * k
    half = resolution / 2 if widening == "half-step" else 0.0
    extra = SHEPPARD_SHARE * resolution * resolution / 12 if widening == "variance" and m == 1 else 0.0

    def rejected(u: float) -> float:
        c = t * math.sqrt((sigma * u) ** 2 + extra) * k + half
        beyond = 1 - _normal_cdf((c - abs(shift)) / spread)
        return beyond if one_sided else beyond + _normal_cdf((-c - abs(shift)) / spread)

    return _expected_over_sd(df, rejected)


def _expected_over_sd(df: int, chance: Callable[[float], float]) -> float:
    """E[chance(u)] for u = s/σ of a sample variance with df degrees of freedom (u·sqrt(df) is
    chi-distributed): Simpson's rule over the few units around sqrt(df) where chi lives."""
    total = sum(weight * chance(u) for u, weight in _chi_nodes(df))
    return min(1.0, max(0.0, total))


@functools.lru_cache(maxsize=512)
def _chi_nodes(df: int) -> tuple[tuple[float, float], ...]:
    """Simpson's nodes u and weights (the chi density included) for `_expected_over_sd`, once per df."""
    centre = math.sqrt(df)
    low, high = max(0.0, centre - 9.0), centre + 9.0
    steps = 600
    width = (high - low) / steps
    log_norm = (1 - df / 2) * math.log(2) - math.lgamma(df / 2)
    nodes = []
    for i in range(steps + 1):
        chi = low + i * width
        if chi <= 0 and df != 1:
            continue  # the chi density is 0 at 0 for df > 1 (and finite, sqrt(2/π), for df = 1)
        density = math.exp(log_norm - chi * chi / 2) if df == 1 else math.exp(log_norm + (df - 1) * math.log(chi) - chi * chi / 2)
        weight = 1 if i in (0, steps) else (4 if i % 2 else 2)
        if density * weight * width / 3 > 1e-13:  # the nodes left out weigh under 1e-12 together: a third fewer to evaluate
            nodes.append((chi / centre, weight * density * width / 3))
    return tuple(nodes)


def assured_sigma(n: int, sd: float, confidence: float) -> float:
    """The seed spread σ that the reference's s (from n seeds) does not exceed with probability
    `confidence`: s·sqrt((n-1)/χ²(1-confidence, n-1)). A power computed at it is reached with at
    least that probability, whatever σ the record happened to draw its s from."""
    if sd <= 0 or n < 2:
        return sd
    return sd * math.sqrt((n - 1) / chi2_quantile(1 - confidence, n - 1))


def assured_power(n: int, m: int, shift: float, sd: float, alpha: float, resolution: float = 0.0, test: str | None = None, one_sided: bool = False) -> float:
    """The power p that the test reaches at `shift` with probability at least p, given only the
    reference's s: the fixed point of p = power(σ = assured_sigma(n, s, p)). Over records it is
    honest by construction: a share p of them has σ at or below that bound, hence power ≥ p."""

    def gap(confidence: float) -> float:
        return power(n, m, shift, assured_sigma(n, sd, confidence), alpha, resolution, test, sd, one_sided) - confidence

    low, high = 1e-4, 1 - 1e-4
    if gap(low) <= 0:
        return 0.0
    if gap(high) >= 0:
        return high
    while high - low > 1e-6:  # gap falls as the confidence rises
        middle = (low + high) / 2
        if gap(middle) > 0:
            low = middle
        else:
            high = middle
    return low


def assured_at_least(
    n: int, m: int, shift: float, sd: float, alpha: float, target: float, resolution: float = 0.0, test: str | None = None, one_sided: bool = False
) -> bool:
    """Whether assured_power(...) >= target, from one power evaluation instead of its bisection:
    the gap p - power(σ at confidence p) rises as p falls, so the fixed point is at least the
    target exactly when the power at the target's own assured σ reaches it. validate asks this of
    every record; the bisection's number is needed only where it says no."""
    if target <= 1e-4:
        return True
    if target >= 1 - 1e-4:
        return assured_power(n, m, shift, sd, alpha, resolution, test, one_sided) >= target
    return power(n, m, shift, assured_sigma(n, sd, target), alpha, resolution, test, sd, one_sided) >= target


def minimum_detectable_shift(
    n: int,
    m: int,
    sigma: float,
    alpha: float,
    target: float = POWER,
    resolution: float = 0.0,
    test: str | None = None,
    reference_sd: float | None = None,
    one_sided: bool = False,
) -> float:
    """The smallest shift the test catches with probability `target` at seed noise sigma
    (bisection on `power`); pass `assured_sigma(n, s, target)` for the shift caught at `target`
    with that much assurance."""
    if sigma <= 0:
        return power_reach(n, m, alpha, resolution, choose(test, m, 0.0, resolution).widening, one_sided)
    if not (math.isfinite(sigma) and math.isfinite(resolution)):
        return math.inf
    low, high = 0.0, sigma
    while power(n, m, high, sigma, alpha, resolution, test, reference_sd, one_sided) < target:
        high *= 2
        if high > 1e12 * (sigma + resolution):  # power never reaches the target (a degenerate input): no finite shift does
            return math.inf
    while high - low > 1e-7 * high:
        middle = (low + high) / 2
        if power(n, m, middle, sigma, alpha, resolution, test, reference_sd, one_sided) < target:
            low = middle
        else:
            high = middle
    return high


def power_reach(n: int, m: int, alpha: float, resolution: float, widening: Widening, one_sided: bool = False) -> float:
    """What a reference without spread catches: any shift beyond the bound its resolution gives."""
    return resolution / 2 if widening == "half-step" else bound(n, m, 0.0, alpha, resolution, widening, one_sided)


def seeds_needed(
    n: int,
    sigma: float,
    shift: float,
    alpha: float,
    target: float = POWER,
    resolution: float = 0.0,
    most: int = MAX_PLANNED_SEEDS,
    test: str | None = None,
    reference_sd: float | None = None,
    one_sided: bool = False,
) -> int | None:
    """The fewest rebuild seeds m that catch `shift` with probability `target` at seed noise
    sigma; None when no m up to `most` does (the reference's own n then limits what any rebuild
    can see). Power grows with m, also where the rule changes test at m = 3."""
    if power(n, most, shift, sigma, alpha, resolution, test, reference_sd, one_sided) < target:
        return None
    low, high = 1, most
    while low < high:  # power grows with m
        middle = (low + high) // 2
        if power(n, middle, shift, sigma, alpha, resolution, test, reference_sd, one_sided) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def rank_sum_p(reference: Sequence[float], rebuilt: Sequence[float], side: Side = "both") -> float:
    """The two-sided (or, `side` higher / lower, one-sided) mid-p value of the Wilcoxon rank-sum test, exact and conditional on ties (the
    permutation distribution of the rebuild seeds' mid-rank sum): the share of the C(n+m, m)
    ways to pick m of the pooled seeds whose rank sum lies farther from its mean than the
    rebuild's, plus half the share at the same distance. The mid-p keeps the false-fail rate
    near α where few splits exist (n = 5, m = 3 has 56) instead of far below it; values within
    the rounding floor of each other are one tie. Counted by dynamic
    programming over doubled mid-ranks (integers); past EXACT_RANK_WORK steps (n + m beyond
    about 60) the tie-corrected normal approximation, which is close to exact there. One-sided:
    the share of splits whose rank sum lies as far or farther the failing way (the one at the
    same sum counted half)."""
    n, m = len(reference), len(rebuilt)
    pooled = sorted([*reference, *rebuilt])
    tolerance = floor(*pooled)
    doubled: dict[int, int] = {}  # index in `pooled` -> 2·mid-rank
    start = 0
    while start < len(pooled):
        end = start
        while end + 1 < len(pooled) and pooled[end + 1] - pooled[start] <= tolerance:
            end += 1
        for i in range(start, end + 1):
            doubled[i] = start + end + 2
        start = end + 1

    def score(value: float) -> int:
        low, high = 0, len(pooled) - 1
        while low < high:  # the first pooled value not below value - tolerance
            middle = (low + high) // 2
            if pooled[middle] < value - tolerance:
                low = middle + 1
            else:
                high = middle
        return doubled[low]

    scores = [doubled[i] for i in range(len(pooled))]
    observed = sum(score(v) for v in rebuilt)
    centre = m * (n + m + 1)  # 2 · E[rank sum]
    most = sum(sorted(scores)[-m:])
    distance = abs(observed - centre)
    toward = {"both": 0, "higher": 1, "lower": -1}[side]
    if (n + m) * m * most > EXACT_RANK_WORK:  # the normal approximation, tie-corrected
        mean_square = sum(v * v for v in scores) / (n + m) - (n + m + 1) ** 2
        variance = m * n / (n + m - 1) * mean_square
        if variance <= 0:
            return 1.0
        if toward:
            return 1 - _normal_cdf(toward * (observed - centre) / math.sqrt(variance))
        return min(1.0, 2 * (1 - _normal_cdf(distance / math.sqrt(variance))))
    counts = [[0] * (most + 1) for _ in range(m + 1)]  # counts[j][s]: ways to pick j scores summing to s
    counts[0][0] = 1
    for seen, value in enumerate(scores, start=1):
        for j in range(min(seen, m), 0, -1):
            row, below = counts[j], counts[j - 1]
            for total in range(most, value - 1, -1):
                if below[total - value]:
                    row[total] += below[total - value]
    ways = counts[m]
    if toward:
        beyond = sum(count for total, count in enumerate(ways) if count and toward * (total - observed) > 0)
        at = ways[observed] if observed <= most else 0
        return (beyond + at / 2) / math.comb(n + m, m)
    beyond = sum(count for total, count in enumerate(ways) if count and abs(total - centre) > distance)
    at = sum(count for total, count in enumerate(ways) if count and abs(total - centre) == distance)
    return (beyond + at / 2) / math.comb(n + m, m)


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
    detect = _field(metric, "detect")
    if not isinstance(detect, Detect | dict):
        return None
    for key, scale in (("absolute", 1.0), ("relative", abs(mean))):
        value = getattr(detect, key) if isinstance(detect, Detect) else detect.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value) * scale
    return None


def target_power(metric: object) -> float:
    detect = _field(metric, "detect")
    value = detect.power if isinstance(detect, Detect) else (detect.get("power") if isinstance(detect, dict) else None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1 else POWER


def trace_replays(level: object) -> int:
    """The runs of a rebuild that judge no fresh metric seed: 1 where the contract compares a
    trace step by step (its first run replays the reference's seed for that), else 0."""
    return 1 if level in TRACE_LEVELS else 0


def runs_for_judged(level: object, judged: int) -> int:
    """The runs per rebuild (`contract.metric.rebuild_seeds`) that judge the metric on `judged`
    fresh seeds: the trace replay comes on top of them."""
    return judged + trace_replays(level)


def judged_seeds(level: object, runs: int) -> int:
    """The rebuild seeds the metric is judged on when a rebuild runs `runs` in all: without the
    trace replay, except that a single run is judged on that replay (at least one)."""
    return max(1, runs - trace_replays(level))


def percent(share: float) -> str:
    """A share as an exact percentage: 0.95 -> "95 %", 0.975 -> "97.5 %"."""
    return f"{round(share * 100, 6):g} %"


__all__ = [
    "BAND_SHARE",
    "RANK_ANY_GRID_SEEDS",
    "FAIL_ON",
    "FLOOR_ULPS",
    "MAX_PLANNED_SEEDS",
    "POWER",
    "TAIL_SEEDS",
    "TESTS",
    "TRACE_LEVELS",
    "Choice",
    "Kind",
    "Shape",
    "Side",
    "TestName",
    "Widening",
    "assured_at_least",
    "assured_power",
    "assured_sigma",
    "band_minimum",
    "bound",
    "choose",
    "declared_shift",
    "failing_side",
    "floor",
    "grid_step",
    "holds_tails",
    "interval_bounds",
    "judged_seeds",
    "interval_half_width",
    "mean_sd",
    "metric_test",
    "minimum_detectable_shift",
    "percent",
    "pooled_sd",
    "power",
    "rank_sum_p",
    "runs_for_judged",
    "reference_band",
    "seeds_needed",
    "shape",
    "side_words",
    "t_level",
    "target_power",
    "trace_replays",
    "tost_pass_chance",
]
