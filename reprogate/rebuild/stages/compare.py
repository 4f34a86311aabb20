"""batches, model-state and steps: the rebuilt trace against the reference, step by step."""

from __future__ import annotations

from reprogate.core.record import Tolerance
from reprogate.rebuild import compare
from reprogate.rebuild.comparisons import EXACT, TOLERANCE, StepTest
from reprogate.rebuild.stages.base import StageResult, failed, skipped
from reprogate.rebuild.state import RebuildJob, RebuildState
from reprogate.rebuild.step_figures import Figures, judged_as


def _result(outcome: compare.Outcome, comparison: StepTest | None = None) -> StageResult:
    return StageResult(outcome.status, outcome.detail, dict(outcome.data), comparison=comparison)


def _ranges(state: RebuildState) -> tuple[compare.Steps, compare.Steps]:
    first, last = state.job.step_range
    assert state.runs is not None and state.runs.first is not None
    return compare.step_events(state.reference_events, first, last), compare.step_events(state.runs.first.events, first, last)


def batches(state: RebuildState) -> StageResult:
    job, runs = state.job, state.runs
    assert runs is not None and runs.first is not None
    if job.level == "startup":
        return skipped("a startup contract compares nothing numeric")
    if not state.reference_events:
        return failed("the record has no reference trace to compare with")
    if job.level == "statistical" and runs.first.seed != _trace_seed(job):
        return skipped(f"seed {runs.first.seed} is fresh and reads the data in its own order; batches are compared when the run replays the trace's seed")
    return _result(compare.compare_batches(*_ranges(state)))


def model_state(state: RebuildState) -> StageResult:
    job = state.job
    if job.level != "bitwise":
        return skipped(f"a {job.level} contract does not compare tensors bitwise")
    names = list(job.record.contract.tensors or ()) if job.record.contract is not None else []
    reference, rebuilt = _ranges(state)
    result = _result(compare.compare_tensors(reference, rebuilt, names))
    if result.status == "fail":
        loss = compare.first_loss_difference(_loss_figures(state, reference, rebuilt))
        result = result.said(f"; {loss}" if loss else "; the loss is equal at every step up to there (a silent numerical change in the weights)")
    return result


def _tolerance(job: RebuildJob) -> tuple[list[str], float, float]:
    """The quantities the steps stage compares and its bounds (bitwise: exact)."""
    tolerance = _declared_tolerance(job)
    quantities = list(tolerance.quantities or ("loss",))
    abs_tol, rel_tol = (0.0, 0.0) if job.level == "bitwise" else (float(tolerance.abs or 0.0), float(tolerance.rel or 0.0))
    return quantities, abs_tol, rel_tol


def _declared_tolerance(job: RebuildJob) -> Tolerance:
    """`contract.tolerance`, or none declared (every bound 0)."""
    contract = job.record.contract
    return contract.tolerance if contract is not None and contract.tolerance is not None else Tolerance()


def _trace_seed(job: RebuildJob) -> int | None:
    """`seeds.global`: the seed a run replays the reference trace with."""
    return job.record.seeds.global_seed if job.record.seeds is not None else None


def steps(state: RebuildState) -> StageResult:
    job = state.job
    if job.level in ("startup", "statistical"):
        return skipped(f"a {job.level} contract does not compare individual steps" + (" (it compares the metric)" if job.level == "statistical" else ""))
    quantities, abs_tol, rel_tol = _tolerance(job)
    try:
        outcome, judgement = compare.compare_values(*_ranges(state), quantities, abs_tol, rel_tol)
    except compare.QuantityError as exc:  # the record's reference trace is unusable input (2); the rebuilt one is the run's own (1)
        return failed(f"cannot compare {'/'.join(quantities)}: {exc}", exit_code=2 if exc.side == "reference" else 1)
    outside, largest = judgement.first_outside, judgement.largest
    test = StepTest(
        TOLERANCE if job.level == "behavioral" else EXACT,
        tuple(quantities),
        abs_tol,
        rel_tol,
        judgement.compared,
        outside[1].step if outside else None,
        largest[1].difference if largest else None,
        judgement.passed,
        first_outside_rank=outside[1].rank if outside else None,
        first_outside_quantity=outside[0] if outside else None,
        max_deviation_step=largest[1].step if largest else None,
        max_deviation_rank=largest[1].rank if largest else None,
        max_deviation_quantity=largest[0] if largest else None,
    )
    return _result(outcome, test)


def _loss_figures(state: RebuildState, reference: compare.Steps, rebuilt: compare.Steps) -> Figures:
    job = state.job
    quantities, abs_tol, rel_tol = _tolerance(job)
    judged, tolerance = judged_as(job.level, quantities, "loss", abs_tol, rel_tol)
    return compare.loss_figures(reference, rebuilt, judged, tolerance)


def loss_figures(state: RebuildState) -> Figures | None:
    """The loss at every (step, rank) point the compared steps hold, judged as the steps stage
    judges it: the verdict's `loss`, from which the report states every loss figure. None when
    no run left a trace to compare (or there is no reference trace)."""
    runs = state.runs
    if runs is None or runs.first is None or not state.reference_events:
        return None
    figures = _loss_figures(state, *_ranges(state))
    return figures if figures.compared else None


COMPARING = ("batches", "model-state", "steps", "metric")  # the stages whose failure a trace difference explains


def first_difference(state: RebuildState, failed_stage: str | None) -> compare.FirstDifference | None:
    """The cause the diagnosis names: the first scalar the trace records per step that the
    rebuild does not match, inputs before outputs (compare.first_difference). Only for a failed
    comparison of a run that replays the reference's steps (bitwise, behavioral, or a statistical
    rebuild on the trace's own seed): a fresh seed is meant to differ."""
    job, runs = state.job, state.runs
    if failed_stage not in COMPARING or runs is None or runs.first is None or not state.reference_events or job.level == "startup":
        return None
    if job.level == "statistical" and runs.first.seed != _trace_seed(job):
        return None
    tolerance = _declared_tolerance(job)
    abs_tol, rel_tol = (float(tolerance.abs or 0.0), float(tolerance.rel or 0.0)) if job.level == "behavioral" else (0.0, 0.0)
    return compare.first_difference(*_ranges(state), abs_tol, rel_tol, weights=job.level == "bitwise")
