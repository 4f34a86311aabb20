"""The Markdown report of a verdict (rebuild/report.py): the stage table in runbook order, the
diagnosis, the claim and its limits, the tests, the way forward, and text from the run (log
tail, stage details) that cannot rewrite the report around it. The verdicts are made by hand and
checked against schemas/verdict.schema.json first, so the report is tested on what a rebuild can
really write."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.markdown import live_markup
from support.markdown import render as render_gfm
from support.verdicts import STAGES, make_verdict, typed

from reprogate.core.diagnostics import ExitCode
from reprogate.core.schemas import validator
from reprogate.rebuild.command import report_command
from reprogate.rebuild.report import ICONS, INFRASTRUCTURE, WAY_FORWARD, markdown, render

HOSTILE_TAIL = "\n".join(
    [
        "Traceback (most recent call last):",
        "```",
        "## ✅ Reproduction passed: `tiny`",
        "<img src=https://example.invalid/pixel.png> @octo-org/maintainers",
        "::set-output name=verdict::pass",
        "::add-mask::hunter2",
        "````",
        "RuntimeError: boom",
    ]
)


def valid(verdict: dict[str, Any]) -> dict[str, Any]:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator("Verdict").iter_errors(verdict)]
    assert not errors, errors
    return verdict


def failed_at(stage: str, **changes: Any) -> dict[str, Any]:
    """A failed verdict as the runner writes it: later stages not run, each saying why."""
    verdict = make_verdict("fail", stage)
    for entry in verdict["stages"]:
        if entry["status"] == "not-run":
            entry["detail"] = f"not run: {stage} failed first"
    verdict["claim"] = {
        "replayed": False,
        "text": f"tiny was NOT reproduced: the first difference is at the {stage} stage ({stage} fail).",
        "compared": [],
        "not_covered": ["no container: runs where reprogate is installed", "steps after 80 were not compared"],
    }
    verdict.update(changes)
    return valid(verdict)


def stage_rows(text: str, folded: bool = True) -> list[list[str]]:
    """The stage table's rows, split into cells (an escaped \\| stays inside its cell): the table
    of every stage, folded at the end, or (folded=False) the failing stages' above the fold."""
    lines = text.split("\n")
    header = [i for i, line in enumerate(lines) if line == "| stage | result | time | detail |"]
    start = (header[-1] if folded else header[0]) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def section(text: str, title: str) -> str:
    return text.split(f"### {title}\n\n", 1)[1].split("\n### ", 1)[0]


def test_the_stage_table_lists_every_stage_in_runbook_order_with_its_status() -> None:
    text = markdown(typed(failed_at("config")))
    rows = stage_rows(text)
    assert [row[0] for row in rows] == STAGES
    statuses = [row[1] for row in rows]
    assert statuses[:3] == [f"{ICONS['pass']} pass"] * 3
    assert statuses[4] == f"{ICONS['fail']} fail"
    assert statuses[5:] == [f"{ICONS['not-run']} not-run"] * 6
    assert all(row[3] == "not run: config failed first" for row in rows[5:])
    assert all(row[2] == "0.1 s" for row in rows)


def test_a_failure_leads_with_the_first_failing_stage_as_the_diagnosis() -> None:
    text = markdown(typed(failed_at("dataset")))
    assert text.startswith("## ❌ Reproduction failed: `tiny` (bitwise contract)\n\n**Diagnosis:** the first difference is at the **dataset** stage.\n")


def test_a_pass_has_no_diagnosis_and_no_way_forward() -> None:
    text = markdown(typed(valid(make_verdict("pass"))))
    assert text.startswith("## ✅ Reproduction passed: `tiny` (bitwise contract)\n")
    assert "Diagnosis" not in text and "### Way forward" not in text and "Log tail" not in text
    assert [row[1] for row in stage_rows(text)] == [f"{ICONS['pass']} pass"] * len(STAGES)


def test_the_claim_and_what_it_does_not_cover_appear() -> None:
    text = markdown(typed(failed_at("steps")))
    claim = section(text, "Claim")
    assert claim.startswith("tiny was NOT reproduced: the first difference is at the steps stage (steps fail).\n")
    assert "This claim does not cover:\n- no container: runs where reprogate is installed\n- steps after 80 were not compared\n" in claim


@pytest.mark.parametrize("stage", STAGES)
def test_the_way_forward_is_the_failed_stages_own(stage: str) -> None:
    forward = section(markdown(typed(failed_at(stage))), "Way forward")
    assert forward.startswith(WAY_FORWARD[stage])
    assert "no bypass flag" in forward


def test_an_infrastructure_failure_asks_for_a_rerun() -> None:
    forward = section(markdown(typed(failed_at("preflight", infrastructure=True, exit_code=3))), "Way forward")
    assert forward.startswith(INFRASTRUCTURE) and WAY_FORWARD["preflight"] not in forward


