"""Shared fixtures: a writable copy of the example project, and a CLI runner."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import EXAMPLES

from reprogate.cli import main

pytest_plugins = ("support.gate",)  # the GitHub stand-in's fixtures


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
