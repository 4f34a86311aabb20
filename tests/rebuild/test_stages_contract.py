"""The rebuild stages' contract (rebuild/stages/__init__.py) and the runner's walk over it
(rebuild/__init__.py): each stage needs only what an earlier stage provides and declares what its
code uses; the walk runs them in runbook order, stops at the first failure and reports every later
stage not run. The walk is driven by stub stages (no realizer, no ranks, no torch)."""

from __future__ import annotations

import ast
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.verdicts import STAGES as RUNBOOK

import reprogate.rebuild as rebuild
from reprogate.core.diagnostics import ExitCode
from reprogate.core.schemas import load_schema, validator
from reprogate.rebuild.context import RebuildContext, RebuildOptions, SeedRun, StageResult, failed, passed, skipped
from reprogate.rebuild.realizers.base import Choice
from reprogate.rebuild.stages import STAGES, Stage

FIELDS = RebuildContext.__dataclass_fields__
PROVIDED = {f for stage in STAGES.values() for f in stage.provides}
# `facts` is the rebuild machine's notebook: artifacts notes deferred source changes, preflight the
# placement, backend and spare port, envelope the machine; each stage adds keys rather than filling
# the field once, so it is left out of the per-field check below.
NOTEBOOK = {"facts"}


def test_the_stages_are_the_runbook_and_the_verdicts_in_the_same_order() -> None:
    assert list(STAGES) == RUNBOOK
    assert load_schema("Verdict")["properties"]["stages"]["items"]["properties"]["name"]["enum"] == RUNBOOK
    assert load_schema("Verdict")["properties"]["stages"]["minItems"] == len(STAGES)


def test_every_need_is_provided_by_an_earlier_stage_and_each_field_by_one_stage() -> None:
    provided: dict[str, str] = {}
    for name, stage in STAGES.items():
        assert isinstance(stage, Stage) and callable(stage.run)
        assert set(stage.needs) | set(stage.provides) <= set(FIELDS), name
        for need in stage.needs:
            assert need in provided, f"stage {name} needs {need}, which no earlier stage provides"
        for field in stage.provides:
            assert field not in provided, f"{field} is provided by both {provided[field]} and {name}"
            provided[field] = name
    assert set(provided) == PROVIDED


def _fields_used(module: Any) -> set[str]:
    """The provided context fields a module's code touches as `ctx.<field>`."""
    tree = ast.parse(inspect.getsource(module))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx" and node.attr in PROVIDED
    }


@pytest.mark.parametrize("name", list(STAGES))
def test_a_stage_declares_every_provided_field_its_code_uses(name: str) -> None:
    stage = STAGES[name]
    used = _fields_used(sys.modules[stage.run.__module__]) - NOTEBOOK
    undeclared = used - set(stage.needs) - set(stage.provides)
    assert not undeclared, f"stage {name} uses {sorted(undeclared)} without naming them in needs (or provides)"


# What a stub stage puts into each field it provides: the runner and the verdict read them after the walk.
FILL: dict[str, Callable[[Path], Any]] = {
    "fetched": lambda tmp: ["project/train.py"],
    "reference_events": lambda tmp: [{"type": "step", "step": 1, "rank": 0, "loss": 2.0}, {"type": "step", "step": 2, "rank": 0, "loss": 1.5}],
    "runtime": lambda tmp: tmp / "runtime",
    "choice": lambda tmp: Choice("current", "stub"),
    "realized": lambda tmp: SimpleNamespace(kind="current", facts={"realizer": "current"}, close=lambda: None),
    "probe": lambda tmp: {"python": "3.12.0", "packages": {"torch": "2.13.0"}},
    "launcher": lambda tmp: SimpleNamespace(name="local"),
    "shape": lambda tmp: SimpleNamespace(nodes=1),
    "hosts": lambda tmp: SimpleNamespace(stop=lambda: None),
    "facts": lambda tmp: {"machine": "x86_64", "backend": "gloo"},
    "runs": lambda tmp: [SeedRun(1, [{"type": "step", "step": 1, "rank": 0, "loss": 2.0}], ok=True)],
}


def test_every_provided_field_has_a_stub_value() -> None:
    assert set(FILL) == PROVIDED


class Walk:
    """Stub stages with the real names, needs and provides; each records its call and checks that
    what it needs was filled by the stages before it."""

    def __init__(self, tmp: Path, outcomes: dict[str, Callable[[], StageResult]] | None = None) -> None:
        self.tmp, self.outcomes = tmp, outcomes or {}
        self.called: list[str] = []
        self.missing: dict[str, list[str]] = {}
        self.stopped: list[str] = []

    def stages(self) -> dict[str, Stage]:
        return {name: Stage(self._stub(name, stage), stage.needs, stage.provides) for name, stage in STAGES.items()}

    def _stub(self, name: str, stage: Stage) -> Callable[[RebuildContext], StageResult]:
        def run(ctx: RebuildContext) -> StageResult:
            self.called.append(name)
            self.missing[name] = [need for need in stage.needs if getattr(ctx, need) in (None, [], {})]
            result = self.outcomes.get(name, lambda: passed(f"{name} stub"))()
            if result.status == "pass":
                for field in stage.provides:
                    value = FILL[field](self.tmp)
                    if field == "hosts":
                        value = SimpleNamespace(stop=lambda: self.stopped.append("hosts"))
                    setattr(ctx, field, value)
            return result

        return run


