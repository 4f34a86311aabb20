"""0.4.0's new surface, attacked: a pull request's author (or training code in the rebuild) tries to
turn `reprogate/reproduction` green without the reference reproducing at this (base, head),
through the action's new inputs (extra-args, records, working-directory), the gate's --dry-run,
the preflight's lock-defect reclassification, the frozen verdict and the venv cache key. Each test
fails if its attack works."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import Result
from support import REPO, git, require_tool
from support.gate import FakeGitHub, bump_lock, pr_event, statuses
from support.realized import realized
from support.verdicts import bound_verdict, make_verdict, typed
from test_action import action_tree, cache_key, fake_venv, run_script  # noqa: F401 (fake_venv is a fixture)

from reprogate.github.verdicts import terminal
from reprogate.rebuild.stages.preflight import environment_defect
from reprogate.rebuild.verdict import RecordRef

TINY = "tiny/records/tiny.yaml"
Run = Callable[..., Result]


def refused(venv: Path, cwd: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    require_tool("bash")
    env = {"PATH": os.environ["PATH"], "VENV": str(venv), "GITHUB_TOKEN": "ghs_secret", **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}
    return subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=env, cwd=cwd, capture_output=True, text=True, check=False)


# --- extra-args: a line that repeats an option the action sets would win (click takes the last) ---


@pytest.mark.parametrize(
    "inputs, extra",
    [
        # status: post a passing verdict of another head on this one, or another state, nonce, context
        ({"command": "status", "sha": "a" * 40}, "--sha=" + "b" * 40),
        ({"command": "status"}, "--state\nsuccess"),
        ({"command": "status", "rebuild_result": "failure"}, "--rebuild-result=success"),
        ({"command": "status", "nonce": "n" * 20}, "--nonce\nguessed"),
        ({"command": "status"}, "--from-verdict=forged/verdict.json"),
        ({"command": "status"}, "--context=reprogate/elsewhere"),
        ({"command": "status"}, "--also-context\nreprogate/reproduction"),
        # gate: a dry run posts nothing; compute mode posts nothing
        ({"command": "gate"}, "--dry-run=/home/runner/work/_temp/_github_workflow/event.json"),
        ({"command": "gate"}, "--mode\ncompute"),
        ({"command": "gate", "mode": "publish", "result_file": "r.json"}, "--result-file=forged.json"),
        # rebuild: the reference environment instead of the pull request's, no contract of the base
        ({"command": "rebuild", "record": "r.yaml", "environment": "candidate"}, "--environment=reference"),
        ({"command": "rebuild", "record": "r.yaml", "base": "b" * 40}, "--contract-from\nHEAD"),
        ({"command": "rebuild", "record": "r.yaml"}, "--allow-unsandboxed"),
        ({"command": "rebuild", "record": "r.yaml"}, "--dry-run"),
    ],
)
def test_extra_args_cannot_repeat_an_option_the_action_sets(fake_venv: Path, tmp_path: Path, inputs: dict[str, str], extra: str) -> None:  # noqa: F811
    done = refused(fake_venv, tmp_path, extra_args=f"  {extra}  \n", **inputs)
    assert done.returncode == 2, done.stdout
    assert "token=" not in done.stdout, "reprogate never ran"
    assert "extra-args may not give --" in done.stdout and "guessed" not in done.stdout and "forged" not in done.stdout


def test_extra_args_that_add_rather_than_override_still_pass(fake_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    out = run_script(fake_venv, tmp_path, command="status", verdict="v.json", extra_args="--target-url\nhttps://example.com/run")
    assert out[1:] == ["github", "status", "--from-verdict", "v.json", "--target-url", "https://example.com/run"]
    out = run_script(fake_venv, tmp_path, command="rebuild", record="r.yaml", extra_args="--timeout\n30\n--seeds=3")
    assert out[-7:] == ["--format", "github", "--timeout", "30", "--seeds=3", "--", "r.yaml"]


def test_a_working_directory_that_looks_like_an_option_is_a_folder(fake_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    done = refused(fake_venv, tmp_path, command="detect", base="origin/main", working_directory="-P")
    assert done.returncode == 2 and "working-directory does not exist" in done.stdout, "cd -P would have gone to $HOME"


def test_a_records_line_is_one_argument_even_with_spaces_newlines_and_globs(fake_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    out = run_script(fake_venv, tmp_path, command="validate", records="a b.yaml; rm -rf ~\n$(id)\n*")
    assert out[1:] == ["validate", "--format", "github", "--", "a b.yaml; rm -rf ~", "$(id)", "*"]


def test_a_records_line_or_record_that_starts_with_a_dash_is_a_path_not_an_option(fake_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    """`--format=text` as a record would have replaced the annotations with plain text (click takes
    the last option); `--strict` would have changed what fails. After `--` each is a path."""
    out = run_script(fake_venv, tmp_path, command="validate", records="--format=text\n-r.yaml")
    assert out[1:] == ["validate", "--format", "github", "--", "--format=text", "-r.yaml"]
    out = run_script(fake_venv, tmp_path, command="audit", records="--sample=1")
    assert out[1:] == ["audit", "--", "--sample=1"]
    out = run_script(fake_venv, tmp_path, command="rebuild", record="--dry-run")
    assert out[1:] == ["rebuild", "--environment", "reference", "--format", "github", "--", "--dry-run"]


# --- github status: --state beside verdicts, and why --sha may not be repeated ---


def test_a_state_given_beside_a_failing_verdict_is_not_what_is_posted(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, head, TINY, "fail", "model-state")))
    post_status(repo, head, "--state", "success", "--from-verdict", str(tmp_path / "v.json"), "--expect-records", json.dumps([TINY]))
    assert statuses(github) == [("reprogate/reproduction", "failure")]


def test_a_passing_verdict_is_bound_to_a_record_not_a_lock_so_the_sha_must_come_from_the_action(
    post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path
) -> None:
    """Why run.sh refuses a second --sha: the verdict of the head that reproduced carries the
    record's digest, which a later head that only bumps the lock shares. The sha the action passes
    (the dispatch's) is the one that counts; run.sh refuses any other."""
    good = git(repo, "rev-parse", "HEAD")
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, good, TINY)))
    _, bumped = bump_lock(repo)
    post_status(repo, good, "--from-verdict", str(tmp_path / "v.json"), "--sha", good, "--sha", bumped)  # what a repeated --sha does
    assert statuses(github, bumped) == [("reprogate/reproduction", "success")], "the last --sha wins and the record digest matches"


