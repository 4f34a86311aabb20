"""The seed statistics of issue 40: ties pass, `test: seeds` picks its test by a rule fixed before
the rebuild and says which ran, the rank-sum p value is the exact permutation one, stated power is
assured, and the planner prices (n, m) in GPU-hours from the record's reference run.

Everything here is small and deterministic (fixed RNG seeds); the calibration on real seed sets is
benchmarks/calibration.py's.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from support import edit_record

from reprogate.core.record import read_record
from reprogate.core.seedstats import assured_power, assured_sigma, choose, minimum_detectable_shift, power, rank_sum_p
from reprogate.rebuild.planner import plan
from reprogate.rebuild.stats import difference_test, prediction_interval

RECORD = Path("tiny") / "records" / "tiny.yaml"


@pytest.mark.parametrize("test", [None, "difference", "seeds"])
def test_identical_values_pass_every_test(test: str | None) -> None:
    assert difference_test([1.9] * 10, [1.9] * 3, 0.05, 0.0, test).passed  # the case: -2.2e-16 beyond ±1.7e-16 before
    assert prediction_interval([1.9] * 10, 0.05, 0.0, test).contains(1.9)
    rng = random.Random(40)
    failing = [
        (value, n, m)
        for value in (rng.random() for _ in range(300))
        for n, m in itertools.product((2, 3, 5, 10, 20), (2, 3, 5))
        if not difference_test([value] * n, [value] * m, 0.05, 0.0, test).passed
    ]
    assert failing == []  # 198 of 300 values failed at some (n, m) before the floor


def test_the_floor_is_a_few_ulps_and_never_hides_a_real_difference() -> None:
    assert not difference_test([1.9] * 10, [1.9 + 1e-12] * 3, 0.05).passed  # 4,500 ULPs: a difference, not rounding
    assert difference_test([1.9] * 10, [1.9 + 2 * math.ulp(1.9)] * 3, 0.05).passed


def test_the_rule_is_decided_by_the_record_and_m_alone() -> None:
    assert choose(None, 3, 1.0, 0.0).kind == "t" and choose(None, 3, 1.0, 0.0).widening == "half-step"  # old records keep their test
    assert choose("difference", 1, 1.0, 0.5).kind == "prediction"
    assert (choose("seeds", 1, 1.0, 0.5).kind, choose("seeds", 1, 1.0, 0.5).widening) == ("prediction", "variance")
    assert (choose("seeds", 2, 1.0, 0.5).kind, choose("seeds", 2, 1.0, 0.5).widening) == ("t", "none")
    assert choose("seeds", 3, 1.0, 0.5).kind == "rank-sum"  # a grid finer than the spread
    assert choose("seeds", 3, 1.0, 2.0).kind == "t"  # a grid coarser than the spread: ranks would tie
    assert choose("seeds", 5, 0.0, 0.0).kind == "t"  # no spread: nothing to rank against
    said = difference_test([0.9, 0.95, 1.0, 1.05, 1.1], [1.0, 1.01, 0.99], 0.05, 0.01, "seeds")
    assert said.kind == "rank-sum" and "m = 3 >= 3" in said.reason and said.limit is None


def test_a_rebuild_value_never_changes_which_test_runs() -> None:
    reference = [0.9, 0.95, 1.0, 1.05, 1.1]
    kinds = {difference_test(reference, [v, 1.0, 1.0], 0.05, 0.01, "seeds").kind for v in (1.0, 5.0, -3.0, 1e9)}
    assert kinds == {"rank-sum"}


def test_the_rank_sum_p_value_is_the_exact_permutation_mid_p() -> None:
    rng = random.Random(41)
    for trial in range(60):
        n, m = rng.randint(2, 7), rng.randint(1, 4)
        pick = (lambda: float(rng.choice([1, 2, 3, 5]))) if trial % 2 else (lambda: rng.gauss(0.0, 1.0))
        x, y = [pick() for _ in range(n)], [pick() for _ in range(m)]
        pooled = sorted(x + y)
        rank = {v: (pooled.index(v) + len(pooled) - pooled[::-1].index(v) + 1) / 2 for v in pooled}  # mid-ranks
        scores = [rank[v] for v in x + y]
        centre = m * (n + m + 1) / 2
        observed = abs(sum(rank[v] for v in y) - centre)
        splits = [abs(sum(scores[i] for i in c) - centre) for c in itertools.combinations(range(n + m), m)]
        expected = (sum(d > observed + 1e-9 for d in splits) + sum(abs(d - observed) <= 1e-9 for d in splits) / 2) / len(splits)
        assert rank_sum_p(x, y) == pytest.approx(expected, abs=1e-12)


def test_how_far_a_seed_that_did_not_converge_went_does_not_move_the_rank_sum() -> None:
    reference = [2.40, 2.41, 2.39, 2.42, 2.38, 2.40, 2.41, 2.39, 2.40, 2.41]
    late = [difference_test(reference, [2.40, 2.41, far], 0.05, 0.0, "seeds") for far in (2.5, 11.0, 1e9)]  # one of three diverged
    assert {r.kind for r in late} == {"rank-sum"} and len({r.p_value for r in late}) == 1 and all(r.passed for r in late)
    t = [difference_test(reference, [2.40, 2.41, far], 0.05, 0.0, "difference").p_value for far in (2.5, 11.0, 1e9)]
    assert len(set(t)) == 3  # the t's verdict rides on the outlier's size
    assert not difference_test(reference, [2.60, 2.61, 2.62], 0.05, 0.0, "seeds").passed  # every seed moved: caught


@pytest.mark.parametrize("test", [None, "seeds"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_rebuild_seed_with_no_finite_metric_fails_whatever_the_test(test: str | None, bad: float) -> None:
    """An attack on the rank-sum: NaN sorts nowhere and inf is merely "the highest seed"; neither may pass."""
    said = difference_test([0.9, 0.95, 1.0, 1.05, 1.1], [bad, 1.0, 1.0], 0.05, 0.0, test)
    assert not said.passed and "not a finite number" in said.reason


def test_the_variance_widening_is_what_the_stored_interval_and_validate_use() -> None:
    values = [40.0, 45.0, 45.0, 40.0, 45.0]
    half = prediction_interval(values, 0.05, 5.0, "seeds")
    mean = sum(values) / 5
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / 4)
    expected = 2.7764451051977987 * math.sqrt(s * s + 25 / 24) * math.sqrt(1.2)
    assert half.high - mean == pytest.approx(expected, rel=1e-9)
    assert prediction_interval(values, 0.05, 5.0).high - mean == pytest.approx(2.7764451051977987 * s * math.sqrt(1.2) + 2.5, rel=1e-9)


def test_assured_power_is_reached_by_at_least_that_share_of_records() -> None:
    """Records of n = 5 normal seeds (σ = 1), each stating the assured power at a shift of 3: the
    share whose true (exact) power reaches what they state is at least the stated share; the
    plug-in power, at the record's own s, is reached by far fewer."""
    rng = random.Random(42)
    n, m, shift, alpha = 5, 1, 3.0, 0.05
    truth = power(n, m, shift, 1.0, alpha)
    records = [[rng.gauss(0.0, 1.0) for _ in range(n)] for _ in range(200)]
    stated, plugged = [], []
    for values in records:
        mean = sum(values) / n
        s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        stated.append(assured_power(n, m, shift, s, alpha))
        plugged.append(power(n, m, shift, s, alpha))
    reached = sum(truth >= p for p in stated) / len(records)
    assert reached >= sorted(stated)[len(stated) // 2]  # the median record's stated power is reached by at least that share
    assert sum(truth >= p for p in plugged) / len(records) < 0.6  # the plug-in states more than it delivers
    assert assured_sigma(n, 1.0, 0.8) == pytest.approx(math.sqrt(4 / 1.6487766180659974), rel=1e-9)  # chi2.ppf(0.2, 4)


def gpu_record(cli: Any, project: Path, **run: Any) -> Path:
    record = project / RECORD

    def change(r: dict[str, Any]) -> None:
        r["reference"]["run"] = run
        r["execution"]["nodes"] = 2
        r["contract"]["metric"]["detect"] = {"relative": 0.02}

    edit_record(record, change)
    return record


def test_the_planner_prices_each_n_and_m_in_gpu_hours(cli: Any, project: Path) -> None:
    record = gpu_record(cli, project, seconds=5400, gpus=16)  # 1.5 h on 16 GPUs over 2 nodes: 24 GPU-hours a run
    done = cli("interval", str(record), "--plan", "--gpu-hour-cost", "2.5", "--format", "json")
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["run"] == {"seconds": 5400.0, "gpus": 16, "nodes": 2, "gpu_hour_cost": 2.5, "hours": "GPU-h"}
    cells = {(c["n"], c["m"]): c for c in found["cells"]}
    # the tiny record is bitwise: each rebuild runs one more, replaying the trace's seed, so m = 3 is 4 runs
    assert found["trace_replay_runs"] == 1 and cells[(20, 3)]["runs_per_rebuild"] == 4
    assert cells[(20, 3)]["gpu_hours_per_rebuild"] == pytest.approx(96.0) and cells[(20, 3)]["cost_per_rebuild"] == pytest.approx(240.0)
    assert cells[(40, 1)]["extra_reference_runs"] == 20 and cells[(40, 1)]["extra_reference_gpu_hours"] == pytest.approx(480.0)
    best = found["recommended"]
    assert best["catches_declared_shift"] and best["minimum_detectable_shift"] <= found["declared_shift"]
    assert all(c["m"] >= best["m"] for c in found["cells"] if c["catches_declared_shift"])  # nothing cheaper per rebuild catches it
    data = plan(read_record(__import__("yaml").safe_load(record.read_text())), None, 2.5)
    assert data.to_json()["cells"] == found["cells"]  # the text and JSON are one plan
    text = cli("interval", str(record), "--plan", "--gpu-hour-cost", "2.5")
    assert "24 GPU-h a run, 60 at 2.5 an hour" in text.output and f"n={best['n']}, m={best['m']}" in text.output
    kept = found["recommended_with_the_reference_as_is"]
    assert kept["n"] == found["n"] and kept["m"] >= best["m"]
    assert f"contract.metric.rebuild_seeds: {kept['m'] + 1}" in text.output and "m + 1: the trace replay's run counts" in text.output
    assert "one more run replays the reference's seed for the bitwise trace comparison" in text.output


def test_without_gpus_the_planner_counts_node_hours_and_without_seconds_only_runs(cli: Any, project: Path) -> None:
    record = gpu_record(cli, project, gpus=0, seconds=36)
    assert "0.02 node-h a run" in cli("interval", str(record), "--plan").output
    edit_record(record, lambda r: r["reference"].pop("run"))
    said = cli("interval", str(record), "--plan")
    assert said.exit_code == 0 and "states no reference.run.seconds" in said.output


@pytest.mark.parametrize("cost", ["-1", "nan", "inf"])
def test_a_bad_gpu_hour_cost_is_a_usage_error(cli: Any, project: Path, cost: str) -> None:
    done = cli("interval", str(project / RECORD), "--plan", "--gpu-hour-cost", cost)
    assert done.exit_code == 2 and "--gpu-hour-cost" in done.output


def test_the_minimum_detectable_shift_of_the_rank_sum_is_planned_below_the_t() -> None:
    t = minimum_detectable_shift(10, 3, 1.0, 0.05, 0.8, 0.0, "difference")
    ranked = minimum_detectable_shift(10, 3, 1.0, 0.05, 0.8, 0.0, "seeds")
    assert ranked > t  # the rank-sum test is planned with less efficiency: its stated power stays honest


def test_the_planner_recommends_no_single_rebuild_seed_against_too_few_reference_seeds(cli: Any, project: Path) -> None:
    """A cell of one rebuild seed and fewer reference seeds than the band needs is shown, marked,
    and never recommended: skewed seed sets fail it falsely (issue 40)."""
    record = project / RECORD
    edit_record(
        record,
        lambda r: (r["contract"]["metric"].update(detect={"relative": 0.5}), r["reference"]["metric"].update(values=r["reference"]["metric"]["values"][:5])),
    )
    assert cli("interval", str(record)).exit_code == 0
    found = json.loads(cli("interval", str(record), "--plan", "--format", "json").stdout)
    cells = {(c["n"], c["m"]): c for c in found["cells"]}
    assert cells[(5, 1)]["catches_declared_shift"] and not cells[(5, 1)]["holds_skewed_seeds"] and cells[(10, 1)]["holds_skewed_seeds"]
    assert (found["recommended"]["n"], found["recommended"]["m"]) == (10, 1), "one seed once the reference has the band"
    assert found["recommended_with_the_reference_as_is"]["m"] >= 2
    text = cli("interval", str(record), "--plan").output
    assert "(one seed, n < 9: α not held on skewed seeds)" in text


def test_the_one_evaluation_power_check_agrees_with_the_bisection() -> None:
    """validate asks assured_at_least of every record (one power evaluation); it must say what
    the bisection of assured_power says, away from the bisection's own 1e-6."""
    from reprogate.core.seedstats import assured_at_least

    rng = random.Random(5)
    checked = 0
    for _ in range(300):
        n, m = rng.choice([3, 5, 10, 20]), rng.choice([1, 2, 3, 5, 20])
        shift, sd, test = rng.uniform(0.1, 5.0), rng.uniform(0.2, 2.0), rng.choice([None, "seeds", "robust"])
        target, resolution, one_sided = rng.choice([0.5, 0.8, 0.9]), rng.choice([0.0, 0.05]), rng.random() < 0.3
        stated = assured_power(n, m, shift, sd, 0.05, resolution, test, one_sided)
        if abs(stated - target) < 1e-5:
            continue
        assert assured_at_least(n, m, shift, sd, 0.05, target, resolution, test, one_sided) == (stated >= target), (n, m, shift, sd, test, target)
        checked += 1
    assert checked > 250


def test_a_plan_on_cpus_prices_extra_reference_seeds_in_node_hours(cli: Any, project: Path) -> None:
    """The tiny record runs on CPUs only: every price in its plan is node-hours, the reference
    seeds beyond the record's too (they said GPU-h)."""
    text = cli("interval", str(project / RECORD), "--plan").output
    assert "node-h" in text and "GPU-h" not in text
