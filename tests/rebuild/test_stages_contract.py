"""The rebuild stages' contract (rebuild/stages/__init__.py, rebuild/state.py) and the runner's
walk over it (rebuild/runner.py): each stage needs only what an earlier stage provides, its code
reads and sets only the state fields it declares, each field is set once; the walk runs the stages
in runbook order, stops at the first failure and reports every later stage not run. The walk is
driven by stub stages (no realizer, no ranks, no torch)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.realized import realized
from support.verdicts import STAGES as RUNBOOK

import reprogate.rebuild.runner as rebuild
from reprogate.core.diagnostics import ExitCode
from reprogate.core.record import read_record
from reprogate.core.schemas import load_schema, validator
from reprogate.rebuild.comparisons import DIFFERENCE, EQUIVALENCE, EXACT, PREDICTION, MetricTest, StatedTest, StepTest
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.realizers.base import Choice
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.seed_plan import SeedPlan
from reprogate.rebuild.stages import STAGES, Stage
from reprogate.rebuild.stages.base import StageResult, failed, passed, skipped
from reprogate.rebuild.state import PROVIDED, Environment, Fetched, Machine, Probe, Ranks, RebuildState, Runs, SeedRun
from reprogate.rebuild.topology import topology
from reprogate.rebuild.verdict import Claim, FileRef, RecordRef, SeedsUsed, StageRecord, Verdict
from reprogate.rebuild.verdict_environment import VerdictEnvironment
from reprogate.runtime.trace import StepEvent

# properties of RebuildState that read a stage's field
DERIVED = {"reference_events": "fetched", "packages": "probe"}


def test_the_stages_are_the_runbook_and_the_verdicts_in_the_same_order() -> None:
    assert list(STAGES) == RUNBOOK
    assert load_schema("Verdict")["properties"]["stages"]["items"]["properties"]["name"]["enum"] == RUNBOOK
    assert load_schema("Verdict")["properties"]["stages"]["minItems"] == len(STAGES)


def test_every_need_is_provided_by_an_earlier_stage_and_each_field_by_one_stage() -> None:
    provided: dict[str, str] = {}
    for name, stage in STAGES.items():
        assert isinstance(stage, Stage) and callable(stage.run)
        assert set(stage.needs) | set(stage.provides) <= set(PROVIDED), name
        for need in stage.needs:
            assert need in provided, f"stage {name} needs {need}, which no earlier stage provides"
        for field in stage.provides:
            assert field not in provided, f"{field} is provided by both {provided[field]} and {name}"
            provided[field] = name
    assert set(provided) == set(PROVIDED), "every state field is some stage's"


def _uses(module: Any) -> tuple[set[str], set[str]]:
    """(state fields the module's code reads, fields it sets) through `state.<field>`."""
    tree = ast.parse(inspect.getsource(module))
    read: set[str] = set()
    set_: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "state":
            field = DERIVED.get(node.attr, node.attr)
            if field in PROVIDED:
                (set_ if isinstance(node.ctx, ast.Store) else read).add(field)
    return read, set_


@pytest.mark.parametrize("name", list(STAGES))
def test_a_stage_reads_and_sets_only_the_fields_it_declares(name: str) -> None:
    stage = STAGES[name]
    read, set_ = _uses(sys.modules[stage.run.__module__])
    assert not read - set(stage.needs) - set(stage.provides), f"stage {name} reads {sorted(read - set(stage.needs))} without naming them in needs"
    assert set_ == set(stage.provides), f"stage {name} sets {sorted(set_)}, declares {sorted(stage.provides)}"


def test_a_field_is_set_once(tmp_path: Path) -> None:
    state = RebuildState(SimpleNamespace())  # type: ignore[arg-type]
    state.runs = Runs(())
    with pytest.raises(AttributeError, match="runs was already established"):
        state.runs = Runs((SeedRun(1),))
    assert state.runs == Runs(())


def test_the_stage_values_are_frozen(tmp_path: Path) -> None:
    for value in (Runs(()), SeedRun(1), Machine(1, 1), Probe({}), Fetched((), (), tmp_path)):
        with pytest.raises(AttributeError):
            value.__setattr__(next(iter(value.__dataclass_fields__)), None)


EVENTS = [StepEvent(1, 0, loss=2.0), StepEvent(2, 0, loss=1.5)]
LOCAL = SimpleNamespace(name="local", ranks_run_here=True)

# What a stub stage puts into each field it provides: the runner and the verdict read them after the walk.
FILL: dict[str, Callable[[Path], Any]] = {
    "fetched": lambda tmp: Fetched(("project/train.py",), tuple(EVENTS), tmp / "runtime"),
    "environment": lambda tmp: Environment(Choice("current", "stub"), realized("current"), "none (stub)"),
    "probe": lambda tmp: Probe({"python": "3.12.0", "packages": {"torch": "2.13.0"}}),
    "ranks": lambda tmp: Ranks(LOCAL, SimpleNamespace(nodes=1), SimpleNamespace(stop=lambda: None), "gloo", "no GPU"),  # type: ignore[arg-type]
    "machine": lambda tmp: Machine(nodes=1, world_size=1, machine="x86_64"),
    "runs": lambda tmp: Runs((SeedRun(1, (StepEvent(1, 0, loss=2.0),), ok=True),)),
}


def test_every_provided_field_has_a_stub_value() -> None:
    assert set(FILL) == set(PROVIDED)


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

    def _stub(self, name: str, stage: Stage) -> Callable[[RebuildState], StageResult]:
        def run(state: RebuildState) -> StageResult:
            self.called.append(name)
            self.missing[name] = [need for need in stage.needs if getattr(state, need) is None]
            if name == "preflight":  # the rank hosts start: the runner must stop them, whatever happens next
                state.on_close(lambda: self.stopped.append("hosts"))
            result = self.outcomes.get(name, lambda: passed(f"{name} stub"))()
            if result.status == "pass":
                for field in stage.provides:
                    setattr(state, field, FILL[field](self.tmp))
            return result

        return run


@pytest.fixture
def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[Walk, dict[str, Any], RebuildOptions]]:
    record = tmp_path / "record.yaml"
    record.write_text(
        "apiVersion: reprogate/v1\nkind: RunRecord\nmetadata: {name: stub}\n"
        "contract: {level: bitwise, envelope: {}, steps: {start: 0, count: 2}}\nexecution: {world_size: 1}\n"
    )
    monkeypatch.setattr(rebuild, "check_before_running", lambda doc, path, options: rebuild.Chosen(Choice("current", "stub"), LOCAL))  # type: ignore[arg-type]
    monkeypatch.setattr(rebuild, "rebuild_record", lambda state, of, passed, started_at, folder: {"kind": "RunRecord"})
    made: list[Walk] = []

    def run(outcomes: dict[str, Callable[[], StageResult]] | None = None, workdir: Path | None = None) -> tuple[Walk, dict[str, Any], RebuildOptions]:
        stubs = Walk(tmp_path, outcomes)
        made.append(stubs)
        monkeypatch.setattr(rebuild, "STAGES", stubs.stages())
        options = RebuildOptions(workdir=workdir, root=tmp_path, output=tmp_path / "out")
        rebuilt = rebuild.run_rebuild(record, options)
        written = json.loads(json.dumps(rebuilt.verdict.to_json()))
        assert Verdict.from_json(written, "verdict.json") == rebuilt.verdict, "every verdict a rebuild writes reads back as itself"
        return stubs, written, options

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
    assert ExitCode(verdict["exit_code"]) == ExitCode.FAILED
    assert "NOT reproduced: the first difference is at the config stage (key lr differs)" in verdict["claim"]["text"]
    assert not list(validator("Verdict").iter_errors(verdict))


