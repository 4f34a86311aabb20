"""`test: robust` and `fail_on: worse` (issue 40, its remainder): the prediction interval holds
the reference seeds' own central band, the rank-sum test judges a coarse grid from 20 reference
seeds, a one-sided test fails only the worse way, and records without the new fields keep their
meaning. Small and deterministic; the calibration on real seed sets is benchmarks/calibration.py's.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from pathlib import Path
from typing import Any

import pytest
from support import edit_record

from reprogate.core.record import Metric, read_record
from reprogate.core.seedstats import (
    RANK_ANY_GRID_SEEDS,
    assured_power,
    choose,
    failing_side,
    interval_bounds,
    interval_half_width,
    mean_sd,
    minimum_detectable_shift,
    power,
    rank_sum_p,
    reference_band,
)
from reprogate.rebuild.planner import plan
from reprogate.rebuild.stats import difference_test, prediction_interval
from reprogate.validate.runner import Options, validate

RECORD = Path("tiny") / "records" / "tiny.yaml"
SKEWED = [10.0] * 17 + [11.0, 16.0, 16.0]  # epochs to converge: two of twenty seeds took 16
COARSE = [18.0] * 18 + [17.0, 19.0]  # a grid of 1 epoch, coarser than the seeds' sd (0.32)


def found(path: Path) -> list[tuple[str, str]]:
    return [(d.code, d.severity.value) for f in validate([str(path)], Options()).files for d in f.diagnostics]


def test_the_band_is_the_reference_s_own_order_statistics() -> None:
    assert reference_band([float(v) for v in range(8)], 0.05) is None  # j = floor(2 · 0.05 · 9) = 0: no band below 9 seeds
    assert reference_band([float(v) for v in range(9)], 0.05) == (0.0, 8.0)  # j = 1: the range
    assert reference_band([float(v) for v in range(20)], 0.05) == (1.0, 18.0)  # j = 2: all but the lowest and highest
    assert reference_band([float(v) for v in range(20)], 0.01) is None


def test_a_value_the_reference_seeds_reached_themselves_passes_one_seed() -> None:
    """The false fail of `seeds` on skewed seeds: a rebuild that took 16 epochs, as two of the
    twenty reference seeds did, lies outside the t interval; `robust` holds the band [10, 16]."""
    assert not prediction_interval(SKEWED, 0.05, 1.0, "seeds").contains(16.0)
    robust = prediction_interval(SKEWED, 0.05, 1.0, "robust")
    assert robust.contains(16.0) and robust.high == 16.0
    assert not robust.contains(16.5) and not robust.contains(30.0)  # beyond what any seed reached and beyond the t: still a fail
    assert choose("robust", 1, 1.0, 1.0).band and not choose("seeds", 1, 1.0, 1.0).band


def test_robust_at_one_seed_is_the_t_interval_without_widening_where_the_band_lies_inside() -> None:
    values = [0.97 + 0.01 * math.sin(i) for i in range(20)]
    mean, sd = mean_sd(values)
    low, high = interval_bounds(values, 0.05, 0.002, "robust")
    half = 2.093024054408263 * sd * math.sqrt(1 + 1 / 20)  # t(0.975, 19), no r²/24 term
    assert low == pytest.approx(mean - half, abs=1e-12) and high == pytest.approx(mean + half, abs=1e-12)


def test_a_seed_that_did_not_converge_on_a_coarse_grid_is_one_rank_not_a_failed_build() -> None:
    rebuilt = [18.0, 18.0, 36.0]  # one of three seeds did not converge (twice the median epochs)
    assert not difference_test(COARSE, rebuilt, 0.05, 1.0, "seeds").passed  # the t: its mean moves by 6 sd
    robust = difference_test(COARSE, rebuilt, 0.05, 1.0, "robust")
    assert robust.passed and robust.kind == "rank-sum" and f"n = 20 >= {RANK_ANY_GRID_SEEDS}" in robust.reason
    broken = difference_test(COARSE, [36.0, 36.0, 36.0], 0.05, 1.0, "robust")
    assert not broken.passed and broken.p_value < 0.001  # a build whose every seed fails to converge still fails
    assert not difference_test(COARSE, [19.0, 19.0, 20.0], 0.05, 1.0, "robust").passed  # a shift of a grid step is caught


def test_the_rule_reads_the_record_n_and_m_never_a_rebuild_value() -> None:
    assert choose("robust", 3, 0.3, 1.0, 19).kind == "t"  # a coarse grid and fewer than 20 seeds: the ranks would tie
    assert choose("robust", 3, 0.3, 1.0, 20).kind == "rank-sum"
    assert choose("robust", 3, 1.0, 0.5, 5).kind == "rank-sum"  # a fine grid: as `seeds`
    assert choose("robust", 5, 0.0, 1.0, 40).kind == "t"  # no spread: nothing to rank against
    assert choose("robust", 2, 1.0, 0.0, 40).kind == "t"
    kinds = {difference_test(COARSE, [v, 18.0, 18.0], 0.05, 1.0, "robust").kind for v in (18.0, 36.0, -5.0, 1e9)}
    assert kinds == {"rank-sum"}


@pytest.mark.parametrize("test", [None, "difference", "seeds"])
def test_records_without_the_new_fields_keep_their_meaning(test: str | None) -> None:
    """As on main: the interval is the mean ± the half width of the record's test, two-sided, and
    neither n nor `fail_on` changes which test runs."""
    rng = random.Random(42)
    for _ in range(50):
        values = [round(rng.gauss(1.0, 0.1), 2) for _ in range(rng.randint(2, 30))]
        mean, _ = mean_sd(values)
        half = interval_half_width(values, 0.05, 0.01, test)
        assert interval_bounds(values, 0.05, 0.01, test) == (mean - half, mean + half)
    for m, n in itertools.product((1, 2, 3, 5), (2, 10, 20, 40)):
        assert choose(test, m, 0.3, 1.0, n) == choose(test, m, 0.3, 1.0)
    assert failing_side(Metric("val_loss", direction="lower")) == "both"
    assert failing_side(Metric("val_loss", direction="lower", fail_on="any")) == "both"


def test_fail_on_worse_fails_only_the_worse_way() -> None:
    reference = [1.0 + 0.01 * math.sin(i) for i in range(10)]
    worse, better = [1.013, 1.014, 1.012], [0.987, 0.986, 0.988]
    for test in ("seeds", "robust"):
        both = [difference_test(reference, y, 0.05, 0.0, test) for y in (worse, better)]
        assert [r.passed for r in both] == [False, False]
        higher = [difference_test(reference, y, 0.05, 0.0, test, "higher") for y in (worse, better)]
        assert [r.passed for r in higher] == [False, True]
        lower = [difference_test(reference, y, 0.05, 0.0, test, "lower") for y in (worse, better)]
        assert [r.passed for r in lower] == [True, False]
    t_two, t_one = difference_test(reference, worse[:2], 0.05), difference_test(reference, worse[:2], 0.05, side="higher")
    assert t_one.limit is not None and t_two.limit is not None and t_one.limit < t_two.limit  # t(1 - α) < t(1 - α/2)
    assert t_one.p_value == pytest.approx(t_two.p_value / 2)


def test_a_one_sided_interval_applies_only_its_failing_bound() -> None:
    values = [1.0 + 0.01 * math.sin(i) for i in range(10)]
    two = prediction_interval(values, 0.05, 0.0, "robust")
    one = prediction_interval(values, 0.05, 0.0, "robust", "higher")
    assert one.high < two.high and one.high - one.mean == pytest.approx(one.mean - one.low)
    assert one.contains(0.5) and not one.contains(one.high + 1e-9) and not two.contains(0.5)
    low = prediction_interval(values, 0.05, 0.0, "robust", "lower")
    assert low.contains(5.0) and not low.contains(low.low - 1e-9)


def test_the_one_sided_rank_sum_p_value_is_the_exact_permutation_mid_p() -> None:
    rng = random.Random(43)
    for trial in range(60):
        n, m = rng.randint(2, 7), rng.randint(1, 4)
        pick = (lambda: float(rng.choice([1, 2, 3, 5]))) if trial % 2 else (lambda: rng.gauss(0.0, 1.0))
        x, y = [pick() for _ in range(n)], [pick() for _ in range(m)]
        pooled = sorted(x + y)
        rank = {v: (pooled.index(v) + len(pooled) - pooled[::-1].index(v) + 1) / 2 for v in pooled}
        scores = [rank[v] for v in x + y]
        observed = sum(rank[v] for v in y)
        sums = [sum(scores[i] for i in c) for c in itertools.combinations(range(n + m), m)]
        for side, sign in (("higher", 1), ("lower", -1)):
            expected = (sum(sign * (s - observed) > 1e-9 for s in sums) + sum(abs(s - observed) <= 1e-9 for s in sums) / 2) / len(sums)
            assert rank_sum_p(x, y, side) == pytest.approx(expected, abs=1e-12)


def test_one_sided_power_is_higher_and_catches_a_smaller_shift() -> None:
    for n, m, test in ((10, 1, "robust"), (10, 3, "robust"), (20, 5, "seeds"), (10, 2, None)):
        assert power(n, m, 2.0, 1.0, 0.05, 0.0, test, one_sided=True) > power(n, m, 2.0, 1.0, 0.05, 0.0, test)
        assert minimum_detectable_shift(n, m, 1.0, 0.05, 0.8, 0.0, test, one_sided=True) < minimum_detectable_shift(n, m, 1.0, 0.05, 0.8, 0.0, test)
        assert assured_power(n, m, 3.0, 1.0, 0.05, 0.0, test, True) > assured_power(n, m, 3.0, 1.0, 0.05, 0.0, test)


def test_one_sided_power_matches_simulation_of_the_one_sided_t() -> None:
    """The planner's one-sided power is the one-sided t's: 4,000 drills of normal seeds agree
    within 2.5 points (fixed RNG seed)."""
    rng = random.Random(44)
    n, m, shift = 10, 2, 1.5
    fails = 0
    for _ in range(4000):
        x = [rng.gauss(0.0, 1.0) for _ in range(n)]
        y = [rng.gauss(shift, 1.0) for _ in range(m)]
        fails += not difference_test(x, y, 0.05, 0.0, "robust", "higher").passed
    assert fails / 4000 == pytest.approx(power(n, m, shift, 1.0, 0.05, 0.0, "robust", one_sided=True), abs=0.025)


def test_validate_refuses_fail_on_worse_without_a_direction(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(fail_on="worse"))
    assert found(record) == [("interval-does-not-recompute", "error")] * 2  # the two-sided interval's bound is wider than the one-sided one
    edit_record(record, lambda r: r["contract"]["metric"].pop("direction"))
    assert found(record) == [("fail-on-without-direction", "error")]
    said = cli("validate", str(record))
    assert said.exit_code == 1 and "declare contract.metric.direction" in said.output


def test_a_one_sided_record_stores_its_one_sided_bound_and_validate_recomputes_it(cli: Any, project: Path) -> None:
    record = project / RECORD
    import yaml

    before = yaml.safe_load(record.read_text())["contract"]["metric"]["interval"]
    edit_record(record, lambda r: r["contract"]["metric"].update(fail_on="worse"))
    assert cli("interval", str(record)).exit_code == 0
    after = yaml.safe_load(record.read_text())["contract"]["metric"]["interval"]
    assert after["high"] < before["high"] and "one-sided (fail_on: worse): only the high bound" in after["computed_by"]
    assert found(record) == []
    edit_record(record, lambda r: r["contract"]["metric"].pop("fail_on"))  # back to two-sided: the stored bound is narrower, so stricter
    edit_record(record, lambda r: r["contract"]["metric"]["interval"].update(high=before["high"] + 0.01))
    assert ("interval-does-not-recompute", "error") in found(record)  # a widened bound is still refused


def test_a_seeds_record_is_told_what_to_name(cli: Any, project: Path) -> None:
    record = project / RECORD
    assert found(record) == []  # the example names test: robust
    edit_record(record, lambda r: r["contract"]["metric"].update(test="seeds"))
    assert cli("interval", str(record)).exit_code == 0
    assert found(record) == [("metric-test-seeds", "notice")]
    assert "name `test: robust`" in cli("validate", str(record)).output


def test_the_planner_plans_the_one_sided_test_where_declared(project: Path) -> None:
    import yaml

    data: dict[str, Any] = yaml.safe_load((project / RECORD).read_text())
    two = plan(read_record(data))
    data["contract"]["metric"]["fail_on"] = "worse"
    one = plan(read_record(data))
    assert one.to_json()["sided"] == "one" and two.to_json()["sided"] == "two"
    assert all(one.detectable[m] < two.detectable[m] for m in (1, 3, 5))
    assert "one-sided, fail_on: worse" in one.lines()[0]


def test_init_writes_robust_and_fail_on_worse_where_asked() -> None:
    from reprogate.init.draft import Plan, _metric

    base = Plan(name="n", project="p", tree="t", entrypoint=["python"], config="c", config_hash="h", realizer="current", world_size=1, seeds=[1])
    values = [1.0 + 0.01 * math.sin(i) for i in range(10)]
    two = _metric(base, "statistical", "val_loss", values, [])
    notes: list[str] = []
    one = _metric(dataclasses.replace(base, fail_on="worse"), "statistical", "val_loss", values, notes)
    assert two["test"] == one["test"] == "robust" and "fail_on" not in two and one["fail_on"] == "worse"
    assert one["detect"]["absolute"] < two["detect"]["absolute"] and "one-sided, fail_on: worse" in notes[-1]
    sd = mean_sd(values)[1]
    assert assured_power(10, one["rebuild_seeds"], one["detect"]["absolute"], sd, 0.05, one["resolution"], "robust", True) >= 0.8 - 1e-6