def test_the_tests_table_states_each_test_with_its_parameters_but_not_the_raw_values() -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {
            "test": "Welch TOST equivalence",
            "metric": "val_loss",
            "alpha": 0.05,
            "margin": 0.1,
            "n": 5,
            "m": 3,
            "p_value": 0.0012345,
            "passed": True,
            "values": [0.96, 0.97, 0.95],
        },
        {
            "test": "t prediction interval (one rebuild seed)",
            "metric": "val_loss",
            "alpha": 0.05,
            "n": 5,
            "m": 1,
            "interval": [0.951032201, 0.9776556814],
            "value": 0.99,
            "passed": False,
        },
    ]
    tests = section(markdown(typed(valid(verdict))), "Tests")
    assert "| Welch TOST equivalence | pass | metric=val_loss, alpha=0.05, margin=0.1, n=5, m=3, p_value=0.001234 |" in tests, (
        "the per-seed values stay in the JSON"
    )
    assert "| t prediction interval (one rebuild seed) | fail | metric=val_loss, alpha=0.05, n=5, m=1, interval=\\[0.951, 0.9777\\], value=0.99 |" in tests


def test_a_log_tail_cannot_close_its_fence_and_write_markdown_of_its_own() -> None:
    verdict = failed_at("run")
    verdict["stages"][6]["log_tail"] = HOSTILE_TAIL
    text = markdown(typed(valid(verdict)))
    tail = section(text, "Log tail of the failing run")
    opening, rest = tail.split("\n", 1)
    fence = opening.removesuffix("text")
    assert set(fence) == {"`"} and len(fence) > 4, "longer than the longest run of backticks in the tail"
    assert rest.startswith(HOSTILE_TAIL + "\n" + fence + "\n"), "the tail, unchanged, then the closing fence"
    body = text.split(opening + "\n", 1)[1].split("\n" + fence + "\n", 1)[0]
    assert body == HOSTILE_TAIL
    assert section(text, "Way forward").startswith(WAY_FORWARD["run"]), "the report goes on after the tail"


def test_a_plain_log_tail_keeps_the_usual_fence() -> None:
    verdict = failed_at("run")
    verdict["stages"][6]["log_tail"] = "Traceback\nRuntimeError: boom"
    assert "```text\nTraceback\nRuntimeError: boom\n```\n" in markdown(typed(valid(verdict)))


def test_a_stage_detail_stays_in_its_table_cell() -> None:
    verdict = failed_at("config")
    verdict["stages"][4]["detail"] = "keys differ: a|b\n## injected\r| x | y |\r\n::set-output name=verdict::pass"
    text = markdown(typed(valid(verdict)))
    rows = stage_rows(text)
    assert len(rows) == len(STAGES), "no row added or cut short"
    assert rows[4][0] == "config" and rows[4][3] == "keys differ: a\\|b ## injected \\| x \\| y \\|  ::set-output name=verdict::pass"
    assert not any(line.startswith(("## injected", "::")) for line in re.split("\r\n|\r|\n", text)), "CommonMark starts a line after \\r as after \\n"


def test_the_report_shows_curves_tool_and_a_short_digest() -> None:
    verdict = make_verdict("pass", digest="canonical-v1:sha256:" + "0123456789abcdef" * 4)
    verdict["curves"] = {"reference": [[1, 2.0], [2, 1.0]], "rebuilt": [[1, 2.0], [2, 1.0]]}
    text = markdown(typed(valid(verdict)))
    assert (
        "### Loss\n\nThe rebuild's loss equals the reference's at every one of the 2 steps both recorded (mean over ranks).\n\n"
        "<details>\n<summary>The loss curves</summary>" in text
    )
    assert section(text, "Loss").count("```mermaid\n") == 1, "a pass folds its chart"
    assert text.endswith("<sub>reprogate test · record digest `0123456789abcdef…` · 1.0 s · 2026-11-30T00:00:00Z</sub>\n")


def test_json_round_trips_and_markdown_is_the_default() -> None:
    verdict = failed_at("run")
    verdict["stages"][6]["log_tail"] = HOSTILE_TAIL + "\nüñí\u202e"
    read = typed(verdict)
    written = json.loads(render(read, "json"))
    assert typed(written) == read, "the JSON is the verdict as read"
    assert {k: v for k, v in written.items() if k in verdict} == verdict, "every field the file had, as it had it"
    assert set(written) - set(verdict) == {"exit_code", "run", "environment", "curves", "first_difference", "loss"}, (
        "an older verdict's missing fields are filled in as Verdict.from_json reads them"
    )
    assert render(read, "json") == render(typed(written), "json"), "and the JSON of the JSON is the same"
    assert render(typed(verdict), "json").endswith("}\n")
    assert render(typed(verdict), "markdown") == markdown(typed(verdict))


def test_the_report_command_renders_a_verdict_file_and_exits_with_its_outcome(tmp_path: Path) -> None:
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(failed_at("metric")))
    result = report_command(path, "markdown")
    assert result.code == ExitCode.FAILED
    assert result.stdout == markdown(typed(failed_at("metric"))).splitlines()
    path.write_text(json.dumps(valid(make_verdict("pass"))))
    assert report_command(path, "json").code == ExitCode.OK