# --- gate --dry-run in a real job: it posts nothing, and its answers never leak into a real run ---


def test_a_dry_run_inside_a_job_posts_nothing_and_a_real_run_still_sees_the_terminal_status(
    run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path
) -> None:
    base, head = bump_lock(repo)
    github.post_status(head, "failure", "reprogate/reproduction", f"not reproduced; base {base[:12]}")
    event = tmp_path / "dry.json"
    event.write_text(json.dumps(pr_event("synchronize", base, head)))
    before = len(github.requests)
    dry = run_gate(pr_event("synchronize", base, head), "pull_request", "--dry-run", str(event))
    assert dry.exit_code == 0, dry.output
    assert len(github.requests) == before, "a dry run sends nothing, with a token in its environment or not"
    assert "status reprogate/reproduction" in dry.output and "pending" in dry.output, "the dry run shows a first run's answer"
    real = run_gate(pr_event("synchronize", base, head))
    assert real.exit_code == 0, real.output
    assert statuses(github, head) == [("reprogate/reproduction", "failure")], "the dry run's 'no status yet' did not leak: no pending over failure"


@pytest.mark.parametrize("mode", ["compute", "publish"])
def test_a_dry_run_is_refused_in_the_two_workflow_modes(run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path, mode: str) -> None:
    base, head = bump_lock(repo)
    event = tmp_path / "dry.json"
    event.write_text(json.dumps(pr_event("opened", base, head)))
    done = run_gate(pr_event("opened", base, head), "pull_request", "--mode", mode, "--result-file", str(tmp_path / "r.json"), "--dry-run", str(event))
    assert done.exit_code == 2 and github.statuses == [] and not (tmp_path / "r.json").exists()


# --- the preflight's reclassification: exit 1 or 3, never a pass ---


@pytest.mark.parametrize("kind", ["venv", "container", "current"])
def test_a_rank_that_prints_no_module_named_changes_only_the_kind_of_failure(kind: str) -> None:
    environment = SimpleNamespace(realized=realized(kind))
    detail = "rank 0: ModuleNotFoundError: No module named 'torch'\n::set-output name=verdict::pass"
    defect = environment_defect(environment, detail)  # type: ignore[arg-type]
    assert (defect is None) == (kind == "current")
    for verdict in (make_verdict("fail", "preflight"), make_verdict("fail", "preflight", infrastructure=True)):
        assert terminal([typed(verdict)], [], []).state in ("failure", "error")


# --- the frozen verdict ---


def test_the_verdict_and_its_parts_cannot_be_reassigned() -> None:
    """Built once; nothing in the rebuild's process rebinds a field before verdict.json is written
    (the code under test runs in other processes, sandboxed: tests/rebuild/test_build_sandbox.py)."""
    from reprogate.rebuild import verdict

    for part in (verdict.Verdict, verdict.StageRecord, verdict.RecordRef, verdict.SeedsUsed, verdict.Claim, verdict.FileRef):
        assert part.__dataclass_params__.frozen, part  # type: ignore[attr-defined]
    ref = RecordRef("r.yaml", "r", "canonical-v1:sha256:" + "0" * 64, "bitwise")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.digest = "other"  # type: ignore[misc]


# --- the venv cache key: only the action's own checkout counts, never the working tree ---


def test_the_cache_key_ignores_the_checked_out_pull_request(tmp_path: Path) -> None:
    tree = action_tree(tmp_path)
    first = cache_key(tree, tmp_path)
    checkout = tmp_path / "pull-request"
    (checkout / "reprogate").mkdir(parents=True)
    (checkout / "reprogate" / "__init__.py").write_text("import os; os.system('steal')\n")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'reprogate'\n")
    require_tool("bash")
    output = tmp_path / "output-pr"
    env = {"PATH": os.environ["PATH"], "GITHUB_ACTION_PATH": str(tree), "RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(["bash", str(REPO / "action" / "key.sh")], env={**env, "INPUT_COMMAND": "validate"}, cwd=checkout, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert dict(line.split("=", 1) for line in output.read_text().splitlines()) == first