def test_a_stage_whose_prerequisite_failed_is_not_run_even_if_it_would_pass(walk: Callable[..., Any]) -> None:
    stubs, verdict, _ = walk({"digest": lambda: failed("uv could not install the lock", log_tail="error: no solution", exit_code=2)})
    assert stubs.called == ["artifacts", "digest"]
    dependents = [name for name, stage in STAGES.items() if {"environment", "probe", "ranks"} & set(stage.needs)]
    assert dependents and all(verdict["stages"][RUNBOOK.index(name)]["status"] == "not-run" for name in dependents)
    assert verdict["stages"][1]["log_tail"] == "error: no solution"
    assert (verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("digest", 2, False)
    assert ExitCode(verdict["exit_code"]) == ExitCode.USAGE
    assert stubs.stopped == [], "no rank hosts were started"


def test_an_infrastructure_failure_is_marked_so(walk: Callable[..., Any]) -> None:
    _, verdict, _ = walk({"preflight": lambda: failed("rank 1 did not report", exit_code=3)})
    assert (verdict["diagnosis"], verdict["exit_code"], verdict["infrastructure"]) == ("preflight", 3, True)
    assert ExitCode(verdict["exit_code"]) == ExitCode.INFRA


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


def _full_verdict() -> Verdict:
    plan = SeedPlan(None, (11, 12), "fresh")
    power = {"sigma": 0.01, "minimum_detectable_shift": 0.02, "at_power": 0.8}
    tests = (
        StepTest(EXACT, ("loss",), 0.0, 0.0, 160, None, 0.0, True),
        MetricTest(PREDICTION, "val_loss", 0.05, 5, 1, True, plan, power, {"interval": [0.9, 1.0], "value": 0.95}),
        MetricTest(DIFFERENCE, "val_loss", 0.05, 5, 2, True, plan, power, {"difference": 0.001, "limit": 0.02, "p_value": 0.9}, notice="skewed"),
        MetricTest(EQUIVALENCE, "val_loss", 0.05, 5, 2, False, plan, {"good_build_passes": 0.3}, {"margin": 0.01}),
    )
    stages = tuple(StageRecord(name, "pass", 0.25, f"{name} ok") for name in RUNBOOK[:-1]) + (
        StageRecord("metric", "fail", 1.0, "val_loss beyond token=ghp_" + "a" * 36, log_tail="trace", exit_code=1),
    )
    return Verdict(
        passed=False,
        diagnosis="metric",
        exit_code=1,
        record=RecordRef("records/tiny.yaml", "tiny", "canonical-v1:sha256:" + "0" * 64, "statistical"),
        run=RunBinding("n" * 16, "123", "1", "o/r"),
        stages=stages,
        environment=VerdictEnvironment({"requested": "reference", "realizer": "venv"}),
        seeds=SeedsUsed((11, 12), (1, 2, 3, 4, 5), (11, 12), "fresh"),
        tests=tuple(StatedTest.of(t) for t in tests),
        curves={"reference": [(1, 2.0)], "rebuilt": [(1, 2.0)]},
        started_at="2026-12-01T00:00:00Z",
        seconds=3.25,
        tool="reprogate test",
        claim=Claim(False, "tiny was NOT reproduced", ("a",), ("b",), topology(read_record({"execution": {"world_size": 1}}), {0: "n1"}).as_dict()),
        rebuild_record=FileRef("out/rebuild-record.yaml", "sha256:" + "1" * 64),
    )


def test_a_verdict_with_every_field_is_what_the_schema_describes() -> None:
    verdict = _full_verdict()
    found = json.loads(json.dumps(verdict.to_json()))
    assert not list(validator("Verdict").iter_errors(found))
    assert set(found) <= set(load_schema("Verdict")["properties"]), "every field the verdict writes is in its schema"
    assert (found["verdict"], found["diagnosis"], found["exit_code"], found["infrastructure"]) == ("fail", "metric", 1, False)
    assert [t["test"] for t in found["tests"]] == [t.kind for t in verdict.tests]
    assert found["tests"][2]["notice"] == "skewed" and "notice" not in found["tests"][1]
    assert found["tests"][1]["seeds"] == [11, 12] and found["tests"][1]["seed_source"] == "fresh"
    assert "ghp_" not in found["stages"][-1]["detail"], "what leaves is redacted"
    assert found["claim"]["placement"]["ranks"] == [{"rank": 0, "node": "n1", "node_index": 0}]
    assert verdict.code() == ExitCode.FAILED and verdict.failed_stage is verdict.stages[-1]
    with pytest.raises(AttributeError):
        verdict.__setattr__("passed", True)
    read = Verdict.from_json(found, "verdict.json")
    assert read.to_json() == found, "read back, it writes the same JSON (its text is not redacted twice)"
    assert read.stages[:-1] == verdict.stages[:-1] and read.stages[-1].detail == found["stages"][-1]["detail"], "only the redacted text differs"
    assert dataclasses.replace(read, stages=verdict.stages) == verdict


def test_the_realizer_and_launcher_are_chosen_in_one_place() -> None:
    """Chosen before anything runs (rebuild/runner.py) and carried by the job; a stage that chose
    again could realize or launch something else than what the refusals were checked for."""
    package = Path(rebuild.__file__).parent
    choosers = []
    for path in sorted(package.parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "choose":
                if isinstance(node.func.value, ast.Name) and node.func.value.id in ("realizers", "launchers"):
                    choosers.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    assert choosers and all(where.startswith("rebuild/runner.py:") for where in choosers), choosers


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("venv", "the venv made from train/requirements.txt cannot import typing_extensions: the lock file is incomplete"),
        ("container", "the image cannot import typing_extensions: the image the record pins lacks it"),
        ("current", None),
    ],
)
def test_a_module_the_pinned_environment_lacks_is_its_defect_not_the_runners(kind: str, says: str | None) -> None:
    from reprogate.rebuild.stages.preflight import environment_defect

    environment = Environment(Choice(kind, "test"), realized(kind), "bubblewrap")
    detail = "rank 0 on localhost: torch cannot be imported: No module named 'typing_extensions'"
    found = environment_defect(environment, detail)
    assert (found is None) == (says is None) and (found is None or says is None or found.words.startswith(says)), found
    assert found is None or found.cause == ("lock-file" if kind == "venv" else "image"), found
    assert environment_defect(environment, "rank 0 on localhost exited 1 before it was ready") is None
