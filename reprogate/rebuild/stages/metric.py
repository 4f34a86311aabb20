"""metric: the evaluation metric of the rebuild's metric seeds against the reference seeds.

The test is the one core/seedstats.choose names for the record's `contract.metric.test` and the
number m of rebuild seeds, decided before any value is read: at m = 1 the predeclared t
prediction interval, at m >= 2 the two-sample t on the means, or (`test: seeds`, m >= 3 on a
fine grid; `test: robust`, m >= 3 whenever the reference has a spread) the Wilcoxon rank-sum
test; each has α as its chance of failing a build that reproduces, two-sided, or one-sided where
the record says `fail_on: worse`, and the verdict says which ran, why, and which way fails. `test: equivalence` opts into Welch TOST
instead, which bounds the chance of *passing* a build beyond the margin, and the verdict then
says how likely a good build was to pass it. Every verdict states α, n, m, the seeds and where
they came from, and its power, assured (core/seedstats.assured_power): at the shift the record
declares (contract.metric.detect) and the smallest shift it catches at the declared power.
"""

from __future__ import annotations

from typing import Any

from reprogate.core.record import Metric
from reprogate.core.seedstats import (
    POWER,
    assured_power,
    assured_sigma,
    choose,
    declared_shift,
    failing_side,
    mean_sd,
    metric_test,
    minimum_detectable_shift,
    percent,
    side_words,
    target_power,
    tost_pass_chance,
)
from reprogate.rebuild import compare
from reprogate.rebuild.comparisons import DIFFERENCE, DIFFERENCE_ONE_SIDED, EQUIVALENCE, PREDICTION, RANK_SUM, RANK_SUM_ONE_SIDED, MetricTest
from reprogate.rebuild.interval import seed_notices
from reprogate.rebuild.stages.base import StageResult, failed, passed, skipped
from reprogate.rebuild.state import RebuildState
from reprogate.rebuild.stats import difference_test, welch_tost


def metric(state: RebuildState) -> StageResult:
    job, runs = state.job, state.runs
    assert runs is not None
    record = job.record
    declared = record.contract.metric if record.contract is not None else None
    if declared is None:
        if job.level == "statistical":
            return failed("a statistical contract without a declared metric cannot be judged")
        return skipped("the contract declares no metric")
    name = declared.name
    plan = job.seed_plan
    values = []
    for run_ in runs.seeds:
        if run_.seed not in plan.metric_seeds:
            continue
        found = compare.metrics(run_.events).get(name)
        if found is None:
            return failed(f"seed {run_.seed}: the run reported no {name} (Tracer.metric)")
        values.append(found)
    seeds = record.reference.metric.values if record.reference is not None and record.reference.metric is not None else ()
    reference = [float(v.value) for v in seeds]
    alpha = float(declared.alpha if declared.alpha is not None else 0.05)
    resolution = float(declared.resolution or 0.0)
    if declared.test == "equivalence" and len(values) >= 2:
        return _equivalence(state, declared, reference, values, alpha)
    test_name = metric_test(declared)
    side = failing_side(declared)
    sided = side_words(side, name)
    if len(values) == 1:
        stored = declared.interval
        if stored is None:
            return failed(f"no predeclared interval for {name}: run `reprogate interval RECORD` before the drill", exit_code=2)
        low, high = float(stored.low), float(stored.high)
        alpha, n = float(stored.alpha), stored.n
        resolution = float(stored.resolution if stored.resolution is not None else resolution)
        sigma = float(stored.sd if stored.sd is not None else (mean_sd(reference)[1] if len(reference) > 1 else 0.0))
        inside = values[0] <= high if side == "higher" else (values[0] >= low if side == "lower" else low <= values[0] <= high)
        choice = choose(test_name, 1, sigma, resolution, n)
        stated = _power(declared, n, 1, sigma, alpha, resolution, float(stored.mean if stored.mean is not None else 0.0))
        figures: dict[str, Any] = {
            "interval": [low, high],
            "resolution": resolution,
            "value": values[0],
            "values": values,
            "reference": reference,
            "rule": choice.reason,
            "fails": side,
        }
        test = MetricTest(PREDICTION, name, alpha, n, 1, inside, plan, stated, figures, _notice(reference))
        where = (
            f"{'inside' if inside else 'outside'} the predeclared {percent(1 - alpha)} prediction interval [{low:.6g}, {high:.6g}]"
            if side == "both"
            else f"{'not above' if side == 'higher' else 'not below'} the predeclared {percent(1 - alpha)} one-sided bound "
            f"{high if side == 'higher' else low:.6g}"
            if inside
            else f"{'above' if side == 'higher' else 'below'} the predeclared {percent(1 - alpha)} one-sided bound {high if side == 'higher' else low:.6g}"
        )
        detail = f"{name} {values[0]:.6g} {where} (n={n}, m=1; {sided}); {_said(stated)}"
        return StageResult("pass" if inside else "fail", detail, {"value": values[0]}, comparison=test)
    if len(reference) < 2:
        return failed(f"{len(values)} rebuild seeds are compared with the reference seeds; reference.metric.values lists {len(reference)}", exit_code=2)
    result = difference_test(reference, values, alpha, resolution, test_name, side)
    mean, sd = mean_sd(reference)
    stated = _power(declared, result.n, result.m, sd, alpha, resolution, mean)
    figures = {
        "difference": result.difference,
        "sd_pooled": result.sd_pooled,
        "df": result.df,
        "p_value": result.p_value,
        "resolution": resolution,
        "values": values,
        "reference": reference,
        "rule": result.reason,
        "fails": side,
    }
    if result.kind == "rank-sum":
        kind = RANK_SUM if side == "both" else RANK_SUM_ONE_SIDED
        test = MetricTest(kind, name, alpha, result.n, len(values), result.passed, plan, stated, figures, _notice(reference))
        detail = (
            f"{name}: mean difference {result.difference:+.4g}, rank-sum mid-p {result.p_value:.3g} {'above' if result.passed else 'at or below'} "
            f"α={alpha:g} (Wilcoxon rank-sum, n={result.n}, m={result.m}; {result.reason}; {sided}); {_said(stated)}"
        )
    else:
        figures["limit"] = result.limit
        kind = DIFFERENCE if side == "both" else DIFFERENCE_ONE_SIDED
        test = MetricTest(kind, name, alpha, result.n, len(values), result.passed, plan, stated, figures, _notice(reference))
        bound_text = f"±{result.limit:.4g}" if side == "both" else f"{'+' if side == 'higher' else '-'}{result.limit:.4g} (the failing side)"
        detail = (
            f"{name}: mean difference {result.difference:+.4g} {'within' if result.passed else 'beyond'} {bound_text} "
            f"(two-sample t, α={alpha:g}, n={result.n}, m={result.m}, p={result.p_value:.3g}; {sided}); {_said(stated)}"
        )
    return passed(detail, test, values=values) if result.passed else failed(detail, comparison=test, values=values)


