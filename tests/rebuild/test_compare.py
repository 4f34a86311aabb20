"""reprogate/rebuild/compare.py: picking a trace's events apart and comparing a rebuilt trace with
the reference (batches, tensor digests, step values), on traces written out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from reprogate.rebuild.compare import (
    compare_batches,
    compare_tensors,
    compare_values,
    digest_algorithm,
    first_loss_difference,
    loss_curve,
    loss_figures,
    metrics,
    other_algorithms,
    step_events,
)
from reprogate.rebuild.step_figures import Tolerance
from reprogate.runtime.trace import StepEvent, parse_event

A, B, C = "sha256:" + "a" * 64, "sha256:" + "b" * 64, "sha256:" + "c" * 64
BLAKE = "blake3:" + "a" * 64

TRACE_LINES: list[dict[str, Any]] = [
    {"type": "meta", "rank": 0},
    {"type": "step", "step": 0, "loss": 2.0, "batch": A},
    {"type": "step", "step": 1, "rank": 0, "loss": 1.5, "batch": B},
    {"type": "step", "step": 1, "rank": 1, "loss": 1.7, "batch": C},
    {"type": "step", "step": 2, "rank": 0, "loss": 1.0},
    {"type": "step", "step": 2, "rank": 1, "loss": 1.4},
    {"type": "step", "step": 3, "rank": 0},
    {"type": "metric", "name": "acc", "value": 0.5},
    {"type": "metric", "name": "acc", "value": 0.75, "rank": 0},
    {"type": "metric", "name": "acc", "value": 0.99, "rank": 1},
    {"type": "metric", "name": "ppl", "value": 12, "rank": 0},
]
TRACE = [parse_event(line, f"line {number}") for number, line in enumerate(TRACE_LINES, 1)]


def test_step_events_are_keyed_by_step_and_rank_within_the_range() -> None:
    assert sorted(step_events(TRACE, 0, None)) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0)]
    assert sorted(step_events(TRACE, 1, 2)) == [(1, 0), (1, 1), (2, 0), (2, 1)]  # both ends inclusive
    assert step_events(TRACE, 1, 1)[(1, 1)].loss == 1.7
    assert step_events(TRACE, 0, 0)[(0, 0)].batch == A  # no rank: rank 0
    assert step_events(TRACE, 4, None) == {} and step_events([], 0, None) == {}


def test_metrics_are_rank_0_s_and_the_last_reported_wins() -> None:
    assert metrics(TRACE) == {"acc": 0.75, "ppl": 12.0}
    assert isinstance(metrics(TRACE)["ppl"], float)


def test_loss_curve_is_the_mean_over_ranks_per_step_in_step_order() -> None:
    curve = loss_curve(list(reversed(TRACE)))
    assert [step for step, _ in curve] == [0, 1, 2]  # step 3 has no loss
    assert curve[0] == (0, 2.0) and curve[1] == (1, pytest.approx(1.6)) and curve[2] == (2, pytest.approx(1.2))


def test_digest_algorithm_is_the_prefix() -> None:
    assert digest_algorithm(A) == "sha256" and digest_algorithm(BLAKE) == "blake3"
    assert digest_algorithm("a" * 64) is None and digest_algorithm(None) is None and digest_algorithm(5) is None


def test_other_algorithms_only_when_both_digests_name_different_ones() -> None:
    why = other_algorithms(A, BLAKE)
    assert why is not None and why.startswith("different digest algorithms (the reference used sha256, the rebuild blake3): not comparable")
    assert other_algorithms(A, B) is None and other_algorithms(A, None) is None and other_algorithms("plain", BLAKE) is None


def events(*entries: tuple[int, int, dict[str, Any]]) -> dict[tuple[int, int], StepEvent]:
    found = {(step, rank): parse_event({"type": "step", "step": step, "rank": rank, **fields}, "a test") for step, rank, fields in entries}
    return {key: event for key, event in found.items() if isinstance(event, StepEvent)}


# --- batches ---------------------------------------------------------------------------------


def test_equal_batches_pass_and_count_the_points() -> None:
    reference = events((0, 0, {"batch": A}), (0, 1, {"batch": B}), (5, 0, {"batch": C}), (6, 0, {}))
    outcome = compare_batches(reference, dict(reference))
    assert (outcome.status, outcome.detail, outcome.data) == ("pass", "batch digests equal at 3 (step, rank) points, steps 0-5", {"compared": 3})


def test_the_first_differing_batch_in_step_then_rank_order_fails() -> None:
    reference = events((0, 0, {"batch": A}), (1, 0, {"batch": A}), (1, 1, {"batch": B}), (2, 0, {"batch": C}))
    rebuilt = events((0, 0, {"batch": A}), (1, 0, {"batch": A}), (1, 1, {"batch": C}), (2, 0, {"batch": A}))
    outcome = compare_batches(reference, rebuilt)
    assert outcome.status == "fail" and outcome.data == {"first_step": 1, "rank": 1}
    assert outcome.detail == "step 1, rank 1: the input batch differs (data order or content changed)"


def test_a_batch_missing_from_the_rebuild_or_made_with_another_algorithm_fails_saying_so() -> None:
    reference = events((3, 0, {"batch": A}))
    missing = compare_batches(reference, {})
    assert (missing.status, missing.detail) == ("fail", "step 3, rank 0: the input batch is missing from the rebuild")
    other = compare_batches(reference, events((3, 0, {"batch": BLAKE})))
    assert other.status == "fail" and other.detail.startswith("step 3, rank 0: different digest algorithms (the reference used sha256, the rebuild blake3)")


def test_no_batch_digests_in_the_reference_skips() -> None:
    outcome = compare_batches(events((0, 0, {"loss": 1.0})), events((0, 0, {"batch": A})))
    assert (outcome.status, outcome.detail) == ("skipped", "the reference trace records no batch digests")


# --- tensors ---------------------------------------------------------------------------------


def test_equal_tensor_digests_pass_counting_each_named_tensor() -> None:
    reference = events((0, 0, {"model_state": A, "tensors": {"logits": B}}), (10, 0, {"model_state": C}))
    outcome = compare_tensors(reference, dict(reference), ["model_state", "logits"])
    assert (outcome.status, outcome.detail, outcome.data) == ("pass", "3 tensor digest(s) equal (model_state, logits)", {"compared": 3})


def test_the_first_unequal_tensor_fails_naming_it() -> None:
    reference = events((0, 0, {"model_state": A, "tensors": {"logits": B}}), (10, 0, {"model_state": C}))
    rebuilt = events((0, 0, {"model_state": A, "tensors": {"logits": C}}), (10, 0, {"model_state": A}))
    outcome = compare_tensors(reference, rebuilt, ["model_state", "logits"])
    assert outcome.status == "fail" and outcome.data == {"first_step": 0, "rank": 0, "tensor": "logits"}
    assert outcome.detail == "step 0, rank 0: logits differs (sha256 over dtype, shape, bytes)"
    missing = compare_tensors(reference, events((0, 0, {"model_state": A, "tensors": {"logits": B}})), ["model_state"])
    assert missing.detail == "step 10, rank 0: model_state is missing from the rebuild (sha256 over dtype, shape, bytes)"
    other = compare_tensors(reference, events((0, 0, {"model_state": BLAKE})), ["model_state"])
    assert other.detail.startswith("step 0, rank 0: model_state: different digest algorithms") and other.data["tensor"] == "model_state"


def test_a_bitwise_contract_without_digests_in_the_reference_fails() -> None:
    outcome = compare_tensors(events((0, 0, {"loss": 1.0})), events((0, 0, {"model_state": A})), ["model_state", "logits"])
    assert (outcome.status, outcome.detail) == ("fail", "the reference trace has no digest of model_state, logits: a bitwise contract cannot be checked")


# --- step values -----------------------------------------------------------------------------


def test_first_loss_difference_names_the_step_rank_and_size() -> None:
    reference = events((0, 0, {"loss": 2.0}), (1, 0, {"loss": 1.5}), (1, 1, {"loss": 1.25}), (2, 0, {"loss": 1.0}))
    rebuilt = events((0, 0, {"loss": 2.0}), (1, 0, {"loss": 1.5}), (1, 1, {"loss": 1.5}), (2, 0, {"loss": 0.0}))
    exact = Tolerance(0.0, 0.0)
    assert (
        first_loss_difference(loss_figures(reference, rebuilt, "exact", exact))
        == "the loss first differs at step 1, rank 1 (1.5 vs 1.25 in the reference, |Δ| 0.25)"
    )
    assert first_loss_difference(loss_figures(reference, dict(reference), "exact", exact)) is None
    assert first_loss_difference(loss_figures(reference, {}, "exact", exact)) == "the rebuild has no loss at step 0, rank 0 (the reference has 2.0)"


def test_compare_values_exactly_equal_passes() -> None:
    reference = events((0, 0, {"loss": 2.0, "grad_norm": 1.0}), (1, 0, {"loss": 1.0, "grad_norm": 0.5}))
    outcome, result = compare_values(reference, dict(reference), ["loss", "grad_norm"], 0.0, 0.0)
    assert outcome.status == "pass" and result.passed and result.compared == 2
    assert outcome.detail == "loss/grad_norm exactly equal at 2 (step, rank) points; largest difference 0"


def test_compare_values_outside_the_tolerance_fails_at_the_first_point() -> None:
    reference = events((0, 0, {"loss": 2.0}), (1, 0, {"loss": 1.0}), (1, 1, {"loss": 1.0}), (2, 0, {"loss": 0.5}))
    rebuilt = events((0, 0, {"loss": 2.0}), (1, 0, {"loss": 1.0}), (1, 1, {"loss": 1.2}), (2, 0, {"loss": 0.9}))
    outcome, result = compare_values(reference, rebuilt, ["loss"], 0.1, 0.0)
    assert outcome.status == "fail" and result.first_outside is not None and result.first_outside[1].where == "step 1, rank 1"
    assert outcome.detail == "step 1, rank 1: loss outside |a-b| <= 0.1 + 0*|b| (|Δ| 0.2); largest difference 0.4 (loss at step 2, rank 0)"
    assert outcome.data == {"first_step": 1, "rank": 1, "quantity": "loss"}


def test_compare_values_with_a_relative_tolerance_passes_and_states_the_rule() -> None:
    reference = events((0, 0, {"loss": 10.0}))
    outcome, _ = compare_values(reference, events((0, 0, {"loss": 10.5})), ["loss"], 0.0, 0.05)
    assert outcome.status == "pass" and outcome.detail == "loss |a-b| <= 0 + 0.05*|b| at 1 (step, rank) points; largest difference 0.5 (loss at step 0, rank 0)"


def test_compare_values_with_no_reference_steps_fails() -> None:
    outcome, result = compare_values({}, events((0, 0, {"loss": 1.0})), ["loss"], 0.0, 0.0)
    assert (outcome.status, outcome.detail, result.compared) == ("fail", "the reference trace has no steps in the compared range", 0)
