"""The report's loss section (rebuild/loss_chart.py) and the report as a reviewer sees it.

The chart tests read the Mermaid text the report writes: the difference it plots is log10
|reference − rebuild| of the example's real reference loss curve against a perturbed copy, the
tolerance line is the steps stage's rule, the first divergence is marked at its step, and a long
run keeps at most MAX_POINTS points without losing its largest difference. The last tests render
the report to HTML with mermaid.js and take a headless Chromium screenshot (tools/render_report):
every chart drawn, no Mermaid error, at most ~12 x-axis labels, a chart no wider than a pull
request comment. Without Chromium (or the npm packages) they skip on a developer's machine and
fail under CI, where .ci/run installs them."""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.verdicts import make_verdict, typed

from reprogate.core.schemas import validator
from reprogate.rebuild.command import report_command
from reprogate.rebuild.compare import loss_curve
from reprogate.rebuild.environments import FROM_TRACE, RebuiltSide, side_by_side
from reprogate.rebuild.loss_chart import DECADES, MAX_POINTS, loss_figures, section
from reprogate.rebuild.report import markdown
from reprogate.runtime.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "examples" / "tiny" / "reference" / "trace.jsonl"
NPM = REPO / ".ci" / "npm"
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CONTENT_WIDTH = 780


def reference_curve() -> list[list[float]]:
    return [[step, loss] for step, loss in loss_curve(read_trace([TRACE]))]


def perturbed(curve: list[list[float]], from_step: int, by: float) -> list[list[float]]:
    """The curve with each loss from `from_step` on moved by `by` times its step's parity sign."""
    return [[s, v + (by * (1 if s % 2 else -1) if s >= from_step else 0.0)] for s, v in curve]


def verdict_with(curves: dict[str, Any], level: str = "bitwise", tolerance: dict[str, Any] | None = None, passed: bool = False) -> dict[str, Any]:
    verdict = make_verdict("pass" if passed else "fail", None if passed else ("model-state" if level == "bitwise" else "steps"), level=level)
    verdict["curves"] = curves
    if tolerance is not None:
        verdict["tests"] = [
            {"test": "step tolerance", "quantities": ["loss"], "compared": 160, "first_outside": None, "max_deviation": 0.0, "passed": passed, **tolerance}
        ]
    errors = [e.message for e in validator("Verdict").iter_errors(verdict)]
    assert not errors, errors
    return verdict


def charts(text: str) -> list[dict[str, Any]]:
    """Each ```mermaid block of a report: its axes and its series, parsed back."""
    found = []
    for block in text.split("```mermaid\n")[1:]:
        body = block.split("\n```", 1)[0].splitlines()
        chart: dict[str, Any] = {"series": []}
        for line in body:
            line = line.strip()
            if line.startswith("%%{init:"):
                chart["colors"] = json.loads(line.removeprefix("%%{init:").removesuffix("}%%"))["themeVariables"]["xyChart"]["plotColorPalette"].split(", ")
            elif line.startswith(("x-axis", "y-axis")):
                low, high = line.rsplit('" ', 1)[1].split(" --> ")
                chart[line[0]] = (float(low), float(high))
            elif line.startswith(("line [", "bar [")):
                chart["series"].append([float(v) for v in line.split("[", 1)[1].rstrip("]").split(", ")])
        found.append(chart)
    return found


def test_a_bitwise_failure_plots_the_log_difference_with_the_first_divergence_marked_and_no_tolerance() -> None:
    reference = reference_curve()
    rebuilt = perturbed(reference, 8, 2.5e-4)
    text = markdown(typed(verdict_with({"reference": reference, "rebuilt": rebuilt})))
    loss = text.split("### Loss\n\n", 1)[1].split("\n### ", 1)[0]
    above = loss.split("<details>", 1)[0]
    (chart,) = charts(above)
    marker, difference = chart["series"]
    assert chart["x"] == (1, 80) and len(difference) == 80, "a numeric step axis: Mermaid draws its own ticks"
    bottom, top = chart["y"]
    assert top - bottom >= DECADES and top == math.ceil(math.log10(2.5e-4))
    assert difference[:7] == [bottom] * 7, "equal steps sit on the bottom edge"
    assert all(abs(v - math.log10(2.5e-4)) < 1e-4 for v in difference[7:])
    assert marker == [top if i == 7 else bottom for i in range(80)], "the spike stands at step 8, the first that differs"
    assert chart["colors"] == ["#6e7781", "#cf222e"]
    assert "**Tolerance**: exact — the contract fails on any difference" in above
    assert "**Grey spike**: step 8, the first step whose loss differs (mean over ranks, |Δ| = 0.00025)" in above and "**red line**" in above
    assert loss.startswith("The loss first differs at step 8, mean over ranks (|Δ| = 0.00025)"), (
        "a verdict of before the per-rank figures: labelled as the mean"
    )
    assert len(charts(loss)) == 2, "the two curves, folded below"


