"""The flagship example rebuilds through the action on a fresh runner: action/run.sh with a fresh
venv that holds only reprogate's built wheel (with the rebuild extra: uv and the Docker SDK, no
torch), `command: rebuild`, `environment: candidate`, as the example rebuild workflow runs it.
The tiny record's reference ran in reprogate's own interpreter (README line 1 rebuilds it there);
a candidate rebuild makes a venv from the tree's lock file (torch's CPU build, numpy, PyYAML,
with hashes) and runs the two gloo ranks in it, sandboxed. Then the lock-bump drill: six==1.16.0
added to the lock, the candidate rebuild installs it, and its rebuild record says so.

uv installs from the local wheelhouse (tests/support/wheelhouse.py) through the runner's own uv
settings (UV_NO_INDEX, UV_FIND_LINKS), as a runner with a mirror would; nothing reaches an index."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from support import EXAMPLES, FIXTURES, REPO, git, require_tool, wheelhouse

LOCK = "tiny/requirements.txt"
BUMPED = FIXTURES / "tiny-lock-bump" / "requirements.txt"


@pytest.fixture(scope="module")
def action_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the action's install step makes on a fresh runner, from the built wheel instead of
    the checkout: `python3 -m venv` and `pip install WHEEL[rebuild]`."""
    root = tmp_path_factory.mktemp("action")
    dist = root / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("reprogate-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[rebuild]"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The runner's environment: uv pointed at the wheelhouse, one uv cache and one venv cache
    (the realizer's) for both rebuilds, nothing of this test session's own environment."""
    require_tool("uv")
    require_tool("bwrap")  # a candidate rebuild runs the pull request's code: only sandboxed
    require_tool("git")
    folder, why = wheelhouse.provide()
    if folder is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no wheelhouse under CI=true: {why}")
        pytest.skip(f"no wheelhouse: {why}")
    home = tmp_path_factory.mktemp("home")
    yield {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": str(folder),
        "UV_CACHE_DIR": str(tmp_path_factory.mktemp("uv-cache")),
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples as a checked-out repository (the workspace)."""
    root = tmp_path_factory.mktemp("workspace") / "project"
    shutil.copytree(EXAMPLES, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def rebuild_through_the_action(venv: Path, runner: dict[str, str], project: Path, tmp_path: Path, **inputs: str) -> tuple[int, str, dict[str, str]]:
    """action/run.sh as action.yml's no-token step runs it; (exit code, log, step outputs)."""
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    outputs, summary = tmp_path / "github-output", tmp_path / "step-summary"
    env = {
        **runner,
        "VENV": str(venv),
        "RUNNER_TEMP": str(temp),
        "GITHUB_WORKSPACE": str(project),
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
        "INPUT_COMMAND": "rebuild",
        "INPUT_RECORD": "tiny/records/tiny.yaml",
        "INPUT_ENVIRONMENT": "candidate",
        "INPUT_EXTRA_ARGS": f"--cache={tmp_path.parent / 'realized'}",
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    done = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=env, cwd=project, capture_output=True, text=True, timeout=1800)
    found = dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line) if outputs.exists() else {}
    return done.returncode, done.stdout + done.stderr, found


def test_the_action_venv_has_no_torch(action_venv: Path) -> None:
    """The reason the example needs a venv of its own: its `current` realizer would find no torch here."""
    done = subprocess.run([str(action_venv / "bin" / "python"), "-c", "import torch"], capture_output=True, text=True)
    assert done.returncode == 1 and "No module named 'torch'" in done.stderr
    assert (action_venv / "bin" / "uv").exists() and (action_venv / "bin" / "reprogate").exists()


def test_the_flagship_rebuilds_as_a_candidate_through_the_action(action_venv: Path, runner: dict[str, str], project: Path, tmp_path: Path) -> None:
    code, log, outputs = rebuild_through_the_action(action_venv, runner, project, tmp_path)
    assert code == 0, log[-6000:]
    assert outputs["verdict"] == "pass" and outputs["diagnosis"] == "", outputs
    out = Path(outputs["out-dir"])
    assert out.parent == tmp_path / "runner-temp", "a fresh folder under RUNNER_TEMP, never the checkout"
    verdict = json.loads((out / "verdict.json").read_text())
    environment = verdict["environment"]
    assert environment["requested"] == "candidate" and environment["realizer"] == "venv", environment
    assert "job.environment.candidate: venv" in json.dumps(environment)
    assert environment["lock_digest"] == "sha256:" + hashlib.sha256((project / LOCK).read_bytes()).hexdigest()
    assert [s["status"] for s in verdict["stages"]] == ["pass"] * 11
    record = yaml.safe_load((out / "rebuild-record.yaml").read_text())
    packages = record["software"]["packages"]
    assert packages["torch"] == "2.13.0+cpu" and "numpy" in packages and "pyyaml" in packages and "six" not in packages
    assert str(action_venv) not in json.dumps(record["software"]), "the ranks ran in the realized venv, not the action's"


def test_the_lock_bump_drill_installs_six_and_the_rebuild_record_says_so(action_venv: Path, runner: dict[str, str], project: Path, tmp_path: Path) -> None:
    """A pull request adds six==1.16.0 to the lock (locked with hashes by uv); the gate's rebuild
    (--contract-from the base, environment candidate) installs the tree's lock, not the pinned one."""
    base = git(project, "rev-parse", "HEAD")
    shutil.copy(BUMPED, project / LOCK)
    git(project, "commit", "-q", "-am", "lock: add six 1.16.0")
    drift = subprocess.run([str(action_venv / "bin" / "reprogate"), "validate", "tiny/records/tiny.yaml"], cwd=project, capture_output=True, text=True)
    assert drift.returncode == 0 and "drift" in (drift.stdout + drift.stderr), "the record's pin is environment drift now, not an invalid record"
    code, log, outputs = rebuild_through_the_action(action_venv, runner, project, tmp_path, base=base)
    assert code == 0, log[-6000:]
    assert outputs["verdict"] == "pass", outputs
    out = Path(outputs["out-dir"])
    verdict = json.loads((out / "verdict.json").read_text())
    bumped = "sha256:" + hashlib.sha256(BUMPED.read_bytes()).hexdigest()
    assert verdict["environment"]["lock_digest"] == bumped and verdict["environment"]["lock_from"] == "the checkout"
    record = yaml.safe_load((out / "rebuild-record.yaml").read_text())
    assert record["software"]["packages"]["six"] == "1.16.0", record["software"]["packages"]
    assert [entry["checksum"] for entry in record["source"]["lock_files"] if entry["path"] == LOCK] == [bumped]


def test_a_pull_request_cannot_opt_its_lock_change_out_of_the_venv(action_venv: Path, runner: dict[str, str], project: Path, tmp_path: Path) -> None:
    """The attack on this green: a pull request that changes the lock and also says
    `candidate: current`, so its rebuild would run in the action's interpreter and never install
    the lock. The base's job.environment judges (--contract-from, the gate's `base` input): the
    tree's lock is still made into a venv."""
    base = git(project, "rev-parse", "HEAD")
    record = project / "tiny" / "records" / "tiny.yaml"
    record.write_text(record.read_text().replace("    candidate: venv\n", "    candidate: current\n", 1))
    lock = project / LOCK
    lock.write_bytes(BUMPED.read_bytes() if lock.read_bytes() != BUMPED.read_bytes() else (EXAMPLES / LOCK).read_bytes())
    git(project, "commit", "-q", "-am", "lock change, and no venv for it")
    code, log, outputs = rebuild_through_the_action(action_venv, runner, project, tmp_path, base=base)
    assert code == 0, log[-6000:]
    verdict = json.loads((Path(outputs["out-dir"]) / "verdict.json").read_text())
    assert verdict["environment"]["realizer"] == "venv", verdict["environment"]
    assert verdict["environment"]["lock_digest"] == "sha256:" + hashlib.sha256(lock.read_bytes()).hexdigest()
