"""What the reference seeds can support is said by `validate`, before any GPU is spent (issue 26):
an interval at another α than the contract's, too few seeds, seeds with no spread or an odd
shape, a declared shift no m up to 20 catches, a margin that meant TOST before 0.3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import edit_record

from reprogate.validate.runner import Options, validate

RECORD = Path("tiny") / "records" / "tiny.yaml"


def found(path: Path) -> list[tuple[str, str]]:
    return [(d.code, d.severity.value) for f in validate([str(path)], Options()).files for d in f.diagnostics]


def with_values(cli: Any, record: Path, values: list[float], **metric: Any) -> list[tuple[str, str]]:
    def change(r: dict[str, Any]) -> None:
        r["reference"]["metric"]["values"] = [{"seed": i + 1, "value": v} for i, v in enumerate(values)]
        r["seeds"]["evaluation"] = list(range(1, len(values) + 1))
        r["contract"]["metric"].update(metric)

    edit_record(record, change)
    done = cli("interval", str(record))
    assert done.exit_code == 0, done.output
    return found(record)


def stored_notice(record: Path) -> str:
    import yaml

    return str(yaml.safe_load(record.read_text())["contract"]["metric"]["interval"].get("notice", ""))


def test_the_tiny_example_says_nothing(project: Path) -> None:
    assert found(project / RECORD) == []


def test_identical_reference_seeds_make_a_valid_record_with_a_warning(cli: Any, project: Path) -> None:
    record = project / RECORD
    assert with_values(cli, record, [0.9] * 5) == [("seeds-without-spread", "warning")]  # resolution: 0.0 is declared
    assert "no spread" in stored_notice(record)  # interval.notice says so in the record too
    assert with_values(cli, record, [0.9] * 5, resolution=0.01) == [("seeds-without-spread", "warning")]


def test_identical_reference_seeds_without_a_resolution_are_an_error_that_says_what_to_declare(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].pop("resolution"))
    assert with_values(cli, record, [0.9] * 5) == [("seeds-without-spread-or-resolution", "error")]
    said = cli("validate", str(record))
    assert said.exit_code == 1 and "declare contract.metric.resolution" in said.output and "1/N for accuracy on N examples" in said.output
    assert with_values(cli, record, [0.9] * 5, resolution=0) == [("seeds-without-spread", "warning")]


def test_a_declared_shift_the_gate_s_seeds_catch_below_the_declared_power_is_warned(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(detect={"relative": 0.02}))  # 1.7 sd: one seed catches it 37 % of the time
    assert found(record) == [("shift-below-power", "warning")]
    said = cli("validate", str(record)).output
    assert "one seed: the record declares no contract.metric.rebuild_seeds" in said and "below the declared 80 %" in said
    edit_record(record, lambda r: r["contract"]["metric"].update(rebuild_seeds=3))
    assert found(record) == [("shift-below-power", "warning")]  # three catch it less than 80 % of the time too
    edit_record(record, lambda r: r["contract"]["metric"].update(rebuild_seeds=10))  # nine judge it: the first replays the trace seed
    assert found(record) == []


def test_the_trace_replay_is_not_counted_as_a_seed_that_judges_the_metric(cli: Any, project: Path) -> None:
    """A bitwise record whose rebuild_seeds catch the shift only if the trace replay judged it too
    (what init 0.6.0 wrote) is warned, and the warning says why; a statistical one is not."""
    import yaml

    record = project / RECORD
    assert yaml.safe_load(record.read_text())["contract"]["level"] == "bitwise"

    def warned(runs: int, level: str = "bitwise") -> bool:
        edit_record(record, lambda r: (r["contract"].update(level=level), r["contract"]["metric"].update(detect={"relative": 0.02}, rebuild_seeds=runs)))
        return ("shift-below-power", "warning") in found(record)

    needed = next(runs for runs in range(1, 21) if not warned(runs))
    assert needed >= 3 and warned(needed - 1)
    said = cli("validate", str(record)).output
    assert f"rebuild_seeds: {needed - 1}, of which the first replays the trace's seed for the bitwise comparison: {needed - 2} judge" in said
    assert not warned(needed - 1, "statistical"), "a statistical contract judges every run"


def test_one_fresh_seed_against_too_few_reference_seeds_for_the_band_is_told(cli: Any, project: Path) -> None:
    """Issue 40: at n = 5, m = 1 no rule holds α on skewed or non-converging seeds (the rebuild's
    one seed comes from a tail five reference seeds have not seen); validate says so, and what
    settles it, where the metric is judged on one fresh seed; not where the one run replays the
    trace's seed (the tiny example), nor from 9 reference seeds (the band) or 3 judged seeds."""
    import yaml

    record = project / RECORD
    values = [float(v["value"]) for v in yaml.safe_load(record.read_text())["reference"]["metric"]["values"]][:5]
    assert len(values) == 5 and with_values(cli, record, values) == []  # bitwise, one run: the trace replay judges the metric
    assert with_values(cli, record, values, rebuild_seeds=2) == [("one-seed-few-references", "notice")]
    said = cli("validate", str(record)).output
    assert "one fresh rebuild seed against 5 reference seeds, too few for the reference's band (from 9 seeds" in said
    assert "set contract.metric.rebuild_seeds to 4 or more" in said
    assert with_values(cli, record, values, rebuild_seeds=4) == []
    assert ("one-seed-few-references", "notice") not in with_values(
        cli, record, [v + 0.0001 * i for i, v in enumerate([*values, *values[:4]])], rebuild_seeds=2
    )