def test_a_behavioral_failure_draws_the_tolerance_the_steps_stage_applies() -> None:
    reference = reference_curve()
    rebuilt = perturbed(reference, 10, 2e-3)
    text = markdown(typed(verdict_with({"reference": reference, "rebuilt": rebuilt}, "behavioral", {"abs": 1e-4, "rel": 1e-4})))
    (chart,) = charts(text.split("### Loss", 1)[1].split("<details>", 1)[0])
    _, difference, tolerance = chart["series"]
    for (step, value), allowed in zip(reference, tolerance, strict=True):
        assert abs(allowed - math.log10(1e-4 + 1e-4 * value)) < 1e-4, step
    assert all(d > t for d, t in zip(difference[9:], tolerance[9:], strict=True)) and difference[8] == chart["y"][0]
    assert "Tolerance 0.0001 + 0.0001·|reference|: first exceeded at step 10, mean over ranks (|Δ| = 0.002)." in text
    assert (
        "**Blue line**: log10 of the tolerance at each drawn point, 0.0001 + 0.0001·|reference|; the loss is first exceeded at step 10, mean over ranks" in text
    )


def test_a_tolerance_on_other_quantities_draws_no_tolerance_line_for_the_loss() -> None:
    reference = reference_curve()
    verdict = verdict_with({"reference": reference, "rebuilt": perturbed(reference, 3, 1e-3)}, "behavioral", {"abs": 1e-4, "rel": 0.0})
    verdict["tests"][0]["quantities"] = ["grad_norm"]
    text = markdown(typed(verdict))
    (chart, _) = charts(text)
    assert len(chart["series"]) == 2
    assert "**Tolerance**: none on the loss (the steps stage judged other quantities, or no step tolerance is stated), so there is no tolerance line." in text
    assert "exact" not in text.split("### Loss", 1)[1].split("### Claim", 1)[0]


def test_a_pass_states_the_loss_in_one_sentence_and_folds_its_charts() -> None:
    reference = reference_curve()
    equal = section(typed(verdict_with({"reference": reference, "rebuilt": reference}, passed=True)))
    assert equal[2] == "The rebuild's loss equals the reference's at every one of the 80 steps both recorded (mean over ranks)."
    assert equal[4:6] == ["<details>", "<summary>The loss curves</summary>"]
    within = "\n".join(
        section(typed(verdict_with({"reference": reference, "rebuilt": perturbed(reference, 1, 1e-6)}, "behavioral", {"abs": 1e-4, "rel": 0.0}, passed=True)))
    )
    assert "Tolerance 0.0001: never exceeded by the loss." in within
    assert within.split("<details>", 1)[0].count("```mermaid") == 0 and within.count("```mermaid") == 2
    assert "<summary>The loss difference and the loss curves</summary>" in within


def test_a_long_run_keeps_at_most_max_points_and_its_largest_difference() -> None:
    reference = [[s, 3.0 / math.sqrt(s)] for s in range(1, 5001)]
    rebuilt = [[s, v + (0.5 if s == 2718 else 1e-6 if s >= 1234 else 0.0)] for s, v in reference]
    text = markdown(typed(verdict_with({"reference": reference, "rebuilt": rebuilt})))
    (difference_chart, curves_chart) = charts(text)
    marker, difference = difference_chart["series"]
    assert len(difference) == MAX_POINTS and difference_chart["x"] == (1, 5000)
    assert max(difference) == pytest.approx(math.log10(0.5), abs=1e-4), "a point is the largest difference of its steps"
    assert marker.index(max(marker)) == (1234 - 1) * MAX_POINTS // 5000
    assert all(len(s) == MAX_POINTS for s in curves_chart["series"])
    assert "Each point stands for 50 steps on average and shows the point furthest from the reference among them." in text


def test_a_rebuild_that_stopped_early_is_drawn_on_the_steps_it_reached_and_says_so() -> None:
    reference = reference_curve()
    text = markdown(typed(verdict_with({"reference": reference, "rebuilt": perturbed(reference, 5, 1e-3)[:30]})))
    (chart, _) = charts(text)
    assert chart["x"] == (1, 30) and all(len(s) == 30 for s in chart["series"])
    assert "The rebuild recorded 30 of the reference's 80 steps (last: 30); later steps are not drawn." in text
    assert loss_figures(typed(verdict_with({"reference": reference, "rebuilt": []}))) is None
    assert "### Loss" not in markdown(typed(verdict_with({"reference": reference, "rebuilt": []})))


