"""Environment drift: a lock file or recipe that no longer matches its pin is reported as its own
kind of finding (a notice) in every output format, and fails only under --strict; reference
artifacts still make a record invalid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)

Cli = Callable[..., Result]


def bump(project: Path) -> None:
    lock = project / "requirements.txt"
    lock.write_text(lock.read_text() + "six==1.17.0\n")


def test_text_lists_drift_and_passes(cli: Cli, project: Path) -> None:
    bump(project)
    result = cli("validate", "records/", cwd=project)
    assert result.exit_code == 0, result.output
    assert (
        "records/bitwise.yaml:28:7  source.lock_files[0].checksum  notice: environment drift: requirements.txt changed since the reference run" in result.output
    )
    assert "3 environment drift" in result.output


def test_strict_fails_on_drift(cli: Cli, project: Path) -> None:
    bump(project)
    assert cli("validate", "--strict", "records/", cwd=project).exit_code == 1


def test_json_has_a_drift_list(cli: Cli, project: Path) -> None:
    bump(project)
    result = cli("validate", "--format", "json", "records/", cwd=project)
    payload = json.loads(result.output)
    assert payload["valid"] is True and payload["exit_code"] == 0
    assert sorted(d["file"] for d in payload["drift"]) == ["records/bitwise.yaml", "records/drill.yaml", "records/startup.yaml"]
    # the illustrative records cannot be rebuilt as they are (a hand-written lock, no realizer named): warnings, not drift
    illustrative = {"not-rebuildable", "realizer-implicit", "lock-not-resolved"}
    assert {f["code"] for entry in payload["files"] for f in entry["findings"]} - illustrative == {"environment-drift"}


def test_github_output_annotates_drift_as_a_notice(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    bump(project)
    result = cli("validate", "--format", "github", "records/bitwise.yaml", cwd=project)
    assert result.exit_code == 0
    assert any(line.startswith("::notice file=records/bitwise.yaml,line=28,col=7,") for line in result.output.splitlines())
    outputs = (tmp_path / "outputs").read_text()
    assert "valid=true\n" in outputs and "drift=records/bitwise.yaml:source.lock_files[0].checksum\n" in outputs
    assert "| notice |" in (tmp_path / "summary.md").read_text()


def test_no_drift_gives_an_empty_output(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    assert cli("validate", "--format", "github", "records/", cwd=project).exit_code == 0
    assert "drift=\n" in (tmp_path / "outputs").read_text()


def test_a_changed_configuration_is_still_invalid(cli: Cli, project: Path) -> None:
    config = project / "config" / "c19.yaml"
    config.write_text(config.read_text() + "extra: 1\n")
    result = cli("validate", "records/drill.yaml", cwd=project)
    assert result.exit_code == 1 and "canonical-mismatch" not in result.output and "does not match the record" in result.output


def test_a_trace_left_by_a_run_by_hand_is_a_warning_not_a_new_reference(cli: Cli, project: Path) -> None:
    """Running the example's train.py by hand (no REPROGATE_TRACE_DIR) leaves trace-rank0.jsonl in
    the project folder; validate used to call that changed code and ask for a new reference."""
    import os
    import subprocess
    import sys

    from support import GIT_ENV, git

    pytest.importorskip("torch")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the examples")
    folder = project / "tiny" / "project"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROGATE_")} | {"REPROGATE_MAX_STEPS": "2"}
    subprocess.run([sys.executable, "train.py", "--config", "../config/tiny.yaml"], cwd=folder, env=env, check=True, capture_output=True, timeout=300)
    assert (folder / "trace-rank0.jsonl").exists()
    result = cli("validate", "tiny/records/tiny.yaml", cwd=project)
    assert result.exit_code == 0, result.output
    assert "warning: tiny/project holds trace-rank0.jsonl, not committed: a step trace a run by hand wrote" in result.output
    assert "new reference" not in result.output and "rm tiny/project/trace-rank0.jsonl" in result.output
    # committed, it is part of the tree the record pins: a change like any other
    git(project, "add", "tiny/project/trace-rank0.jsonl")
    subprocess.run(["git", "commit", "-qm", "a trace"], cwd=project, env={**os.environ, **GIT_ENV}, check=True)
    again = cli("validate", "tiny/records/tiny.yaml", cwd=project)
    assert again.exit_code == 1 and "added: trace-rank0.jsonl" in again.output


def test_a_changed_configuration_names_the_key_that_changed(cli: Cli, project: Path) -> None:
    """The README's own drill (lr 0.01 -> 0.011): validate named two digests; it names the key,
    found by the pinned version in the repository's history, as the rebuild's config stage does."""
    from support import git

    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "the examples")
    config = project / "tiny" / "config" / "tiny.yaml"
    config.write_text(config.read_text().replace("lr: 0.01\n", "lr: 0.011\n"))
    result = cli("validate", "tiny/records/tiny.yaml", cwd=project)
    assert result.exit_code == 1 and "configuration tiny/config/tiny.yaml does not match the record: train.lr: 0.01 -> 0.011" in result.output
