"""Every number the report states about the loss is one figure, stated the same everywhere.

The drills of docs/report.md on the real example (examples/tiny, 2 gloo ranks): the weights are
nudged after step 40 (EXAMPLE_PERTURB_STEP), so the loss first moves at step 41 and the two ranks
move apart. Rebuilt under the bitwise contract (fails at model-state) and under a behavioral one
(abs = rel = 1e-4, fails at steps), the report then names the first step the loss differs, the
largest difference and the first step outside the tolerance in the stage table, the diagnosis, the
loss section, the chart's legend, the chart's series and the tests table. Each mention must give
the same step, the same rank and the same size — and those must be what the two trace files say
when read here, rank by rank.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support import REPO, edit_record
from support.verdicts import typed

from reprogate.cli import main
from reprogate.rebuild.report import markdown
from reprogate.runtime.trace import StepEvent, read_trace

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

RECORD = Path("tiny") / "records" / "tiny.yaml"
PERTURB = "40"


def _drill(folder: Path, level: str) -> tuple[dict[str, Any], str, Path]:
    project = folder / "project"
    shutil.copytree(REPO / "examples", project)

    def change(record: dict[str, Any]) -> None:
        record["execution"]["env"]["EXAMPLE_PERTURB_STEP"] = PERTURB
        if level == "behavioral":
            record["contract"]["level"] = "behavioral"
            record["contract"]["tolerance"] = {"abs": 1e-4, "rel": 1e-4}
            record["contract"].pop("tensors")

    edit_record(project / RECORD, change)
    out = folder / "out"
    result = CliRunner().invoke(main, ["rebuild", str(project / RECORD), "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    verdict = json.loads((out / "verdict.json").read_text())
    return verdict, markdown(typed(verdict)), out


@pytest.fixture(scope="module")
def bitwise(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    return _drill(tmp_path_factory.mktemp("bitwise"), "bitwise")


@pytest.fixture(scope="module")
def behavioral(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    return _drill(tmp_path_factory.mktemp("behavioral"), "behavioral")


def per_rank_loss(out: Path) -> dict[tuple[int, int], tuple[float, float]]:
    """(step, rank) -> (reference, rebuilt) loss, read from the two trace files here."""
    trace = REPO / "examples" / "tiny" / "reference" / "trace.jsonl"
    reference = {(e.step, e.rank): float(e.loss) for e in read_trace([trace]) if isinstance(e, StepEvent) and e.loss is not None}
    rebuilt = {(e.step, e.rank): float(e.loss) for e in read_trace([out / "rebuild-trace.jsonl"]) if isinstance(e, StepEvent) and e.loss is not None}
    return {key: (value, rebuilt[key]) for key, value in reference.items() if key in rebuilt}


def expected(out: Path, abs_tol: float = 0.0, rel_tol: float = 0.0) -> dict[str, dict[str, Any]]:
    """The figures, worked out here from the traces: the first step the loss differs (and there the
    rank furthest from the reference), the largest difference, the first step outside the rule."""
    losses = per_rank_loss(out)
    distance = {key: abs(b - a) for key, (a, b) in losses.items()}

    def at(step: int, keys: list[tuple[int, int]]) -> dict[str, Any]:
        step, rank = max((k for k in sorted(keys) if k[0] == step), key=distance.__getitem__)
        return {"step": step, "rank": rank, "where": f"step {step}, rank {rank}", "size": f"{distance[(step, rank)]:.3g}", "value": distance[(step, rank)]}

    differ = [k for k in sorted(distance) if distance[k] > 0]
    outside = [k for k in differ if distance[k] > abs_tol + rel_tol * abs(losses[k][0])]
    largest = max(sorted(distance), key=distance.__getitem__)
    return {"first": at(differ[0][0], differ), "outside": at(outside[0][0], outside), "largest": at(largest[0], [largest])}


def section(text: str, title: str) -> str:
    return text.split(f"### {title}\n\n", 1)[1].split("\n### ", 1)[0]


def chart_series(text: str) -> list[list[float]]:
    block = text.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    return [[float(v) for v in line.split("[", 1)[1].rstrip("]").split(", ")] for line in block.splitlines() if line.strip().startswith("line [")]


def mentions(text: str) -> set[tuple[int, int]]:
    """Every `step S, rank R` the text names."""
    return {(int(s), int(r)) for s, r in re.findall(r"step (\d+), rank (\d+)", text)}


def test_the_figures_are_what_the_traces_say_rank_by_rank(bitwise: tuple[dict[str, Any], str, Path]) -> None:
    verdict, _, out = bitwise
    losses, want = per_rank_loss(out), expected(out)
    loss = verdict["loss"]
    assert loss["per"] == "rank" and loss["judged"] == "exact" and loss["compared"] == len(losses) == 160
    for name, figure in (("first_difference", "first"), ("largest", "largest"), ("first_outside", "outside")):
        assert (loss[name]["step"], loss[name]["rank"]) == (want[figure]["step"], want[figure]["rank"]), name
        assert (loss[name]["reference"], loss[name]["rebuilt"]) == losses[(want[figure]["step"], want[figure]["rank"])]
    first = want["first"]
    assert first["step"] == int(PERTURB) + 1
    mean = abs(sum(b - a for (step, _), (a, b) in losses.items() if step == first["step"]) / 2)
    assert mean != pytest.approx(first["value"], rel=0.1), (
        "the drill is one where the mean over ranks hides what a rank does: the test would not see a mixed-up figure otherwise"
    )


def test_the_bitwise_drill_states_one_first_difference_and_one_largest(bitwise: tuple[dict[str, Any], str, Path]) -> None:
    verdict, text, out = bitwise
    want = expected(out)
    first, largest = want["first"], want["largest"]
    stage = next(s for s in verdict["stages"] if s["name"] == "model-state")
    assert f"the loss first differs at {first['where']} (" in stage["detail"] and stage["detail"].endswith(f"|Δ| {first['size']})")
    table = text.split("| model-state | ❌ fail |", 1)[1].split("\n", 1)[0]
    assert f"the loss first differs at {first['where']} (" in table and f"\\|Δ\\| {first['size']})" in table
    loss = section(text, "Loss")
    assert loss.startswith(
        f"The loss first differs at {first['where']} (|Δ| = {first['size']}); the largest difference is {largest['size']} at {largest['where']}."
    )
    assert f"**Grey spike**: step {first['step']}, the first step whose loss differs (rank {first['rank']}, |Δ| = {first['size']})." in loss
    assert f"Largest difference: {largest['size']} at {largest['where']}." in loss
    assert f"the loss first differs at {first['where']} (" in section(text, "Claim")
    marker, red = chart_series(loss)
    steps = list(range(1, 81))  # 80 steps: one drawn point each
    assert marker.index(max(marker)) == steps.index(first["step"])
    assert red[steps.index(first["step"])] == pytest.approx(math.log10(first["value"]), abs=1e-4), "the chart at the first step is that figure"
    assert max(red) == pytest.approx(math.log10(largest["value"]), abs=1e-4) and red.index(max(red)) == steps.index(largest["step"])
    named = "\n".join(line for line in text.splitlines() if "loss" in line or "Largest" in line or "Grey" in line)
    assert {where for where in mentions(named) if where[0] > int(PERTURB)} == {(first["step"], first["rank"]), (largest["step"], largest["rank"])}


def test_the_behavioral_drill_states_one_first_step_outside_the_tolerance(behavioral: tuple[dict[str, Any], str, Path]) -> None:
    verdict, text, out = behavioral
    want = expected(out, 1e-4, 1e-4)
    first, outside, largest = want["first"], want["outside"], want["largest"]
    assert outside["step"] > first["step"], "the drill differs within the tolerance before it leaves it"
    diagnosis = next(line for line in text.splitlines() if line.startswith("**Diagnosis:**"))
    assert f"`loss` is outside the contract's tolerance from {outside['where']}:" in diagnosis
    assert f"differs from step {outside['step']}" not in diagnosis, "the diagnosis does not call the first step outside the first that differs"
    table = text.split("| steps | ❌ fail |", 1)[1].split("\n", 1)[0]
    assert f"{outside['where']}: loss outside" in table
    assert f"(\\|Δ\\| {outside['size']}); largest difference {largest['size']} (loss at {largest['where']})" in table
    assert f"first outside: loss at {outside['where']}, largest difference: {largest['size']} (loss at {largest['where']})" in section(text, "Tests")
    loss = section(text, "Loss")
    assert loss.startswith(
        f"The loss first differs at {first['where']} (|Δ| = {first['size']}); the largest difference is {largest['size']} at {largest['where']}. "
        f"Tolerance 0.0001 + 0.0001·|reference|: first exceeded at {outside['where']} (|Δ| = {outside['size']})."
    )
    assert f"the loss is first exceeded at {outside['where']} (|Δ| = {outside['size']})." in loss
    assert f"Largest difference: {largest['size']} at {largest['where']}." in loss
    marker, red, blue = chart_series(loss)
    steps = list(range(1, 81))
    above = [steps[i] for i, (d, t) in enumerate(zip(red, blue, strict=True)) if d > t]
    assert above and above[0] == outside["step"], "the red line first crosses the blue where the figure says"
    assert steps[marker.index(max(marker))] == first["step"]
    assert red[steps.index(outside["step"])] == pytest.approx(math.log10(outside["value"]), abs=1e-4)