def test_the_environment_takes_what_the_record_lacks_from_the_reference_trace_and_says_so() -> None:
    events = read_trace([TRACE])
    rebuilt = RebuiltSide(
        "reference", "current", python="3.11.7", torch="2.13.0+cpu", architecture="x86_64", cpu={"cpu_capability": "default", "mkl_cbwr": "COMPATIBLE"}
    )
    rows = {row["what"]: row for row in side_by_side({"execution": {"world_size": 2}}, rebuilt, events)}
    assert rows["torch"] == {"what": "torch", "reference": "2.13.0+cpu", "rebuilt": "2.13.0+cpu", "same": True, "reference_from": FROM_TRACE}
    assert rows["CPU architecture"]["reference"] == "x86_64" and rows["CPU architecture"]["reference_from"] == FROM_TRACE
    assert rows["torch CPU kernels"]["reference_from"] == FROM_TRACE
    assert "reference_from" not in rows["world size"], "the record's own value wins"
    assert rows["Python"]["reference"] == "not recorded" and "reference_from" not in rows["Python"], "the meta does not hold it: never guessed"
    recorded = {row["what"]: row for row in side_by_side({"software": {"framework": {"version": "2.12.0"}}}, rebuilt, events)}
    assert recorded["torch"]["reference"] == "2.12.0" and not recorded["torch"]["same"] and "reference_from" not in recorded["torch"]
    assert recorded["world size"]["reference"] == "2" and recorded["world size"]["reference_from"] == FROM_TRACE


# the report as a reviewer sees it: HTML, mermaid.js, headless Chromium


def chromium_or_skip() -> None:
    missing = [] if any(shutil.which(name) for name in CHROMIUMS) or os.environ.get("CHROMIUM") else ["Chromium"]
    if shutil.which("node") is None:
        missing.append("node")
    missing += [name for name in ("mermaid", "markdown-it") if not (NPM / "node_modules" / name / "package.json").is_file()]
    if not missing:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{', '.join(missing)} missing under CI; .ci/run installs chromium and the npm packages")
    pytest.skip(f"not installed: {', '.join(missing)}")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is no PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("kind", ["bitwise-failure", "behavioral-failure", "pass"])
def test_the_rendered_report_draws_every_chart_readably_at_a_comment_width(kind: str, tmp_path: Path) -> None:
    chromium_or_skip()
    reference = reference_curve()
    verdict = {
        "bitwise-failure": lambda: verdict_with({"reference": reference, "rebuilt": perturbed(reference, 8, 2.5e-4)}),
        "behavioral-failure": lambda: verdict_with(
            {"reference": reference, "rebuilt": perturbed(reference, 8, 1e-3)}, "behavioral", {"abs": 1e-4, "rel": 1e-4}
        ),
        "pass": lambda: verdict_with({"reference": reference, "rebuilt": reference}, passed=True),
    }[kind]()
    source = tmp_path / "verdict.json"
    source.write_text(json.dumps(verdict))
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "render_report.py"), str(source), "--out", str(tmp_path / "shot"), "--open"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    folded, unfolded = result["report"], result["report-open"]
    assert folded["errors"] == [] and unfolded["errors"] == []
    expected = charts(markdown(typed(verdict)))
    assert len(unfolded["charts"]) == len(expected) and all(chart["drawn"] for chart in unfolded["charts"])
    for chart in unfolded["charts"]:
        assert 2 <= len(chart["x_labels"]) <= 12, chart["x_labels"]
        assert all(label.lstrip("-").isdigit() for label in chart["x_labels"]), "steps, not categories"
        assert 0 < chart["width"] <= CONTENT_WIDTH
    for shot in (folded, unfolded):
        width, height = png_size(Path(shot["png"]))
        assert width == CONTENT_WIDTH + 16 and height == shot["height"]
    assert unfolded["height"] > folded["height"], "the folded stages and curves open below"
    assert (tmp_path / "shot" / "report.md").read_text() == markdown(typed(verdict))


def test_a_zero_tolerance_at_a_zero_loss_stays_on_the_chart() -> None:
    reference = [[s, 0.0 if s == 3 else 1.0] for s in range(1, 11)]
    rebuilt = [[s, v + 1e-3] for s, v in reference]
    text = markdown(typed(verdict_with({"reference": reference, "rebuilt": rebuilt}, "behavioral", {"abs": 0.0, "rel": 1e-4})))
    (chart, _) = charts(text)
    bottom, top = chart["y"]
    assert all(bottom <= v <= top for series in chart["series"] for v in series)
    assert chart["series"][2][2] == bottom, "rel·|0| is 0: no logarithm, the bottom edge"
    assert "inf" not in text and "nan" not in text


def test_a_verdict_whose_tolerance_is_no_number_still_renders_through_the_command(tmp_path: Path) -> None:
    reference = reference_curve()
    verdict = verdict_with({"reference": reference, "rebuilt": perturbed(reference, 3, 1e-3)}, "behavioral", {"abs": "1e-4", "rel": None})
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(verdict))
    result = report_command(path, "markdown")
    assert result.code == 1 and "### Loss" in "\n".join(result.stdout)
    assert len(charts("\n".join(result.stdout))[0]["series"]) == 2, "no tolerance line from a tolerance that is no number"
