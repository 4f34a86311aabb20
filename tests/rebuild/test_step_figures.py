"""reprogate/rebuild/step_figures.py and the steps stage's test built on it (compare.compare_values):
each figure is one (step, rank) point, measured once, by |a-b| <= abs + rel*|b|, on traces written
out by hand."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reprogate.core.schemas import validator
from reprogate.rebuild.compare import QuantityError, compare_values, first_loss_difference, loss_figures, step_events
from reprogate.rebuild.step_figures import MAX_DRAWN, Point, Tolerance, from_json, judged_as
from reprogate.runtime.trace import StepEvent, TraceError, parse_event


def events(*points: tuple[int, int, dict[str, Any]]) -> dict[tuple[int, int], StepEvent]:
    return step_events([parse_event({"type": "step", "step": s, "rank": r, **values}, "a test") for s, r, values in points], 0, None)


def test_the_first_point_outside_and_the_largest_deviation_are_named_with_their_quantity_step_and_rank() -> None:
    reference = events(
        (1, 0, {"loss": 2.0, "grad_norm": 1.0}), (2, 0, {"loss": 1.5, "grad_norm": 1.0}), (3, 0, {"loss": 1.0, "grad_norm": 1.0}), (4, 0, {"loss": 0.8})
    )
    rebuilt = events(
        (1, 0, {"loss": 2.0, "grad_norm": 1.0}), (2, 0, {"loss": 1.5, "grad_norm": 1.3}), (3, 0, {"loss": 1.6, "grad_norm": 1.0}), (4, 0, {"loss": 0.8})
    )
    outcome, judgement = compare_values(reference, rebuilt, ["loss", "grad_norm"], 0.1, 0.0)
    assert judgement.compared == 4  # (step, rank) points, not (point, quantity) pairs
    assert judgement.first_outside == ("grad_norm", Point(2, 0, 1.0, 1.3))
    name, largest = judgement.largest  # type: ignore[misc]
    assert (name, largest.step, largest.rank) == ("loss", 3, 0) and largest.difference == pytest.approx(0.6)
    assert not judgement.passed
    assert outcome.detail == "step 2, rank 0: grad_norm outside |a-b| <= 0.1 + 0*|b| (|Δ| 0.3); largest difference 0.6 (loss at step 3, rank 0)"


def test_within_the_tolerance_passes_and_states_the_largest_deviation() -> None:
    outcome, judgement = compare_values(
        events((0, 0, {"loss": 1.0}), (5, 0, {"loss": 0.5})), events((0, 0, {"loss": 1.01}), (5, 0, {"loss": 0.49})), ["loss"], 0.0, 0.03
    )
    assert judgement.passed and judgement.first_outside is None and judgement.compared == 2
    assert judgement.largest is not None and judgement.largest[1].difference == pytest.approx(0.01)
    exact, same = compare_values(events((0, 0, {"loss": 1.0})), events((0, 0, {"loss": 1.0})), ["loss"], 0.0, 0.0)
    assert same.passed and exact.detail == "loss exactly equal at 1 (step, rank) points; largest difference 0"


@pytest.mark.parametrize("rebuilt", [{}, {"grad_norm": 1.0}, {"loss": math.nan}, {"loss": math.inf}], ids=["step-missing", "quantity-missing", "nan", "inf"])
def test_a_missing_or_non_finite_value_is_outside_any_tolerance(rebuilt: dict[str, float]) -> None:
    theirs = events((7, 0, rebuilt)) if rebuilt else {}
    outcome, judgement = compare_values(events((7, 0, {"loss": 1.0})), theirs, ["loss"], 1e9, 1e9)
    assert judgement.first_outside == ("loss", Point(7, 0, 1.0, None))
    assert judgement.largest is not None and judgement.largest[1].difference == math.inf
    assert outcome.detail.startswith("step 7, rank 0: loss is missing from the rebuild")


def test_a_quantity_the_reference_lacks_is_not_compared_and_a_reference_that_is_no_number_is_refused() -> None:
    _, judgement = compare_values(events((1, 0, {"loss": 1.0})), events((1, 0, {"loss": 1.0})), ["loss", "grad_norm"], 0.0, 0.0)
    assert judgement.passed and judgement.compared == 1 and judgement.of("grad_norm").compared == 0  # type: ignore[union-attr]
    for name, bad in (("loss", math.nan), ("grad_norm", "1.0")):  # a field a script added is checked where a contract names it
        with pytest.raises(QuantityError) as refused:
            compare_values(events((1, 0, {name: bad})), events((1, 0, {name: 1.0})), [name], 0.0, 0.0)
        assert refused.value.side == "reference" and f"step 1, rank 0: {name}" in str(refused.value)
    with pytest.raises(TraceError, match=r"a test: loss is a number, not \"1.0\""):  # a field of the format: refused by the reader
        events((1, 0, {"loss": "1.0"}))


def two_ranks(offsets: dict[tuple[int, int], float], steps: int = 6) -> tuple[dict[tuple[int, int], StepEvent], dict[tuple[int, int], StepEvent]]:
    reference = events(*[(s, r, {"loss": 2.0 + 0.25 * r - 0.1 * s}) for s in range(1, steps + 1) for r in (0, 1)])
    rebuilt = events(*[(s, r, {"loss": (e.loss or 0.0) + offsets.get((s, r), 0.0)}) for (s, r), e in reference.items()])
    return reference, rebuilt


def test_each_figure_is_one_rank_at_one_step_where_the_mean_would_hide_it() -> None:
    # the ranks move in opposite directions: the mean over ranks barely moves, each rank does
    reference, rebuilt = two_ranks({(3, 0): 4e-4, (3, 1): -3e-4, (5, 1): 9e-4, (5, 0): -8e-4})
    figures = loss_figures(reference, rebuilt, "tolerance", Tolerance(1e-4, 0.0))
    assert figures.first_difference is not None and figures.first_difference.where == "step 3, rank 0"
    assert figures.first_difference.difference == pytest.approx(4e-4)
    assert figures.largest is not None and figures.largest.where == "step 5, rank 1" and figures.largest.difference == pytest.approx(9e-4)
    assert figures.first_outside == figures.first_difference
    assert [p.where for p in figures.drawn] == ["step 1, rank 0", "step 2, rank 0", "step 3, rank 0", "step 4, rank 0", "step 5, rank 1", "step 6, rank 0"]
    assert first_loss_difference(figures) == f"the loss first differs at step 3, rank 0 ({1.7 + 4e-4!r} vs {1.7!r} in the reference, |Δ| 0.0004)"


def test_a_drawn_point_is_outside_where_any_point_of_its_step_is() -> None:
    # rank 1's larger reference gives it the larger tolerance: its difference is the larger one and
    # inside; rank 0's is smaller and outside. The chart must draw the point that is outside.
    reference = events((1, 0, {"loss": 1.0}), (1, 1, {"loss": 100.0}))
    rebuilt = events((1, 0, {"loss": 1.02}), (1, 1, {"loss": 100.5}))
    figures = loss_figures(reference, rebuilt, "tolerance", Tolerance(0.0, 0.01))
    assert figures.largest is not None and figures.largest.rank == 1 and not figures.largest.outside(figures.tolerance)
    assert figures.first_outside is not None and figures.first_outside.rank == 0
    assert [p.rank for p in figures.drawn] == [0]


def test_a_long_run_draws_at_most_max_drawn_points_with_the_largest_difference_among_them() -> None:
    reference, rebuilt = two_ranks({(2718, 1): 0.5, **{(s, 0): 1e-6 for s in range(1234, 5001)}}, steps=5000)
    figures = loss_figures(reference, rebuilt, "exact", Tolerance(0.0, 0.0))
    assert len(figures.drawn) == MAX_DRAWN and figures.steps == 5000 and figures.span == (1, 5000)
    assert max(p.difference for p in figures.drawn) == pytest.approx(0.5) and figures.largest == next(p for p in figures.drawn if p.step == 2718)
    first = next(i for i, p in enumerate(figures.drawn) if p.difference > 0)
    assert figures.drawn[first - 1].step < 1234 <= figures.drawn[first].step


def test_how_a_contract_judges_the_loss() -> None:
    assert judged_as("bitwise", ["loss"], "loss", 1.0, 1.0) == ("exact", Tolerance(0.0, 0.0))
    assert judged_as("behavioral", ["loss", "grad_norm"], "loss", 1e-4, 0.0) == ("tolerance", Tolerance(1e-4, 0.0))
    assert judged_as("behavioral", ["grad_norm"], "loss", 1e-4, 0.0) == ("not judged", None)
    assert judged_as("statistical", ["loss"], "loss", 0.0, 0.0) == ("not judged", None)


def test_the_figures_round_trip_through_the_verdict_schema() -> None:
    reference, rebuilt = two_ranks({(3, 0): 4e-4, (4, 1): 2e-3})
    rebuilt.pop((6, 1))
    figures = loss_figures(reference, rebuilt, "tolerance", Tolerance(1e-4, 1e-4))
    data = figures.to_json()
    checker = validator("Verdict")
    type(checker)(checker.schema["properties"]["loss"]).validate(data)
    assert from_json(data) == figures
    assert from_json({**data, "judged": "roughly"}) is None and from_json(None) is None
