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
    assert with_values(cli, record, [0.9] * 5) == [("seeds-without-spread", "warning")]
    assert "no spread" in stored_notice(record)  # interval.notice says so in the record too
    assert with_values(cli, record, [0.9] * 5, resolution=0.01) == [("seeds-without-spread", "warning")]


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
    edit_record(record, lambda r: r["contract"]["metric"].update(detect={"relative": 0.02}))
    assert found(record) == []


def test_an_interval_at_another_alpha_than_the_contract_is_an_error(cli: Any, project: Path) -> None:
    record = project / RECORD
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


def test_the_planner_prints_the_issues_examples(cli: Any, project: Path) -> None:
    import random

    record = project / RECORD
    rng = random.Random(3)
    five = cli("interval", str(record), "--plan")
    assert five.exit_code == 0 and "1 sd (" in five.output and "no m up to 200 with n=5" in five.output and "n=20: m=15" in five.output
    with_values(cli, record, [rng.gauss(1.0, 0.01) for _ in range(20)])
    twenty = cli("interval", str(record), "--plan")
    assert "1 sd (" in twenty.output and "m=15 with n=20" in twenty.output


def test_equivalence_without_a_margin_is_an_error(project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: r["contract"]["metric"].update(test="equivalence"))
    assert found(record) == [("equivalence-without-margin", "error")]
