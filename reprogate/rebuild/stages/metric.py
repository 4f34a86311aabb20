"""metric: the evaluation metric against the predeclared interval (one seed), or Welch TOST
against the reference seeds (several), with α, margin, n and m stated in the verdict."""

from __future__ import annotations

from reprogate.rebuild import compare
from reprogate.rebuild.context import RebuildContext, StageResult, failed, passed, skipped


def metric(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild.stats import Interval, welch_tost

    declared = ctx.section("contract", "metric")
    if not isinstance(declared, dict):
        if ctx.level == "statistical":
            return failed("a statistical contract without a declared metric cannot be judged")
        return skipped("the contract declares no metric")
    name = declared["name"]
    values = []
    for run_ in ctx.runs:
        found = compare.metrics(run_.events).get(name)
        if found is None:
            return failed(f"seed {run_.seed}: the run reported no {name} (Tracer.metric)")
        values.append(found)
    reference = [float(v["value"]) for v in ctx.section("reference", "metric", "values") or []]
    alpha = float(declared.get("alpha", 0.05))
    if len(values) == 1:
        stored = declared.get("interval")
        if not isinstance(stored, dict):
            return failed(f"no predeclared interval for {name}: run `reprogate interval RECORD` before the drill", exit_code=2)
        interval = Interval(
            stored["method"],
            stored["low"],
            stored["high"],
            stored.get("alpha", alpha),
            stored["n"],
            stored.get("mean", 0.0),
            stored.get("sd", 0.0),
            stored.get("resolution", 0.0),
        )
        inside = interval.contains(values[0])
        ctx.tests.append(
            {
                "test": "t prediction interval (one rebuild seed)",
                "metric": name,
                "alpha": interval.alpha,
                "n": interval.n,
                "m": 1,
                "interval": [interval.low, interval.high],
                "resolution": interval.resolution,
                "value": values[0],
                "passed": inside,
            }
        )
        detail = (
            f"{name} {values[0]:.6g} {'inside' if inside else 'outside'} the predeclared {int((1 - interval.alpha) * 100)}% "
            f"prediction interval [{interval.low:.6g}, {interval.high:.6g}] (n={interval.n}, m=1)"
        )
        return StageResult("pass" if inside else "fail", detail, {"value": values[0]})
    margin = declared.get("margin")
    if margin is None:
        return failed(f"{len(values)} rebuild seeds need contract.metric.margin for the equivalence test", exit_code=2)
    tost = welch_tost(reference, values, float(margin), alpha)
    ctx.tests.append({"test": "Welch TOST equivalence", "metric": name, **tost.as_dict(), "passed": tost.equivalent, "values": values})
    detail = (
        f"{name}: mean difference {tost.difference:+.4g}, {int((1 - 2 * alpha) * 100)}% CI [{tost.ci_low:.4g}, {tost.ci_high:.4g}] "
        f"{'inside' if tost.equivalent else 'not inside'} ±{margin} (Welch TOST, α={alpha}, n={tost.n}, m={tost.m}, p={tost.p_value:.3g})"
    )
    return passed(detail, values=values) if tost.equivalent else failed(detail, values=values)