def test_a_rebuild_that_could_not_run_is_not_called_a_failed_reproduction() -> None:
    text = markdown(typed(failed_at("digest", exit_code=2)))
    assert text.startswith("## ⚠️ Reproduction could not run: `tiny` (bitwise contract)\n")
    assert "the rebuild stopped at the **digest** stage before anything was compared" in text
    assert "first difference" not in text.split("### Claim")[0]


def test_text_a_pull_request_shaped_cannot_become_markup_or_mentions() -> None:
    verdict = failed_at("config")
    verdict["stages"][4]["detail"] = 'key `<img src=x>` changed: <img src="https://evil.example/p.png"> [click](https://evil.example) @octocat & co'
    verdict["claim"]["not_covered"] = ["no container: <script>alert(1)</script> ![i](https://evil.example/i.png)"]
    text = markdown(typed(verdict))
    assert live_markup(text, ("click", "alert")) == [], "rendered as GitHub renders it, the text stays text"
    assert "`<img src=x>`" in text and "<code>&lt;img src=x&gt;</code>" in render_gfm(text), "code spans stay literal"


def test_image_references_keep_their_at_sign() -> None:
    verdict = failed_at("digest")
    verdict["stages"][1]["detail"] = "localhost:5000/tiny@sha256:" + "ab" * 32 + " is not in the registry"
    assert "localhost:5000/tiny@sha256:" + "ab" * 32 in markdown(typed(verdict))


def test_only_the_failing_stages_stand_above_the_fold_and_every_stage_is_folded_below() -> None:
    text = markdown(typed(failed_at("config")))
    above, fold = text.split("<details>\n<summary>All 11 stages: 4 passed, 1 failed, 6 not run</summary>\n\n", 1)
    assert [row[0] for row in stage_rows(above, folded=False)] == ["config"]
    assert "artifacts pass" not in above and "not run: config failed first" not in above
    assert [row[0] for row in stage_rows(fold)] == STAGES and fold.split("\n\n</details>\n", 1)[1].lstrip("\n").startswith("<sub>")
    passed = markdown(typed(valid(make_verdict("pass"))))
    assert "<summary>All 11 stages passed</summary>" in passed
    assert passed.index("| stage | result | time | detail |") > passed.index("<summary>All 11 stages passed</summary>"), (
        "a pass shows no stage table above the fold"
    )


def test_the_first_difference_leads_then_the_failing_stage_the_loss_and_the_claim() -> None:
    verdict = failed_at("steps")
    verdict["record"]["level"] = "behavioral"
    verdict["first_difference"] = {
        "field": "lr",
        "role": "input",
        "step": 1,
        "rank": 0,
        "reference": 1.667e-4,
        "rebuilt": 1.833e-4,
        "text": "`lr` differs from step 1",
    }
    verdict["curves"] = {"reference": [[s, 2.0 / s] for s in range(1, 21)], "rebuilt": [[s, 2.0 / s + (1e-3 if s >= 3 else 0.0)] for s in range(1, 21)]}
    verdict["tests"] = [
        {"test": "step tolerance", "quantities": ["loss"], "abs": 1e-4, "rel": 0.0, "compared": 40, "first_outside": 3, "max_deviation": 1e-3, "passed": False}
    ]
    text = markdown(typed(valid(verdict)))
    order = [
        text.index(mark)
        for mark in ("**Diagnosis:** `lr` differs from step 1", "| steps | ❌ fail", "### Loss", "### Claim", "### Tests", "### Way forward", "<summary>All 11")
    ]
    assert order == sorted(order)
    loss = section(text, "Loss")
    assert loss.startswith(
        "The loss first differs at step 3, mean over ranks (|Δ| = 0.001); the largest difference is 0.001 at step 3, mean over ranks."
        " Tolerance 0.0001: first exceeded at step 3, mean over ranks (|Δ| = 0.001)."
    ), "a verdict of before the per-rank figures: each figure labelled as the mean over ranks"
    assert "The trace differs earlier, in `lr` at step 1, rank 0 (the diagnosis above)." in loss
    above_fold = loss.split("<details>", 1)[0]
    assert above_fold.count("```mermaid\n") == 1 and "log10 |reference − rebuild|" in above_fold, "a failure shows the difference chart"


def test_reference_values_from_the_trace_are_marked_in_the_environment_table() -> None:
    verdict = make_verdict("pass")
    verdict["environment"] = {
        "compared": [
            {"what": "torch", "reference": "2.13.0+cpu", "rebuilt": "2.13.0+cpu", "same": True, "reference_from": "reference trace"},
            {"what": "Python", "reference": "not recorded", "rebuilt": "3.11.7", "same": True},
        ]
    }
    table = section(markdown(typed(valid(verdict))), "Environment: reference and rebuild")
    assert "| torch | 2.13.0+cpu *(from the reference trace)* | 2.13.0+cpu |" in table
    assert "| Python | not recorded | 3.11.7 |" in table
