"""Progress on long steps: a line on stderr at a terminal (a real pseudo-terminal here) for the
rebuild's stages, init's reference runs and manifest hashing; none with --quiet, --format github or
when stderr is no terminal. What the command prints on stdout is the same either way."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import EXAMPLES, git

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")


def run_at_terminal(argv: list[str], cwd: Path, tty: bool = True) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m reprogate ARGV` with stderr on a pseudo-terminal (or a pipe)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "REPROGATE_"))}
    if not tty:
        done = subprocess.run([sys.executable, "-m", "reprogate", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
        return done.returncode, done.stdout, done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "reprogate", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    said = bytearray()
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            said += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=600)
    os.close(leader)
    return code, out, said.decode("utf-8", "replace")


@pytest.fixture
def failing_after_preflight(project: Path) -> Path:
    """The tiny example with one shard's byte flipped: the rebuild proves its ranks (seconds), then fails at dataset."""
    shard = project / "tiny" / "data" / "shard-002.txt"
    blob = bytearray(shard.read_bytes())
    blob[1000] ^= 0x01
    shard.write_bytes(bytes(blob))
    return project


def test_a_rebuild_at_a_terminal_says_which_stage_is_running(failing_after_preflight: Path, tmp_path: Path) -> None:
    project = failing_after_preflight
    code, out, err = run_at_terminal(["rebuild", "tiny/records/tiny.yaml", "--out", str(tmp_path / "a")], project)
    assert code == 1, out + err
    assert "rebuild: preflight, starting the ranks and proving devices and collective 0:0" in err, err
    assert "\x1b[K" in err, "the line is redrawn in place and cleared"
    quiet = run_at_terminal(["rebuild", "tiny/records/tiny.yaml", "--out", str(tmp_path / "b"), "--quiet"], project)
    github = run_at_terminal(["rebuild", "tiny/records/tiny.yaml", "--out", str(tmp_path / "c"), "--format", "github"], project)
    piped = run_at_terminal(["rebuild", "tiny/records/tiny.yaml", "--out", str(tmp_path / "d")], project, tty=False)
    for name, (done, _, said) in {"--quiet": quiet, "--format github": github, "no terminal": piped}.items():
        assert done == 1 and "rebuild: preflight" not in said and "\x1b[K" not in said, (name, said)

    def stages(text: str) -> list[list[str]]:
        return [line.split()[:2] for line in text.splitlines() if line.startswith("  ") and len(line.split()) > 2]

    assert out.splitlines()[0] == piped[1].splitlines()[0] and stages(out) == stages(piped[1]), "stdout is the same with and without the line"


def test_init_at_a_terminal_shows_the_manifest_hashing_and_the_reference_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for part in ("project", "config", "data"):
        shutil.copytree(EXAMPLES / "tiny" / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "data" / "tiny.manifest.yaml").unlink()  # init builds it, hashing every shard
    config = repo / "config" / "tiny.yaml"
    config.write_text(config.read_text().replace("manifest: tiny.manifest.yaml", "manifest: data.manifest.yaml"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project")
    code, out, err = run_at_terminal(["init", "project", "--seeds", "1", "--yes"], repo)
    assert code == 0, out + err
    assert "hashing: " in err and "init: run, running 1 reference seed(s) on every rank 0:0" in err, err