def test_a_record_that_names_no_test_keeps_the_old_one_and_is_told(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].pop("test"))
    assert found(record) == [("metric-test-implicit", "notice")]
    assert "`test: robust`, or `test: difference` to keep today's" in cli("validate", str(record)).output


def test_two_reference_seeds_are_warned(cli: Any, project: Path) -> None:
    assert ("too-few-seeds", "warning") in with_values(cli, project / RECORD, [0.95, 0.96])


def test_an_outlier_seed_gets_a_notice(cli: Any, project: Path) -> None:
    record = project / RECORD
    said = with_values(cli, record, [0.95, 0.951, 0.952, 0.949, 0.95, 0.953, 2.5])
    assert ("seeds-not-normal", "notice") in said and ("shift-not-detectable", "warning") in said  # the outlier's spread hides a 2 % shift
    assert "normal-theory error rate may be exceeded" in stored_notice(record)


def test_a_shift_no_number_of_seeds_can_catch_is_warned(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(detect={"absolute": 0.002}))  # 0.46 sd with n=5
    assert found(record) == [("shift-not-detectable", "warning")]
    edit_record(record, lambda r: r["contract"]["metric"].update(detect={"relative": 0.045}))
    assert found(record) == []


def test_an_interval_at_another_alpha_than_the_contract_is_an_error(cli: Any, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(detect={"relative": 0.08}))  # caught at α = 1 % too
    assert cli("interval", str(record), "--alpha", "0.01").exit_code == 0  # sets the contract's α with the interval's
    assert found(record) == []
    edit_record(record, lambda r: r["contract"]["metric"].update(alpha=0.05))
    assert found(record) == [("interval-alpha-differs", "error")]


@pytest.mark.parametrize("alpha", ["nan", "0", "0.7", "x", "1e-300", "inf"])
def test_alpha_out_of_range_is_a_usage_error(cli: Any, project: Path, alpha: str) -> None:
    done = cli("interval", str(project / RECORD), "--alpha", alpha)
    assert done.exit_code == 2 and "nan%" not in done.output


def test_an_old_margin_without_a_test_gets_a_notice_and_equivalence_keeps_it_quiet(project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(margin=0.1))
    assert found(record) == [("margin-needs-test", "notice")]
    edit_record(record, lambda r: r["contract"]["metric"].update(test="equivalence"))
    assert found(record) == []


def test_the_planner_prints_what_each_reference_can_see(cli: Any, project: Path) -> None:
    import random

    from reprogate.core.seedstats import assured_sigma, mean_sd, seeds_needed

    record = project / RECORD
    rng = random.Random(3)
    with_values(cli, record, [rng.gauss(1.0, 0.01) for _ in range(5)])
    five = cli("interval", str(record), "--plan")
    assert five.exit_code == 0 and "1 sd (" in five.output and "no m up to 200 with n=5" in five.output  # five seeds are the limit
    values = [rng.gauss(1.0, 0.01) for _ in range(20)]
    with_values(cli, record, values)
    twenty = cli("interval", str(record), "--plan")
    s = mean_sd(values)[1]
    m = seeds_needed(20, assured_sigma(20, s, 0.8), 2 * s, 0.05, 0.8, 0.0, test="seeds", reference_sd=s)
    assert m is not None and f"2 sd ({2 * s:.4g}): m={m} with n=20" in twenty.output, twenty.output


def test_equivalence_without_a_margin_is_an_error(project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(test="equivalence"))
    assert found(record) == [("equivalence-without-margin", "error")]
