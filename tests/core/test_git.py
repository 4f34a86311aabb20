"""core.git: the one git runner reads the folder it is given, whatever the caller's environment
says, and a git that hangs or floods ends as a GitError (exit 3), not a stuck or swollen check."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support import git

from reprogate.core.diagnostics import ExitCode
from reprogate.core.git import GitError, git_env, run_git


def _repo(path: Path, content: str) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    (path / "file.txt").write_text(content)
    git(path, "add", "file.txt")
    git(path, "commit", "-q", "-m", content)
    return path


def test_an_inherited_git_dir_does_not_redirect_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, other = _repo(tmp_path / "mine", "mine"), _repo(tmp_path / "other", "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # as a hook, or `git rebase --exec`, would leave it
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    assert run_git(mine, "show", "HEAD:file.txt").stdout == b"mine"
    assert Path(run_git(mine, "rev-parse", "--show-toplevel").stdout.decode().strip()).resolve() == mine.resolve()
    assert not any(name.startswith("GIT_") for name in git_env())


def test_a_variable_the_caller_sets_reaches_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path / "repo", "x")
    monkeypatch.setenv("GIT_INDEX_FILE", "/nonexistent/inherited")
    index = tmp_path / "copy-of-index"
    index.write_bytes((repo / ".git" / "index").read_bytes())
    path = run_git(repo, "rev-parse", "--git-path", "index", env={"GIT_INDEX_FILE": str(index)}).stdout.decode().strip()
    assert Path(path) == index
    assert git_env({"GIT_INDEX_FILE": "x"})["GIT_INDEX_FILE"] == "x"


def test_a_git_that_hangs_is_killed_at_its_time_limit(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "x")
    started = time.monotonic()
    with pytest.raises(GitError, match=r"git hang did not finish within 0.5 s") as caught:
        run_git(repo, "-c", "alias.hang=!sleep 30", "hang", timeout=0.5)  # the shell git starts holds the pipe too
    assert time.monotonic() - started < 10
    assert caught.value.failure == "timeout" and caught.value.exit_code == ExitCode.INFRA


def test_a_failing_git_says_what_git_said(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "x")
    with pytest.raises(GitError) as caught:
        run_git(repo, "rev-parse", "--verify", "no-such-branch")
    assert caught.value.failure == "exit" and caught.value.returncode not in (None, 0)
    assert run_git(repo, "rev-parse", "--verify", "no-such-branch", check=False).returncode != 0


def test_output_is_bounded_or_streamed(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "y" * 10_000)
    with pytest.raises(GitError, match="more than 100 bytes") as caught:
        run_git(repo, "show", "HEAD:file.txt", limit=100)
    assert caught.value.failure == "output"
    seen: list[bytes] = []
    assert run_git(repo, "show", "HEAD:file.txt", limit=100, sink=seen.append).stdout == b""
    assert b"".join(seen) == b"y" * 10_000


def test_input_reaches_git(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", "z")
    blob = run_git(repo, "rev-parse", "HEAD:file.txt").stdout.strip()
    out = run_git(repo, "cat-file", "--batch", input=blob + b"\n").stdout
    assert out.endswith(b"\nz\n") and out.startswith(blob)


def test_a_missing_git_is_a_git_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError, match="git is not installed") as caught:
        run_git(tmp_path, "status")
    assert caught.value.failure == "missing"
