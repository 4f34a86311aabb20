"""A script configured by its flags: `reprogate init --entrypoint "python train.py --lr 0.01 ..."`.

The argparse example (examples/argparse) has no configuration file. init pins the script's
arguments as the configuration (job.config hash_of: argv) and the record states the exact
command; a changed flag is a configuration change, named flag by flag by validate and by the
rebuild's `config` stage, before anything runs; a changed script is still the tree's change.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import git
from support.examples import example_repository, initialized, load_record, stage, verdict

from reprogate.runtime.entry_command import arguments_digest

Cli = Callable[..., Result]
ENTRYPOINT = "python train.py --lr 0.01 --steps 6"


def _set_entrypoint(repo: Path, old: str, new: str) -> None:
    path = repo / "records" / "train.yaml"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example initialized once (two seeds) and committed; each test works on a copy."""
    return initialized(tmp_path_factory.mktemp("argparse"), "argparse", "--entrypoint", ENTRYPOINT, "--seeds", "1,2")


def _copy(reference: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(reference, tmp_path / "repo", symlinks=True))


def test_flags_are_the_configuration_and_a_changed_flag_fails_at_config(cli: Cli, reference: Path, tmp_path: Path) -> None:
    repo = _copy(reference, tmp_path)
    record = load_record(repo)
    assert record["job"]["entrypoint"] == ["python", "train.py", "--lr", "0.01", "--steps", "6"], "the record states the exact argv"
    assert record["job"]["config"] == {"hash_of": "argv", "argv": ["--lr", "0.01", "--steps", "6"], "hash": arguments_digest(["--lr", "0.01", "--steps", "6"])}
    assert "path" not in record["job"]["config"], "no configuration file was guessed (no `--config main.py`)"
    passed = cli("rebuild", "records/train.yaml", "--out", str(tmp_path / "pass"), cwd=repo)
    assert passed.exit_code == 0, passed.output
    assert "the entrypoint's arguments are the pinned ones (--lr 0.01 --steps 6)" in stage(verdict(tmp_path / "pass"), "config")["detail"]

    _set_entrypoint(repo, '  - --lr\n  - "0.01"\n', '  - --lr\n  - "0.03"\n')  # the entrypoint only: job.config.argv still says 0.01
    checked = cli("validate", "records/train.yaml", cwd=repo)
    assert checked.exit_code == 1 and "--lr 0.01 -> 0.03" in checked.output, checked.output
    failed = cli("rebuild", "records/train.yaml", "--out", str(tmp_path / "flag"), cwd=repo)
    assert failed.exit_code == 1, failed.output
    found = verdict(tmp_path / "flag")
    assert found["diagnosis"] == "config" and "--lr 0.01 -> 0.03" in stage(found, "config")["detail"]
    assert stage(found, "run")["status"] == "not-run", "nothing trained: the flag was diagnosed before the run"


def test_a_pull_request_that_repins_its_own_flag_is_judged_by_the_base(cli: Cli, reference: Path, tmp_path: Path) -> None:
    """The head changes --lr and re-pins job.config to match (a valid record on its own); with
    --contract-from the base's configuration judges, so the rebuild fails at config, naming the flag."""
    repo = _copy(reference, tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    record = repo / "records" / "train.yaml"
    text = record.read_text().replace('  - --lr\n  - "0.01"\n', '  - --lr\n  - "0.03"\n').replace('    - --lr\n    - "0.01"\n', '    - --lr\n    - "0.03"\n')
    text = text.replace(arguments_digest(["--lr", "0.01", "--steps", "6"]), arguments_digest(["--lr", "0.03", "--steps", "6"]))
    record.write_text(text)
    assert cli("validate", "records/train.yaml", cwd=repo).exit_code == 0, "the head's record agrees with itself"
    judged = cli("rebuild", "records/train.yaml", "--contract-from", base, "--out", str(tmp_path / "pr"), cwd=repo)
    assert judged.exit_code == 1, judged.output
    found = verdict(tmp_path / "pr")
    assert found["diagnosis"] == "config" and "--lr 0.01 -> 0.03" in stage(found, "config")["detail"]


def test_a_changed_script_is_the_trees_change_not_the_configurations(cli: Cli, reference: Path, tmp_path: Path) -> None:
    """No configuration file is pinned, so nothing inside the project folder is exempt from its
    tree: a changed default in train.py fails at artifacts, naming the file."""
    repo = _copy(reference, tmp_path)
    script = repo / "train" / "train.py"
    script.write_text(script.read_text().replace('"--hidden", type=int, default=64', '"--hidden", type=int, default=65'))
    failed = cli("rebuild", "records/train.yaml", "--out", str(tmp_path / "code"), cwd=repo)
    assert failed.exit_code == 1, failed.output
    found = verdict(tmp_path / "code")
    assert found["diagnosis"] == "artifacts" and "train.py" in stage(found, "artifacts")["detail"]


def test_commands_whose_configuration_cannot_be_told_are_refused(cli: Cli, tmp_path: Path) -> None:
    repo = example_repository(tmp_path, "argparse")
    cases = {
        "bash run.sh --lr 0.01": "not a Python or torchrun command",
        "torchrun --nproc-per-node auto train.py --lr 0.01": "must be numbers",
        "torchrun --nproc-per-node 2 --nnodes 2 train.py": "--nnodes 2",
        "torchrun --nproc-per-node": "torchrun --nproc-per-node",
    }
    for entrypoint, said in cases.items():
        refused = cli("init", "train", "--entrypoint", entrypoint, "-y", cwd=repo)
        assert refused.exit_code == 2 and said in refused.output, (entrypoint, refused.output)
    contradicted = cli("init", "train", "--entrypoint", "torchrun --nproc-per-node 2 train.py", "--world-size", "3", "-y", cwd=repo)
    assert contradicted.exit_code == 2 and "torchrun starts 2 rank(s)" in contradicted.output, contradicted.output
    assert not (repo / "records").exists(), "nothing was written"