def _equivalence(state: RebuildState, declared: Metric, reference: list[float], values: list[float], alpha: float) -> StageResult:
    assert declared.margin is not None  # runner.check_before_running refuses several seeds under equivalence without a margin
    name, margin = declared.name, float(declared.margin)
    tost = welch_tost(reference, values, margin, alpha)
    sigma = mean_sd(reference)[1]
    chance = tost_pass_chance(tost.n, tost.m, sigma, margin, alpha)
    needed = next((m for m in range(2, 201) if tost_pass_chance(tost.n, m, sigma, margin, alpha) >= POWER), None)
    stated = {
        "bounds": f"the chance of passing a build whose mean moved by ±{margin:g} (not of failing a good one)",
        "good_build_passes": round(chance, 4),
        "seeds_for_80_percent": needed,
    }
    figures = {k: v for k, v in tost.as_dict().items() if k not in ("alpha", "n", "m")}
    test = MetricTest(EQUIVALENCE, name, alpha, tost.n, tost.m, tost.equivalent, state.job.seed_plan, stated, {**figures, "values": values})
    detail = (
        f"{name}: mean difference {tost.difference:+.4g}, {percent(1 - 2 * alpha)} CI [{tost.ci_low:.4g}, {tost.ci_high:.4g}] "
        f"{'inside' if tost.equivalent else 'not inside'} ±{margin:g} (Welch TOST, α={alpha:g}, n={tost.n}, m={tost.m}, p={tost.p_value:.3g}); "
        f"α bounds false passes: a build that reproduces passes with m={tost.m} {percent(round(chance, 3))} of the time"
        + (f", needs m={needed} for 80 %" if needed else ", and with no m up to 200 for 80 %")
    )
    return passed(detail, test, values=values) if tost.equivalent else failed(detail, comparison=test, values=values)


def _power(declared: Metric, n: int, m: int, sigma: float, alpha: float, resolution: float, mean: float) -> dict[str, Any]:
    """The power the verdict states: assured, so that over records a share of at least the stated
    power reaches it (core/seedstats.assured_power), not the plug-in at the reference's own s."""
    target = target_power(declared)
    test_name = metric_test(declared)
    one_sided = failing_side(declared) != "both"
    shift = declared_shift(declared, mean)
    stated: dict[str, Any] = {
        "sigma": sigma,
        "minimum_detectable_shift": minimum_detectable_shift(n, m, assured_sigma(n, sigma, target), alpha, target, resolution, test_name, sigma, one_sided),
        "at_power": target,
        "assured": "the power reached with at least the stated probability, given the n reference seeds' spread"
        + ("; of a shift the worse way (one-sided)" if one_sided else ""),
    }
    if shift is not None:
        stated["shift"] = shift
        stated["power"] = round(assured_power(n, m, shift, sigma, alpha, resolution, test_name, one_sided), 4)
    return stated


def _said(stated: dict[str, Any]) -> str:
    smallest = f"smallest shift caught at {percent(stated['at_power'])} power: {stated['minimum_detectable_shift']:.4g}"
    if "shift" in stated:
        return f"power {percent(stated['power'])} at the declared shift {stated['shift']:.4g}; {smallest}"
    return f"{smallest} (no shift declared: contract.metric.detect)"


def _notice(reference: list[float]) -> str:
    """What the reference seeds' shape says of the normal-theory error rate (also in the record)."""
    return "; ".join(seed_notices(reference)) if len(reference) >= 2 else ""
