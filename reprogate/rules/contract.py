"""Each contract level needs its own evidence, stated before the rerun.

A statistical verdict without a predeclared interval, or a bitwise one that names no tensors,
would let the comparison be chosen after seeing the result; the record is rejected instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.core.record import Metric, RunRecord, SeedValue
from reprogate.core.seedstats import (
    MAX_MAGNITUDE,
    TAIL_SEEDS,
    assured_at_least,
    assured_power,
    band_minimum,
    declared_shift,
    failing_side,
    holds_tails,
    interval_bounds,
    judged_seeds,
    mean_sd,
    metric_test,
    percent,
    runs_for_judged,
    shape,
    target_power,
    trace_replays,
)
from reprogate.rules.base import RuleContext


def _reference_values(record: RunRecord) -> tuple[SeedValue, ...] | None:
    """`reference.metric.values`, None where the record has none (or the schema rejected its reference)."""
    reference = record.reference
    return None if reference is None or reference.metric is None else reference.metric.values


def statistical_has_interval(ctx: RuleContext) -> Iterator[Diagnostic]:
    contract = ctx.record.contract
    if contract is None or contract.level != "statistical":
        return
    metric = contract.metric
    if metric is None:
        yield ctx.finding(
            ("contract", "metric"),
            "a statistical contract needs contract.metric (name, alpha, interval)",
            "statistical-no-metric",
            "declare the metric, then run `reprogate interval RECORD` to compute and store its interval",
        )
        return
    interval = metric.interval
    if interval is None:
        yield ctx.finding(
            ("contract", "metric", "interval"),
            "a statistical contract carries its predeclared interval, fixed before any rerun",
            "statistical-no-interval",
            "run `reprogate interval RECORD` on the reference seeds and commit the result",
        )
        return
    low, high = interval.low, interval.high
    flat = interval.sd == 0  # seeds with no spread and no resolution: the interval is one point
    if not (math.isfinite(low) and math.isfinite(high)) or low > high or (low == high and not flat):
        yield ctx.finding(("contract", "metric", "interval"), f"interval [{low}, {high}] is empty or unbounded", "statistical-bad-interval")
    values = _reference_values(ctx.record)
    n = interval.n
    if values is not None and n != len(values):
        yield ctx.finding(
            ("contract", "metric", "interval", "n"),
            f"interval was computed from n={n} seeds, reference.metric lists {len(values)}",
            "statistical-n-mismatch",
            "recompute with `reprogate interval RECORD`",
        )
    reference = ctx.record.reference
    ref_name = reference.metric.name if reference is not None and reference.metric is not None else None
    if ref_name is not None and ref_name != metric.name:
        yield ctx.finding(
            ("reference", "metric", "name"), f"reference metric {ref_name!r} is not the contract's metric {metric.name!r}", "statistical-metric-mismatch"
        )
    seeds = ctx.record.seeds.evaluation if ctx.record.seeds is not None else None
    if seeds is not None and values is not None:
        listed = {v.seed for v in values}
        extra = [s for s in seeds if s not in listed]
        if extra:
            yield ctx.finding(("seeds", "evaluation"), f"evaluation seeds {extra} have no reference metric value", "statistical-seed-without-value")


def _metric_of(record: RunRecord) -> Metric | None:
    return record.contract.metric if record.contract is not None else None


def stored_interval_recomputes(ctx: RuleContext) -> Iterator[Diagnostic]:
    """The stored interval must be the one its own inputs give: the reference seeds' values, its
    α and the metric's resolution. A bound edited by hand (a pull request widening its own
    interval) is a broken record, not a looser contract."""
    metric = _metric_of(ctx.record)
    interval = metric.interval if metric is not None else None
    seeds = _reference_values(ctx.record)
    if metric is None or interval is None or interval.method != "prediction" or seeds is None or len(seeds) < 2:
        return  # the schema and statistical-has-interval say what is missing
    low, high, alpha = interval.low, interval.high, interval.alpha
    numbers = [v.value for v in seeds]
    if not 0 < alpha < 1 or any(abs(x) > MAX_MAGNITUDE for x in numbers):
        return  # seeds_say_what_they_can names a value beyond what the statistics compute on

    values = [float(x) for x in numbers]
    # as rebuild/stats.prediction_interval computes it: the record's test at m = 1, on its failing side(s)
    widen = float(metric.resolution) if metric.resolution is not None else 0.0
    computed_low, computed_high = interval_bounds(values, alpha, widen, metric_test(metric), failing_side(metric))
    # Wider than its inputs give is what loosens a contract; narrower only makes it stricter, and
    # bounds rounded by hand (an older record) move them by far less than 1 % of the width.
    slack = max(1e-9, 0.01 * (computed_high - computed_low))
    bounds = (("low", low, computed_low, computed_low - low), ("high", high, computed_high, high - computed_high))
    for name, stored, found, wider in bounds:
        if wider > slack:
            yield ctx.finding(
                ("contract", "metric", "interval", name),
                f"the stored interval's {name} bound is {stored:.10g}, wider than its own seeds, α = {alpha:g} and resolution give ({found:.10g})",
                "interval-does-not-recompute",
                "an interval is computed, never written by hand: `reprogate interval RECORD` stores it; a wider contract takes a baseline promotion",
            )


def seeds_say_what_they_can(ctx: RuleContext) -> Iterator[Diagnostic]:
    """What the reference seeds can support, said before any GPU is spent: an interval computed at
    another α than the contract's, too few seeds, seeds with no spread or an odd shape, a declared
    shift no number of rebuild seeds up to 20 would catch, and a margin that a pre-0.3 record
    meant for the default test."""
    metric = _metric_of(ctx.record)
    if metric is None:
        return
    values = [v.value for v in _reference_values(ctx.record) or ()]
    numbers = [float(v) for v in values if math.isfinite(v)]
    alpha = metric.alpha if metric.alpha is not None else 0.05
    stored = metric.interval.alpha if metric.interval is not None else None
    if stored is not None and abs(stored - alpha) > 1e-12:
        yield ctx.finding(
            ("contract", "metric", "interval", "alpha"),
            f"the interval was computed at α = {stored:g}, the contract declares α = {alpha:g}: the verdict would state one and apply the other",
            "interval-alpha-differs",
            "recompute with `reprogate interval RECORD` (or set contract.metric.alpha to the interval's)",
        )
    if metric.test == "equivalence" and metric.margin is None:
        yield ctx.finding(
            ("contract", "metric", "test"),
            "test: equivalence judges several seeds by Welch TOST within contract.metric.margin, and the record declares none",
            "equivalence-without-margin",
            "declare the margin (in the metric's units), or drop `test: equivalence` for the two-sample t",
        )
    if metric.fail_on == "worse" and metric.direction is None:
        yield ctx.finding(
            ("contract", "metric", "fail_on"),
            "fail_on: worse fails only a rebuild worse than the reference, and the record does not say which way is worse",
            "fail-on-without-direction",
            "declare contract.metric.direction (lower or higher is better), or drop fail_on for the two-sided test",
        )
    if metric.test is None:
        yield ctx.finding(
            ("contract", "metric"),
            "the record names no test, so it keeps the one it was written for: `difference`, the t widened by half the resolution at every m; "
            "since 0.6 `init` writes `test: robust` (the prediction interval that holds the reference's own band, the rank-sum test "
            "from 3 rebuild seeds, held to α on real seed sets: docs/rebuild.md)",
            "metric-test-implicit",
            "name the test: `test: robust`, or `test: difference` to keep today's",
            Severity.NOTICE,
        )
    elif metric.test == "seeds":
        yield ctx.finding(
            ("contract", "metric", "test"),
            "test: seeds keeps the rule it was written for; on skewed seeds, coarse grids and seeds that do not converge it exceeds α "
            "(on MLPerf's seed sets at α = 5 %: 7.5 % on skewed sets at one rebuild seed, up to 12 % in one set), which test: robust holds (docs/rebuild.md)",
            "metric-test-seeds",
            "name `test: robust` and rerun `reprogate interval RECORD` to store its interval",
            Severity.NOTICE,
        )
    if metric.margin is not None and metric.test != "equivalence":
        yield ctx.finding(
            ("contract", "metric", "margin"),
            "since reprogate 0.3 several rebuild seeds are judged by the two-sample t (α is its false-fail rate); the margin is used only by "
            "`test: equivalence` (Welch TOST, which fails good builds unless enough seeds run)",
            "margin-needs-test",
            "keep the old test with `test: equivalence`, or drop the margin (and declare `detect:` for the shift to catch)",
            Severity.NOTICE,
        )
    if len(numbers) < 2 or len(numbers) != len(values):
        return
    beyond = next((i for i, x in enumerate(numbers) if abs(x) > MAX_MAGNITUDE), None)
    if beyond is not None:  # schema-valid, but its square is no float: no statistic of these seeds can be computed
        yield ctx.finding(
            ("reference", "metric", "values", beyond, "value"),
            f"{numbers[beyond]:g} is beyond ±{MAX_MAGNITUDE:g}, the largest metric the seed statistics compute on",
            "metric-out-of-range",
            "record the metric in units that keep it within range (a loss of 1e160 is a diverged run, not a reference)",
        )
        return

    where = ("reference", "metric", "values")
    if len(set(numbers)) == 1 and metric.resolution is None:
        yield ctx.finding(
            where,
            f"the {len(numbers)} reference seeds showed no spread ({numbers[0]:g} each) and the contract declares no resolution: "
            "no test can say how far a rebuild may move",
            "seeds-without-spread-or-resolution",
            "declare contract.metric.resolution: the metric's evaluation grid (1/N for accuracy on N examples, K for a step count "
            "measured every K steps), or 0 for a metric the seed does not move (any difference beyond rounding then fails)",
        )
    elif len(set(numbers)) == 1:
        yield ctx.finding(
            where,
            f"the {len(numbers)} reference seeds showed no spread ({numbers[0]:g} each): the interval is the resolution band",
            "seeds-without-spread",
            "declare contract.metric.resolution (the evaluation grid), or check that the seed reaches the run",
            Severity.WARNING,
        )
    elif len(numbers) < 3:
        yield ctx.finding(
            where,
            f"only {len(numbers)} reference seeds: the interval is very wide and its power low",
            "too-few-seeds",
            "run 5 or more reference seeds",
            Severity.WARNING,
        )
    odd = shape(numbers).notice
    if odd:
        yield ctx.finding(where, odd, "seeds-not-normal", "see `reprogate interval RECORD --plan`", Severity.NOTICE)
    a = float(alpha) if 0 < alpha < 1 else 0.05
    declared = metric.rebuild_seeds is not None
    runs = metric.rebuild_seeds or 1
    assert ctx.record.contract is not None  # the metric is the contract's
    level = ctx.record.contract.level
    m = judged_seeds(level, runs)
    replayed = trace_replays(level) and runs == 1  # the one run replays the trace's seed: not a fresh draw of the seed noise
    if not replayed and metric_test(metric) != "equivalence" and not holds_tails(len(numbers), m, a):
        yield ctx.finding(
            ("contract", "metric", "rebuild_seeds") if declared else where,
            f"one fresh rebuild seed against {len(numbers)} reference seeds, too few for the reference's band (from "
            f"{band_minimum(a)} seeds at α = {a:g}): the verdict is the t's prediction interval alone, which holds α on normal "
            "seeds but not on skewed or sometimes non-converging ones (at n = 5, 8.5 % and up to 10.6 % false fails on MLPerf's "
            "seed sets in benchmarks/calibration.py): a rebuild seed from the tail the reference has not seen fails",
            "one-seed-few-references",
            f"set contract.metric.rebuild_seeds to {runs_for_judged(level, TAIL_SEEDS)} or more (the rank-sum test judges {TAIL_SEEDS} or more), "
            f"or record {band_minimum(a)} or more reference seeds",
            Severity.NOTICE,
        )
    mean, sigma = mean_sd(numbers)
    shift, target = declared_shift(metric, mean), target_power(metric)
    resolution = metric.resolution if metric.resolution is not None else 0.0
    test, n = metric_test(metric), len(numbers)
    one_sided = failing_side(metric) != "both"
    if shift is None or sigma <= 0:
        return
    if not assured_at_least(n, 20, shift, sigma, a, target - 1e-6, float(resolution), test, one_sided):
        yield ctx.finding(
            ("contract", "metric", "detect"),
            f"the declared shift ({shift:.4g}, {shift / sigma:.2f} sd of the reference seeds) is caught with power below "
            f"{target:.0%} by any number of rebuild seeds up to 20, with n={n} reference seeds",
            "shift-not-detectable",
            "run more reference seeds; `reprogate interval RECORD --plan` says how many",
            Severity.WARNING,
        )
        return
    # the assurance's bisection stops a hair below a shift caught at exactly the target
    if not assured_at_least(n, m, shift, sigma, a, target - 1e-6, float(resolution), test, one_sided):
        caught = assured_power(n, m, shift, sigma, a, float(resolution), test, one_sided)
        said = f"contract.metric.rebuild_seeds: {runs}" if declared else "one seed: the record declares no contract.metric.rebuild_seeds"
        if trace_replays(level) and runs > 1:
            said += f", of which the first replays the trace's seed for the {level} comparison: {m} judge the metric"
        yield ctx.finding(
            ("contract", "metric", "rebuild_seeds" if declared else "detect"),
            f"the declared shift ({shift:.4g}) is caught with {percent(round(caught, 3))} power, below the declared {percent(target)}, "
            f"by the rebuilds the gate runs ({said})",
            "shift-below-power",
            "`reprogate interval RECORD --plan` says the rebuild seeds that catch it (set contract.metric.rebuild_seeds), "
            "or declare the shift those seeds catch",
            Severity.WARNING,
        )


def bitwise_names_tensors(ctx: RuleContext) -> Iterator[Diagnostic]:
    contract = ctx.record.contract
    if contract is None or contract.level != "bitwise":
        return
    if not contract.tensors:
        yield ctx.finding(
            ("contract", "tensors"),
            "a bitwise contract names the tensors it compares",
            "bitwise-no-tensors",
            "list parameter names, or `model_state` for the whole state dict",
        )


def dirty_source_has_diff(ctx: RuleContext) -> Iterator[Diagnostic]:
    source = ctx.record.source
    if source is None or not source.dirty or source.diff_digest:
        return
    if source.path is not None and source.tree is not None:
        return  # the project folder is pinned by the tree id of its files: what ran is addressed, dirty or not
    if ctx.record.contract is not None and ctx.record.contract.level == "bitwise":
        yield ctx.finding(
            ("source", "dirty"),
            "a bitwise contract cannot rest on a dirty source without the digest of its diff",
            "bitwise-dirty-source",
            "commit the changes and record the new commit, or record diff_digest (reprogate capture does)",
        )
    else:
        yield ctx.finding(
            ("source", "dirty"),
            "the source was dirty and the record has no diff_digest: the code that ran cannot be rebuilt exactly",
            "dirty-without-diff",
            "record diff_digest (reprogate capture does), or commit first",
            Severity.WARNING,
        )


def behavioral_has_tolerance(ctx: RuleContext) -> Iterator[Diagnostic]:
    contract = ctx.record.contract
    if contract is None or contract.level != "behavioral":
        return
    for name, what, declared in (("steps", "how many steps to compare", contract.steps), ("tolerance", "the abs/rel tolerance per step", contract.tolerance)):
        if declared is None:
            yield ctx.finding(("contract", name), f"a behavioral contract declares {what} (contract.{name})", f"behavioral-no-{name}")
