"""The core commands run where the POSIX-only parts are missing (Windows has no fcntl, resource,
termios, grp or pwd, and no O_NONBLOCK or O_NOFOLLOW): validate, detect, digest, interval, report
and gate --dry-run, each the real command line in a subprocess whose interpreter cannot import
them (tests/support/without_posix). The rebuild stays Linux-only and says so (exit 2).

These tests are `core`: .github/workflows/ci.yml runs them on macos-latest and windows-latest
too. They use the paths and line endings of the system they run on (records written with CRLF,
as a Windows editor leaves them), and git and Python only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import EXAMPLES, REPO, git
from support.verdicts import make_verdict

pytestmark = pytest.mark.core

WITHOUT_POSIX = REPO / "tests" / "support" / "without_posix"
NO_GITHUB = ("GITHUB_TOKEN", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")


def reprogate(*args: str, cwd: Path, platform: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m reprogate ARGS` with the POSIX-only modules unimportable."""
    env = {k: v for k, v in os.environ.items() if k not in NO_GITHUB}
    env["PYTHONPATH"] = os.pathsep.join([str(WITHOUT_POSIX), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["GITHUB_API_URL"] = "http://127.0.0.1:9"  # nothing listens: a request would fail the command
    env.pop("REPROGATE_TEST_PLATFORM", None)
    if platform:
        env["REPROGATE_TEST_PLATFORM"] = platform
    return subprocess.run([sys.executable, "-m", "reprogate", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def succeeded(done: subprocess.CompletedProcess[str], code: int = 0) -> str:
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal error" not in output, output
    assert done.returncode == code, output
    return output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The examples as a git repository, its records written with CRLF line endings."""
    root = tmp_path / "project"
    shutil.copytree(EXAMPLES, root)
    for record in [*(root / "records").glob("*.yaml"), *(root / "tiny" / "records").glob("*.yaml")]:
        record.write_bytes(record.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "core.autocrlf", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_the_blocker_blocks() -> None:
    """Without this, every test below would pass on Linux for the wrong reason."""
    env = {**os.environ, "PYTHONPATH": str(WITHOUT_POSIX)}
    for module in ("fcntl", "resource"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True, text=True)
        assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-c", "import os; print(hasattr(os, 'O_NONBLOCK'))"], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "False"


def test_validate_reads_records_with_crlf_without_fcntl(project: Path) -> None:
    output = succeeded(reprogate("validate", os.path.join("records"), os.path.join("tiny", "records"), cwd=project))
    assert "7 document(s) checked, 7 valid, 0 invalid" in output


def test_validate_still_finds_a_broken_record(project: Path) -> None:
    record = project / "records" / "drill.yaml"
    record.write_bytes(record.read_bytes().replace(b"level: statistical", b"level: nearly"))
    output = succeeded(reprogate("validate", str(record), cwd=project), code=1)
    assert "nearly" in output


def test_digest_names_what_the_record_pins(project: Path) -> None:
    output = succeeded(reprogate("digest", "--manifest", os.path.join("tiny", "data", "tiny.manifest.yaml"), cwd=project))
    pinned = next(line.split('"')[1] for line in (EXAMPLES / "tiny" / "records" / "tiny.yaml").read_text().splitlines() if "digest:" in line)
    assert pinned in output


def test_interval_recomputes_the_stored_interval(project: Path) -> None:
    """The interval the example stores is what `interval` computes from its seeds, on this OS."""
    record = project / "tiny" / "records" / "tiny.yaml"
    stored = yaml.safe_load(record.read_text(encoding="utf-8"))["contract"]["metric"]["interval"]
    record.write_text(record.read_text(encoding="utf-8").replace(f"low: {stored['low']}", "low: 0.0"), encoding="utf-8")
    assert yaml.safe_load(record.read_text(encoding="utf-8"))["contract"]["metric"]["interval"]["low"] == 0.0
    succeeded(reprogate("interval", str(record), cwd=project))
    again = yaml.safe_load(record.read_text(encoding="utf-8"))["contract"]["metric"]["interval"]
    assert (again["low"], again["high"]) == (stored["low"], stored["high"]), (stored, again)


def test_detect_sees_a_lock_file_change(project: Path) -> None:
    base = git(project, "rev-parse", "HEAD")
    (project / "requirements.txt").write_text((project / "requirements.txt").read_text() + "six==1.16.0\n", encoding="utf-8")
    git(project, "commit", "-q", "-am", "bump")
    output = succeeded(reprogate("detect", "--base", base, "--head", "HEAD", "--format", "json", cwd=project))
    report = json.loads(output[output.index("{") : output.rindex("}") + 1])
    assert report["rebuild_required"] is True and report["layers"] == ["framework"], report
    assert [(c["subject"], c["new"]) for c in report["changes"]["framework"]] == [("six", "1.16.0")]


def test_report_renders_a_verdict(tmp_path: Path) -> None:
    verdict = tmp_path / "verdict.json"
    verdict.write_text(json.dumps(make_verdict("fail", diagnosis="steps")), encoding="utf-8")
    output = succeeded(reprogate("report", str(verdict), cwd=tmp_path), code=1)  # the verdict's own code
    assert "Reproduction failed" in output and "**steps**" in output


def test_gate_dry_run_judges_an_event(project: Path, tmp_path: Path) -> None:
    base = git(project, "rev-parse", "HEAD")
    (project / "NOTES.md").write_text("docs\n", encoding="utf-8")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "docs")
    head = git(project, "rev-parse", "HEAD")
    event = {
        "action": "opened",
        "number": 2,
        "repository": {"full_name": "octo/repro", "default_branch": "main"},
        "sender": {"login": "octocat"},
        "pull_request": {
            "number": 2,
            "labels": [],
            "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/repro"}},
            "head": {"sha": head, "ref": "docs", "repo": {"full_name": "octo/repro"}},
        },
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    output = succeeded(reprogate("gate", "--repo", str(project), "--dry-run", str(path), "--format", "text", cwd=project))
    assert "would post:" in output and "success" in output, output


def test_rebuild_says_it_is_linux_only(project: Path) -> None:
    done = reprogate("rebuild", os.path.join("tiny", "records", "tiny.yaml"), cwd=project, platform="darwin")
    output = succeeded(done, code=2)
    assert "reprogate rebuild runs on Linux only (this system is darwin)" in output
    assert not list(Path(project).glob("**/verdict.json")), "nothing was started"


def test_ci_runs_every_core_module_on_macos_and_windows() -> None:
    """The core job's file list is exactly the modules that say `pytestmark = pytest.mark.core`."""
    import ast

    from reprogate.core.documents import load_document

    marked = set()
    for module in sorted((REPO / "tests").rglob("test_*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
                if "pytest.mark.core" in ast.unparse(node.value):
                    marked.add(module.relative_to(REPO).as_posix())
    job = load_document(REPO / ".github" / "workflows" / "ci.yml").data["jobs"]["core"]
    assert set(job["strategy"]["matrix"]["os"]) == {"macos-latest", "windows-latest"}
    script = next(step["run"] for step in job["steps"] if "run" in step)
    command = next(line for line in script.splitlines() if "pytest -q -m core" in line)
    listed = {word for word in command.split() if word.startswith("tests/")}
    assert marked and listed == marked
