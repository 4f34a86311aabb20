"""batches, model-state and steps: the rebuilt trace against the reference, step by step."""

from __future__ import annotations

from typing import Any

from reprogate.rebuild import compare
from reprogate.rebuild.context import RebuildContext, StageResult, failed, skipped


def _result(outcome: compare.Outcome) -> StageResult:
    return StageResult(outcome.status, outcome.detail, dict(outcome.data))


def _ranges(ctx: RebuildContext) -> tuple[dict[Any, Any], dict[Any, Any]]:
    first, last = ctx.step_range
    return compare.step_events(ctx.reference_events, first, last), compare.step_events(ctx.runs[0].events, first, last)


def batches(ctx: RebuildContext) -> StageResult:
    if ctx.level == "startup":
        return skipped("a startup contract compares nothing numeric")
    if not ctx.reference_events:
        return failed("the record has no reference trace to compare with")
    if ctx.level == "statistical" and ctx.runs and ctx.runs[0].seed != ctx.section("seeds", "global"):
        return skipped(f"seed {ctx.runs[0].seed} is fresh and reads the data in its own order; batches are compared when the run replays the trace's seed")
    return _result(compare.compare_batches(*_ranges(ctx)))


def model_state(ctx: RebuildContext) -> StageResult:
    if ctx.level != "bitwise":
        return skipped(f"a {ctx.level} contract does not compare tensors bitwise")
    names = list(ctx.section("contract", "tensors") or [])
    reference, rebuilt = _ranges(ctx)
    result = _result(compare.compare_tensors(reference, rebuilt, names))
    if result.status == "fail":
        loss = compare.first_loss_difference(reference, rebuilt)
        result.detail += f"; {loss}" if loss else "; the loss is equal at every step up to there (a silent numerical change in the weights)"
    return result


def steps(ctx: RebuildContext) -> StageResult:
    if ctx.level in ("startup", "statistical"):
        return skipped(f"a {ctx.level} contract does not compare individual steps" + (" (it compares the metric)" if ctx.level == "statistical" else ""))
    tolerance = ctx.section("contract", "tolerance") or {}
    quantities = list(tolerance.get("quantities") or ["loss"])
    abs_tol, rel_tol = (0.0, 0.0) if ctx.level == "bitwise" else (float(tolerance.get("abs", 0.0)), float(tolerance.get("rel", 0.0)))
    outcome, result = compare.compare_values(*_ranges(ctx), quantities, abs_tol, rel_tol)
    ctx.tests.append(
        {
            "test": "step tolerance" if ctx.level == "behavioral" else "exact step values",
            "quantities": quantities,
            "abs": abs_tol,
            "rel": rel_tol,
            "compared": result.compared,
            "first_outside": outcome.data.get("first_step"),
            "max_deviation": result.max_deviation,
            "passed": result.passed,
        }
    )
    return _result(outcome)
