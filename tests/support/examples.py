"""The integration examples as a new user's repositories, and the frameworks they need (tests/integrations).

Each example under examples/ (transformers, lightning, argparse) is laid out as a repository of
its own: `train/` (the project folder) and `.reprogate.yaml`. A test copies those two into a
fresh git repository and runs `reprogate init` and `reprogate rebuild` on it, as a user would, so
nothing depends on the machine that made the committed records.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from reprogate.cli import main
from support import EXAMPLES, git


def require_module(name: str) -> None:
    """A framework the test runs for real: the dev group installs it, so under CI its absence fails."""
    if importlib.util.find_spec(name) is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is not installed under CI=true; the dev group in pyproject.toml must have it")
    pytest.skip(f"{name} not installed (pip install -e . --group dev)")


def example_repository(tmp_path: Path, example: str) -> Path:
    """examples/EXAMPLE's project folder and configuration, committed in a fresh repository."""
    repo = tmp_path / example
    repo.mkdir()
    shutil.copytree(EXAMPLES / example / "train", repo / "train", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(EXAMPLES / example / ".reprogate.yaml", repo / ".reprogate.yaml")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project")
    return repo


def initialized(tmp_path: Path, example: str, *init_args: str) -> Path:
    """The example's repository after `reprogate init train INIT_ARGS -y`, record and reference
    committed: for a module's tests to share one reference run (each copies it)."""
    repo = example_repository(tmp_path, example)
    before = Path.cwd()
    os.chdir(repo)
    try:
        made = CliRunner().invoke(main, ["init", "train", *init_args, "-y"], catch_exceptions=False)
    finally:
        os.chdir(before)
    assert made.exit_code == 0, made.output
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the reference")
    return repo


def load_record(repo: Path) -> dict[str, Any]:
    return yaml.safe_load((repo / "records" / "train.yaml").read_text())


def reference_events(repo: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (repo / "reference" / "train" / "trace.jsonl").read_text().splitlines()]


def verdict(out: Path) -> dict[str, Any]:
    return json.loads((out / "verdict.json").read_text())


def stage(found: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in found["stages"] if s["name"] == name)


def repin_flag(repo: Path, flag: str, old: str, new: str) -> None:
    """What a pull request that changes a flag and re-pins it does to the record: the entrypoint,
    job.config.argv and its hash all say `new` (a record that agrees with itself)."""
    from reprogate.core.yamlout import dump_yaml
    from reprogate.runtime.entry_command import arguments_digest

    path = repo / "records" / "train.yaml"
    data = yaml.safe_load(path.read_text())
    entry, argv = data["job"]["entrypoint"], data["job"]["config"]["argv"]
    entry[entry.index(flag) + 1] = argv[argv.index(flag) + 1] = new
    assert old in path.read_text()
    data["job"]["config"]["hash"] = arguments_digest(argv)
    path.write_text(dump_yaml(data))  # reprogate's own writer: it quotes what YAML 1.2 would read as a number (1e-2)


def traced_steps(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "step"]
