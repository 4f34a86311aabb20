"""Shared fixtures: a writable copy of the example project, and a CLI runner."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from click.testing import CliRunner, Result

from reprogate.cli import main
from reprogate.documents import load_text

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of examples/ that a test may change; its records all validate as copied."""
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """Run `reprogate ARGS` in-process, from a given folder."""

    def run(*args: str, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return run


def edit_record(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Load a record, let the test change it, write it back as YAML (comments are not kept)."""
    data = load_text(path.read_text(), str(path)).data
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def require_tool(name: str) -> str:
    """The path of a command-line tool the test needs. A developer's machine without it skips;
    CI (CI=true) installs every such tool, so there a missing one is a failure, never a skip."""
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if Path(found).exists():
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is missing under CI=true; .ci/run must install it")
    pytest.skip(f"{name} not installed")


GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; returns stdout (stripped)."""
    import subprocess

    require_tool("git")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, env={**os.environ, **GIT_ENV})
    return done.stdout.decode().strip()
