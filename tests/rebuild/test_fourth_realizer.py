"""Adding a realizer is one module and one registry line (ARCHITECTURE.md, "Realizers").

This module is that module: a throwaway fourth realizer (a "flake" closure, nothing like a venv,
an image or the interpreter reprogate runs in), registered at test time in `REALIZERS` and
nowhere else. It is taken through every part of the rebuild that touches a realizer — chosen
from the record, realized by the digest stage, boxed (or not) by the sandbox, blamed by the
preflight for a module it lacks, described by the claim, written into the rebuild record, shown
side by side with the reference and merged into the verdict's environment — and each must say
what the fourth realizer's own identity says. Code that went back to asking a realizer's name
(a dispatch dict keyed by "venv"/"container"/"current", an `if kind == "venv": ... elif ...`)
crashes here or leaves the fourth's words out, and fails this test; the AST scan at the end
fails on a name comparison even where it would not break the fourth.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES, REPO

import reprogate.rebuild.runner as runner
from reprogate.core.documents import Document, load_document
from reprogate.rebuild import realizers, sandbox
from reprogate.rebuild.claim import bounded_claim
from reprogate.rebuild.environments import RebuiltSide, side_by_side
from reprogate.rebuild.launchers import local
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.realizers.base import (
    Defect,
    Identity,
    Isolation,
    LockPin,
    RankProcess,
    RankStart,
    RealizeFailed,
    Realizer,
    RealizeRequest,
)
from reprogate.rebuild.realizers.local import LocalProcess, start_local_ranks
from reprogate.rebuild.record import rebuild_record
from reprogate.rebuild.stages.digest import digest
from reprogate.rebuild.stages.preflight import environment_defect
from reprogate.rebuild.state import Fetched, RebuildJob, RebuildState
from reprogate.rebuild.verdict import RecordRef, StageRecord

NAME = "flake"
LOCK = "flake.lock"
CLOSURE = "/nix/store/" + "q" * 32 + "-training-env"
DIGEST = "sha256:" + "5e" * 32
RECORD = EXAMPLES / "tiny" / "records" / "tiny.yaml"
OF = RecordRef("examples/tiny/records/tiny.yaml", "tiny-markov-mlp", "canonical-v1:sha256:" + "0" * 64, "bitwise")


# --- the fourth realizer: what its own module would hold ---


@dataclass(frozen=True)
class FlakeIdentity(Identity):
    closure: str
    lock_digest: str
    substituted: bool = True

    def summary(self) -> str:
        return f"flake closure {self.closure} from {LOCK} ({self.lock_digest[:19]}...)"

    def claim_words(self, which: str) -> str:
        return f"the {which} environment: the flake closure {self.closure}"

    def claim_limits(self) -> tuple[str, ...]:
        return ("the flake's store paths were substituted from a binary cache, not built",) if self.substituted else ()

    def image_words(self) -> str:
        return "no image: a flake closure"

    def installed_lock(self) -> LockPin:
        return LockPin(LOCK, self.lock_digest)

    def missing_module(self, module: str) -> Defect:
        return Defect("lock-file", f"the flake closure lacks {module}: add it to {LOCK}'s inputs")

    def amend_record(self, data: dict[str, Any]) -> None:
        source = data.setdefault("source", {"dirty": False})
        source["lock_files"] = [*(e for e in source.get("lock_files") or [] if e.get("path") != LOCK), {"path": LOCK, "checksum": self.lock_digest}]


class FlakeEnvironment:
    kind = NAME
    command_environment: tuple[str, ...] = ()
    image_reference: str | None = None

    def __init__(self, identity: FlakeIdentity) -> None:
        self.identity = identity
        self.python = f"{identity.closure}/bin/python"
        self.closed = False

    def spawn(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> LocalProcess:
        return LocalProcess(argv, env, cwd, log)

    def spawn_ranks(self, starts: Sequence[RankStart], cwd: Path) -> dict[int, RankProcess]:
        return start_local_ranks(starts, cwd, None)

    def command(self, argv: list[str], env: Mapping[str, str], cwd: Path, inherit: Sequence[str] = ()) -> list[str]:
        return list(argv)

    def close(self) -> None:
        self.closed = True


class FlakeRealizer:
    name = NAME
    isolation = Isolation(local_ranks_sandboxed=False, own="the flake's own namespaces")

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.requests: list[RealizeRequest] = []

    def realize(self, request: RealizeRequest) -> FlakeEnvironment:
        self.requests.append(request)
        if self.fails:
            raise RealizeFailed(f"{LOCK}: the closure could not be substituted", log_tail="error: cannot build derivation")
        return FlakeEnvironment(FlakeIdentity(CLOSURE, DIGEST))

    def unrealized(self, which: str) -> str:
        return f"the {which} environment: a flake closure that could not be had"


# --- the one registry line, at test time ---


@pytest.fixture
def flake(monkeypatch: pytest.MonkeyPatch) -> FlakeRealizer:
    registered: Realizer = FlakeRealizer()  # the Protocol holds it: mypy checks the fourth is a Realizer
    monkeypatch.setitem(realizers.REALIZERS, NAME, registered)
    assert isinstance(registered, FlakeRealizer)
    return registered


def _record() -> dict[str, Any]:
    data: dict[str, Any] = copy.deepcopy(load_document(RECORD).data)
    data.setdefault("job", {}).setdefault("environment", {})["realizer"] = NAME
    return data


def _state(tmp_path: Path) -> RebuildState:
    data = _record()
    choice = realizers.choose(data)  # the record's job.environment.realizer, found in the registry
    job = RebuildJob(RECORD, Document(str(RECORD), data, "yaml"), EXAMPLES.parent, tmp_path, RebuildOptions(), choice, local.LocalLauncher())
    state = RebuildState(job)
    state.fetched = Fetched((), (), tmp_path / "runtime")
    return state


def test_the_record_chooses_the_fourth_realizer_through_the_registry(flake: FlakeRealizer) -> None:
    choice = realizers.choose(_record())
    assert (choice.name, choice.reason) == (NAME, f"the record declares job.environment.realizer: {NAME}")
    assert realizers.choose(_record(), override=NAME).name == NAME


def test_the_digest_stage_realizes_it_and_says_what_its_identity_says(tmp_path: Path, flake: FlakeRealizer) -> None:
    state = _state(tmp_path)
    result = digest(state)
    assert result.status == "pass", result
    assert result.detail == f"reference environment: flake closure {CLOSURE} from {LOCK} ({DIGEST[:19]}...)"
    assert result.data == {"realizer": NAME}
    assert len(flake.requests) == 1 and flake.requests[0].sandbox is None, "its ranks are not local processes to box: no bubblewrap"
    assert state.environment is not None and state.environment.sandbox == "the flake's own namespaces"
    realized = state.environment.realized
    assert realized.kind == NAME and realized.identity == FlakeIdentity(CLOSURE, DIGEST)
    state.close()
    assert isinstance(realized, FlakeEnvironment) and realized.closed, "the stage registered the environment's end"


def test_the_preflight_blames_the_fourth_environment_for_a_module_it_lacks(tmp_path: Path, flake: FlakeRealizer) -> None:
    state = _state(tmp_path)
    digest(state)
    assert state.environment is not None
    defect = environment_defect(state.environment, "rank 0: ModuleNotFoundError: No module named 'torch'")
    assert defect == Defect("lock-file", f"the flake closure lacks torch: add it to {LOCK}'s inputs")


def test_the_sandbox_refusal_and_words_follow_its_isolation(flake: FlakeRealizer) -> None:
    isolation = realizers.REALIZERS[NAME].isolation
    assert not sandbox.applies(isolation, "local")
    assert sandbox.refusal(isolation, "local", "the pull request's lock file", allow_unsandboxed=False) is None
    assert sandbox.described(None, isolation, "slurm") == "the flake's own namespaces"


def test_the_claim_names_the_fourth_environment_and_its_limits(tmp_path: Path, flake: FlakeRealizer) -> None:
    state = _state(tmp_path)
    digest(state)
    found = bounded_claim(state, (StageRecord("digest", "pass", 0.1, "ok"),), (), None, [1]).to_json()
    assert f"replayed from an empty worker in the reference environment: the flake closure {CLOSURE}, on " in found["text"], found["text"]
    assert "the flake's store paths were substituted from a binary cache, not built" in found["not_covered"]
    assert not any("not rebuilt" in item for item in found["not_covered"]), "only the current realizer's identity says nothing was rebuilt"


def test_a_fourth_realizer_that_fails_is_named_by_its_own_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(realizers.REALIZERS, NAME, FlakeRealizer(fails=True))
    state = _state(tmp_path)
    result = digest(state)
    assert (result.status, result.exit_code, result.log_tail) == ("fail", 1, "error: cannot build derivation")
    assert state.environment is None
    failed = StageRecord("digest", "fail", 0.1, result.detail)
    found = bounded_claim(state, (failed,), (), failed, []).to_json()
    assert "Rebuilt in the reference environment: a flake closure that could not be had, on " in found["text"], found["text"]


def test_the_rebuild_record_side_by_side_and_verdict_say_what_the_fourth_made(tmp_path: Path, flake: FlakeRealizer) -> None:
    state = _state(tmp_path)
    digest(state)
    out = tmp_path / "out"
    out.mkdir()
    written = rebuild_record(state, OF, True, "2026-12-01T00:00:00Z", out)
    assert written["metadata"]["rebuild_of"]["realizer"] == NAME
    assert {"path": LOCK, "checksum": DIGEST} in written["source"]["lock_files"]
    rows = {row["what"]: row for row in side_by_side(state.job.data, RebuiltSide.of(state))}
    assert rows["environment"]["rebuilt"] == f"reference environment, realized by {NAME}"
    assert rows["image"]["rebuilt"] == "no image: a flake closure"
    assert rows["lock file"]["rebuilt"] == f"{LOCK} {DIGEST[:19]}"
    environment = runner._environment(state)
    assert (environment["realizer"], environment["closure"], environment["lock_digest"], environment["substituted"]) == (NAME, CLOSURE, DIGEST, True)


# --- no code of the pipeline outside rebuild/realizers/ asks which realizer ran ---

SCANNED = ("reprogate/rebuild",)  # the pipeline; the CLI's choices, init's defaults and the record's rules are the schema's layer
NOT_SCANNED = "reprogate/rebuild/realizers/"
NAMES = frozenset({"venv", "container", "current"})


def _name_comparisons(tree: ast.AST) -> list[int]:
    """Lines that compare with a realizer's name (==, !=, in, a match case) or key a dict by one."""
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            literals = [e for side in sides for e in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])]
            if any(isinstance(e, ast.Constant) and e.value in NAMES for e in literals):
                found.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in NAMES for k in node.keys):
            found.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in NAMES:
            found.append(node.lineno)
    return found


def test_the_scan_finds_a_name_comparison() -> None:
    """The scan below can fail: each way of asking a realizer's name is found."""
    source = (
        'if kind == "venv": pass\n'
        'x = realized.kind not in ("venv", "container")\n'
        'describe = {"container": 1}\n'
        'match kind:\n    case "current": pass\n'
        'ok = data.get("container") and table(data, "container")\n'
    )
    assert _name_comparisons(ast.parse(source)) == [1, 2, 3, 5]


def test_no_pipeline_module_outside_the_realizers_compares_realizer_names() -> None:
    offending = []
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative.startswith(NOT_SCANNED):
                continue
            offending += [f"{relative}:{line}" for line in _name_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offending, f"ask the realizer (its Isolation, its Realized's identity) instead of its name: {offending}"
