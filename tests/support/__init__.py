"""Helpers the tests share: where the repository is, git with a fixed identity, tools that CI
installs, and editing a record in place."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from reprogate.core.documents import load_text

REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"


def edit_record(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Load a record, let the test change it, write it back as YAML (comments are not kept)."""
    data = load_text(path.read_text(), str(path)).data
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def break_torch(project: Path, record: Path) -> None:
    """A torch that fails to import on the ranks: a `torch` package that raises, put inside the
    example's pinned project folder (re-pinned by its new tree id, so the rebuild copies it into
    the work folder, the only part of the checkout the ranks' sandbox shows) and put first on the
    ranks' import path by a relative PYTHONPATH (the ranks start in that folder)."""
    from reprogate.core.gittree import tree_id

    folder = project / "tiny" / "project"
    shadow = folder / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('this torch is broken on purpose')\n")

    def change(data: dict[str, Any]) -> None:
        data["source"]["tree"] = tree_id(folder)
        data["execution"].setdefault("env", {}).update(PYTHONPATH="shadow")

    edit_record(project / record, change)


def record_copies(project: Path, count: int, invalid: set[int] | frozenset[int] = frozenset()) -> Path:
    """`project/many/` holding `count` copies of the example's drill record, each named
    run-NNN; those in `invalid` break the schema (an unknown contract level)."""
    template = (project / "records" / "drill.yaml").read_text()
    many = project / "many"
    many.mkdir()
    for i in range(count):
        text = template.replace("name: decoder-7b-d77-c19-ref", f"name: run-{i:03d}")
        (many / f"run-{i:03d}.yaml").write_text(text.replace("level: statistical", "level: nearly") if i in invalid else text)
    return many


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
    require_tool("git")
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, env={**os.environ, **GIT_ENV})
    return done.stdout.decode().strip()