@pytest.fixture
def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[Walk, dict[str, Any], RebuildOptions]]:
    record = tmp_path / "record.yaml"
    record.write_text(
        "apiVersion: reprogate/v1\nkind: RunRecord\nmetadata: {name: stub}\n"
        "contract: {level: bitwise, steps: {start: 0, count: 2}}\nexecution: {world_size: 1}\n"
    )
    monkeypatch.setattr(rebuild, "check_before_running", lambda doc, path, options: None)
    monkeypatch.setattr("reprogate.rebuild.record.rebuild_record", lambda ctx, verdict, folder: {"kind": "RunRecord"})
    made: list[Walk] = []

    def run(outcomes: dict[str, Callable[[], StageResult]] | None = None, workdir: Path | None = None) -> tuple[Walk, dict[str, Any], RebuildOptions]:
        stubs = Walk(tmp_path, outcomes)
        made.append(stubs)
        monkeypatch.setattr(rebuild, "STAGES", stubs.stages())
        options = RebuildOptions(workdir=workdir, root=tmp_path, output=tmp_path / "out")
        verdict, _ = rebuild.run_rebuild(record, options)
        return stubs, json.loads(json.dumps(verdict)), options

    run.made = made  # type: ignore[attr-defined]
    return run


def statuses(verdict: dict[str, Any]) -> list[str]:
    return [s["status"] for s in verdict["stages"]]


def test_a_walk_where_every_stage_passes_runs_them_all_in_order(walk: Callable[..., Any]) -> None:
    stubs, verdict, _ = walk()
    assert stubs.called == RUNBOOK
    assert all(not missing for missing in stubs.missing.values()), stubs.missing
    assert [s["name"] for s in verdict["stages"]] == RUNBOOK and statuses(verdict) == ["pass"] * len(RUNBOOK)
    assert (verdict["verdict"], verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("pass", None, 0, False)
    assert verdict["seeds"]["rebuilt"] == [1] and verdict["curves"]["reference"] == [[1, 2.0], [2, 1.5]]
    assert not list(validator("Verdict").iter_errors(verdict))
    assert stubs.stopped == ["hosts"], "the rank hosts are stopped when the walk ends"


def test_the_first_failure_is_the_diagnosis_and_every_later_stage_is_not_run(walk: Callable[..., Any]) -> None:
    stubs, verdict, _ = walk({"dataset": lambda: skipped("no dataset"), "config": lambda: failed("key lr differs"), "steps": lambda: failed("never reached")})
    assert stubs.called == RUNBOOK[:5], "nothing runs after the failure"
    assert statuses(verdict) == ["pass", "pass", "pass", "skipped", "fail"] + ["not-run"] * 6
    assert [s["detail"] for s in verdict["stages"][5:]] == ["not run: config failed first"] * 6
    assert all(s["seconds"] == 0 for s in verdict["stages"][5:])
    assert (verdict["verdict"], verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("fail", "config", 1, False)
    assert rebuild.exit_code(verdict) == ExitCode.FAILED
    assert "NOT reproduced: the first difference is at the config stage (key lr differs)" in verdict["claim"]["text"]
    assert not list(validator("Verdict").iter_errors(verdict))


def test_a_stage_whose_prerequisite_failed_is_not_run_even_if_it_would_pass(walk: Callable[..., Any]) -> None:
    stubs, verdict, _ = walk({"digest": lambda: failed("uv could not install the lock", log_tail="error: no solution", exit_code=2)})
    assert stubs.called == ["artifacts", "digest"]
    dependents = [name for name, stage in STAGES.items() if {"choice", "realized", "probe"} & set(stage.needs)]
    assert dependents and all(verdict["stages"][RUNBOOK.index(name)]["status"] == "not-run" for name in dependents)
    assert verdict["stages"][1]["log_tail"] == "error: no solution"
    assert (verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("digest", 2, False)
    assert rebuild.exit_code(verdict) == ExitCode.USAGE
    assert stubs.stopped == [], "no rank hosts were started"


def test_an_infrastructure_failure_is_marked_so(walk: Callable[..., Any]) -> None:
    _, verdict, _ = walk({"preflight": lambda: failed("rank 1 did not report", exit_code=3)})
    assert (verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("preflight", 3, True)
    assert rebuild.exit_code(verdict) == ExitCode.INFRA


def test_a_stage_that_raises_still_ends_what_was_started_and_removes_the_temporary_workdir(
    walk: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temporary = tmp_path / "temporary"
    monkeypatch.setattr(rebuild.tempfile, "mkdtemp", lambda prefix: str(temporary.mkdir() or temporary))

    def boom() -> StageResult:
        raise RuntimeError("stage crashed")

    with pytest.raises(RuntimeError, match="stage crashed"):
        walk({"run": boom})
    assert walk.made[-1].called == RUNBOOK[:7] and walk.made[-1].stopped == ["hosts"], "the rank hosts preflight started are stopped"  # type: ignore[attr-defined]
    assert not temporary.exists()


def test_a_workdir_that_is_not_empty_is_refused_before_any_stage(walk: Callable[..., Any], tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "left-over").write_text("x")
    with pytest.raises(rebuild.RebuildUsageError, match="not empty"):
        walk(workdir=workdir)
    assert (workdir / "left-over").exists()


def test_a_given_workdir_is_kept(walk: Callable[..., Any], tmp_path: Path) -> None:
    workdir = tmp_path / "kept"
    _, verdict, _ = walk(workdir=workdir)
    assert verdict["verdict"] == "pass" and workdir.is_dir()
