"""The diagnosis names the first input that differs: the learning rate changed in the training
code (the record re-pinned to the changed tree, as a pull request's new reference would be) is
named as `lr` at step 1, before the weights (model-state) and the loss it goes on to change."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record
from support.verdicts import typed

from reprogate.core.gittree import tree_id
from reprogate.rebuild.compare import first_difference, loss_figures, step_events
from reprogate.rebuild.report import markdown
from reprogate.rebuild.step_figures import Tolerance
from reprogate.runtime.trace import StepEvent, parse_event

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny.yaml"
LR = 'lr=t["lr"]'


def rebuild(cli: Cli, project: Path) -> tuple[Result, dict[str, Any]]:
    out = project.parent / "out"
    shutil.rmtree(out, ignore_errors=True)
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--format", "json")
    return result, json.loads((out / "verdict.json").read_text())


def test_a_changed_learning_rate_is_named_as_the_first_difference(cli: Cli, project: Path) -> None:
    train = project / "tiny" / "project" / "train.py"
    assert train.read_text().count(LR) == 1
    train.write_text(train.read_text().replace(LR, 'lr=t["lr"] * 1.1'))
    edit_record(project / RECORD, lambda r: r["source"].update(tree=tree_id(project / "tiny" / "project")))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1, result.output
    assert verdict["verdict"] == "fail" and verdict["diagnosis"] in ("model-state", "steps")  # where the consequences show
    cause = verdict["first_difference"]
    assert cause["field"] == "lr" and cause["role"] == "input" and cause["step"] == 1
    assert cause["reference"] == pytest.approx(0.01) and cause["rebuilt"] == pytest.approx(0.011)
    assert cause["text"] == "`lr` differs from step 1, rank 0: 0.011 in the rebuild vs 0.01 in the reference"
    report = markdown(typed(verdict))
    diagnosis = next(line for line in report.splitlines() if line.startswith("**Diagnosis:**"))
    assert diagnosis.index("`lr` differs from step 1, rank 0") < diagnosis.index(f"**{verdict['diagnosis']}**")
    assert cli("validate", str(project.parent / "out" / "verdict.json")).exit_code == 0  # the new field is in the verdict schema


def test_a_clean_rebuild_has_no_first_difference(cli: Cli, project: Path) -> None:
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 0 and verdict["first_difference"] is None


def events(*steps: dict[str, Any]) -> dict[tuple[int, int], StepEvent]:
    return step_events([parse_event({"type": "step", "rank": 0, **s}, "a test") for s in steps], 1, None)


def test_inputs_come_before_outputs_at_the_first_step_that_differs() -> None:
    reference = events(
        {"step": 1, "lr": 1e-3, "batch": "sha256:aa", "loss": 2.0, "metrics": {"grad_norm": 1.0, "loss_scale": 1024.0}},
        {"step": 2, "lr": 1e-3, "batch": "sha256:bb", "loss": 1.9, "metrics": {"grad_norm": 0.9, "loss_scale": 1024.0}},
    )
    later = events(
        {"step": 1, "lr": 1e-3, "batch": "sha256:aa", "loss": 2.0, "metrics": {"grad_norm": 1.0, "loss_scale": 1024.0}},
        {"step": 2, "lr": 1e-3, "batch": "sha256:bb", "loss": 1.95, "metrics": {"grad_norm": 0.7, "loss_scale": 512.0}},
    )
    found = first_difference(reference, later)
    assert found is not None and (found.field, found.step, found.role) == ("metrics.loss_scale", 2, "input")
    only_outputs = events(
        {"step": 1, "lr": 1e-3, "batch": "sha256:aa", "loss": 2.0, "metrics": {"grad_norm": 1.0, "loss_scale": 1024.0}},
        {"step": 2, "lr": 1e-3, "batch": "sha256:bb", "loss": 1.9, "metrics": {"grad_norm": 0.8, "loss_scale": 1024.0}},
    )
    found = first_difference(reference, only_outputs)
    assert found is not None and (found.field, found.role) == ("metrics.grad_norm", "output")
    assert first_difference(reference, only_outputs, abs_tol=0.2) is None  # within a behavioral tolerance: no difference
    batch = events({"step": 1, "lr": 1e-3, "batch": "sha256:zz", "loss": 2.5, "metrics": {"grad_norm": 3.0, "loss_scale": 1024.0}})
    found = first_difference(reference, batch)
    assert found is not None and found.field == "batch" and "differs from step 1" in found.text
    assert first_difference(reference, reference) is None


def test_weights_are_named_only_where_the_contract_holds_them_bitwise() -> None:
    """Under a behavioral contract on nondeterministic kernels the weights' digests differ from
    step 1 by design; the diagnosis names what the contract judges (the loss beyond tolerance)."""
    reference = events(
        {"step": 1, "lr": 1e-3, "batch": "sha256:aa", "loss": 2.0, "model_state": "sha256:01"},
        {"step": 2, "lr": 1e-3, "batch": "sha256:bb", "loss": 1.9, "model_state": "sha256:02"},
    )
    noisy = events(
        {"step": 1, "lr": 1e-3, "batch": "sha256:aa", "loss": 2.0, "model_state": "sha256:f1"},
        {"step": 2, "lr": 1e-3, "batch": "sha256:bb", "loss": 1.5, "model_state": "sha256:f2"},
    )
    bitwise = first_difference(reference, noisy)
    assert bitwise is not None and (bitwise.field, bitwise.step) == ("model_state", 1)
    behavioral = first_difference(reference, noisy, abs_tol=1e-3, weights=False)
    assert behavioral is not None and (behavioral.field, behavioral.step) == ("loss", 2)


def test_at_its_step_the_diagnosis_names_the_rank_the_loss_figures_name() -> None:
    """Both ranks' loss leaves the tolerance at step 2; rank 1 is further away. The diagnosis and
    the loss figures (step_figures) must name the same rank there, not rank 0 in one and rank 1 in
    the other."""
    reference = step_events([parse_event({"type": "step", "step": s, "rank": r, "loss": 2.0 - 0.1 * s}, "a test") for s in (1, 2, 3) for r in (0, 1)], 1, None)
    rebuilt = {k: dataclasses.replace(e, loss=(e.loss or 0.0) + {(2, 0): 2e-3, (2, 1): -5e-3}.get(k, 0.0)) for k, e in reference.items()}
    found = first_difference(reference, rebuilt, 1e-3, 0.0, weights=False)
    loss = loss_figures(reference, rebuilt, "tolerance", Tolerance(1e-3, 0.0))
    assert found is not None and (found.step, found.rank, found.judged) == (2, 1, "tolerance")
    assert loss.first_outside is not None and (loss.first_outside.step, loss.first_outside.rank) == (found.step, found.rank)
    assert found.text.startswith("`loss` is outside the contract's tolerance from step 2, rank 1:")
