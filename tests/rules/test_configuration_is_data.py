"""A configuration written as code (a Python file exec'd by a configurator, as nanoGPT's) read as
YAML is one scalar: its hash pins the text, not the values the run used. `validate` warns of
such a pin in an existing record (its meaning is kept); `init` pins instead what the code
computed, as the script hands it to Tracer(config=...) (job.config.hash_of: trace), and the
rebuild compares every rank's after the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from reprogate.core.canonical import canonical_digest
from reprogate.core.documents import load_document

Cli = Callable[..., Result]
CODE = "batch_size = 12\nlearning_rate = 6e-4  # exec'd by configurator.py\n"


def test_a_record_pinning_a_python_configuration_is_warned_and_keeps_its_meaning(cli: Cli, project: Path) -> None:
    config = project / "tiny" / "config" / "train_tiny.py"
    config.write_text(CODE)
    pinned = canonical_digest(load_document(config).data)
    assert isinstance(load_document(config).data, str), "read as YAML, the code is one scalar"
    record = project / "tiny" / "records" / "tiny.yaml"
    text = record.read_text()
    old_hash = text.split("hash: ", 1)[1].split("\n", 1)[0]
    record.write_text(text.replace("path: tiny/config/tiny.yaml", "path: tiny/config/train_tiny.py").replace(f"hash: {old_hash}", f'hash: "{pinned}"'))
    result = cli("validate", "--format", "json", str(record), cwd=project)
    payload = json.loads(result.output)
    found = [f for entry in payload["files"] for f in entry["findings"] if f["code"] == "configuration-not-data"]
    # (the example's reference trace says the run read the YAML configuration: trace-meta-config fails the record, as it should)
    assert len(found) == 1 and found[0]["severity"] == "warning", result.output
    assert found[0]["field"] == "job.config.path" and "it reads as one str" in found[0]["message"] and "Tracer(config=...)" in found[0]["hint"]
    assert not [f for entry in payload["files"] for f in entry["findings"] if f["code"] == "configuration-mismatch"], "the pin itself still holds"


PY_CONFIG = """\
# The configuration as code, as nanoGPT's config/*.py: train.py executes this file, and the values
# it computes (here: from the environment, as a configurator's overrides) are what the run uses.
import os

steps = 2 * 15
config = {
    "model": {"context": 8, "embed": 16, "hidden": 64},
    "train": {"steps": steps, "batch_per_rank": 64, "lr": float(os.environ.get("TINY_LR", "0.01")), "weight_decay": 0.0},
    "data": {
        "folder": "../data",
        "manifest": "tiny.manifest.yaml",
        "shards": ["shard-000.txt", "shard-001.txt", "shard-002.txt", "shard-003.txt"],
        "valid": "valid.txt",
        "vocabulary": "vocab.json",
        "valid_examples": 2048,
    },
    "trace": {"every": 1, "tensors": ["head.weight", "embed.weight"]},
}
"""
EXEC_CONFIG = """\
    if args.config.endswith(".py"):  # a configuration written as code (nanoGPT's configurator)
        scope = {"__file__": args.config}
        exec(Path(args.config).read_text(), scope)
        config = scope["config"]
    else:
        config = yaml.safe_load(Path(args.config).read_text())
"""


def code_config_repository(tmp_path: Path) -> Path:
    """The tiny example as a project whose configuration is a Python file its script executes."""
    import shutil

    from support import EXAMPLES, git

    repo = tmp_path / "repo"
    for part in ("project", "config", "data"):
        shutil.copytree(EXAMPLES / "tiny" / part, repo / part)
    (repo / "config" / "train.py").write_text(PY_CONFIG)
    train = repo / "project" / "train.py"
    plain = "    config = yaml.safe_load(Path(args.config).read_text())\n"
    assert plain in train.read_text()
    train.write_text(train.read_text().replace(plain, EXEC_CONFIG))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project")
    return repo


def test_init_pins_a_configuration_written_as_code_by_what_it_computed_and_the_rebuild_holds_it(cli: Cli, tmp_path: Path) -> None:
    """init runs the reference and pins the digest every rank handed Tracer(config=...) (and the
    code's bytes); validate agrees; a rebuild passes; a change of what the code reads, with the
    code's bytes the same, fails the rebuild at `run`, naming the configuration; a change of the
    code itself fails at `config`, before anything runs."""
    from support import git

    from reprogate.core.canonical import file_digest

    repo = code_config_repository(tmp_path)
    entry = "python train.py --config ../config/train.py"
    made = cli("init", "project", "--config", "../config/train.py", "--entrypoint", entry, "--seeds", "1", "--level", "bitwise", cwd=repo)
    assert made.exit_code == 0, made.output
    assert "config/train.py is code" in made.output
    import yaml

    record = yaml.safe_load((repo / "records" / "project.yaml").read_text())
    metas = [json.loads(line) for line in (repo / record["reference"]["trace"]["path"]).read_text().splitlines() if '"meta"' in line]
    assert record["job"]["config"] == {
        "path": "config/train.py",
        "hash": metas[0]["config_digest"],
        "hash_of": "trace",
        "checksum": file_digest(repo / "config" / "train.py"),
    }
    assert record["contract"]["steps"]["count"] == 30, "the steps the code computed ran"
    checked = cli("validate", "--format", "json", "records/project.yaml", cwd=repo)
    codes = {f["code"] for entry in json.loads(checked.output)["files"] for f in entry["findings"]}
    assert checked.exit_code == 0 and "configuration-not-data" not in codes and "trace-meta-config" not in codes, checked.output
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the reference record")
    passed = cli("rebuild", "records/project.yaml", "--out", str(tmp_path / "pass"), cwd=repo)
    assert passed.exit_code == 0, passed.output

    path = repo / "records" / "project.yaml"
    path.write_text(path.read_text().replace("execution:\n", "execution:\n  env: {TINY_LR: '0.02'}\n", 1))
    git(repo, "commit", "-qam", "what the code computes changes; its bytes do not")
    read = cli("rebuild", "records/project.yaml", "--format", "json", "--out", str(tmp_path / "read"), cwd=repo)
    verdict = json.loads((tmp_path / "read" / "verdict.json").read_text())
    assert read.exit_code == 1 and verdict["diagnosis"] == "run", read.output
    failed = next(s for s in verdict["stages"] if s["name"] == "run")
    assert "configuration config/train.py (code) computed other values" in failed["detail"] and record["job"]["config"]["hash"] in failed["detail"]

    code = repo / "config" / "train.py"
    code.write_text(code.read_text().replace("2 * 15", "2 * 16"))
    git(repo, "commit", "-qam", "the code changes")
    changed = cli("rebuild", "records/project.yaml", "--out", str(tmp_path / "code"), cwd=repo)
    verdict = json.loads((tmp_path / "code" / "verdict.json").read_text())
    assert changed.exit_code == 1 and verdict["diagnosis"] == "config", changed.output
    assert next(s for s in verdict["stages"] if s["name"] == "run")["status"] == "not-run"


def test_init_refuses_code_that_hands_the_tracer_no_configuration(cli: Cli, tmp_path: Path) -> None:
    repo = code_config_repository(tmp_path)
    train = repo / "project" / "train.py"
    train.write_text(train.read_text().replace("config=config, ", ""))
    from support import git

    git(repo, "commit", "-qam", "no config to the tracer")
    entry = "python train.py --config ../config/train.py"
    result = cli("init", "project", "--config", "../config/train.py", "--entrypoint", entry, "--seeds", "1", cwd=repo)
    assert result.exit_code == 2, result.output
    assert "config/train.py is code, and the reference run handed Tracer no configuration" in result.output and "Tracer(config=" in result.output
    assert not (repo / "records").exists() and not (repo / "reference").exists(), "nothing is left written"


def test_init_refuses_a_data_configuration_that_is_one_scalar(cli: Cli, tmp_path: Path) -> None:
    repo = code_config_repository(tmp_path)
    (repo / "config" / "scalar.yaml").write_text("just a string\n")
    result = cli("init", "project", "--config", "../config/scalar.yaml", "--seeds", "1", cwd=repo)
    assert result.exit_code == 2 and "config/scalar.yaml is not a mapping or a list (it reads as one str)" in result.output, result.output
    assert "Tracer(config=...)" in result.output and "hash_of: trace" in result.output
    assert not (repo / "records").exists() and not (repo / "reference").exists(), "refused before anything ran or was written"


def test_init_names_a_configuration_or_data_folder_that_is_not_there(cli: Cli, tmp_path: Path) -> None:
    """--config and --data resolve against the project first, so click no longer checks them
    against the current folder: init itself refuses, naming what it looked for."""
    import shutil

    from support import EXAMPLES, git

    repo = tmp_path / "repo"
    for part in ("project", "config", "data"):
        shutil.copytree(EXAMPLES / "tiny" / part, repo / part)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project")
    missing = cli("init", "project", "--config", "nope.yaml", cwd=repo)
    assert missing.exit_code == 2 and "--config" in missing.output and "nope.yaml: not a file inside the repository" in missing.output, missing.output
    no_data = cli("init", "project", "--data", "nodata", cwd=repo)
    assert no_data.exit_code == 2 and "--data" in no_data.output and "nodata: not a folder inside the repository" in no_data.output, no_data.output
    assert "Traceback" not in missing.output + no_data.output


def test_a_configuration_pinned_from_the_trace_needs_a_trace_that_records_it() -> None:
    from reprogate.core.record import Job, JobConfig, RunRecord
    from reprogate.rules.trace_meta import reference_disagreements
    from reprogate.runtime.trace import MetaEvent

    pinned = "canonical-v1:" + "0" * 64
    data = RunRecord(job=Job(("python", "c.py"), JobConfig(pinned, "trace", "c.py")))
    silent = reference_disagreements(data, [MetaEvent(0, config_digest=pinned), MetaEvent(1)])
    assert [(d.code, d.path) for d in silent] == [("trace-meta-config", ("job", "config", "hash_of"))] and "rank 1" in silent[0].message
    other = reference_disagreements(data, [MetaEvent(0, config_digest="canonical-v1:" + "1" * 64)])
    assert [d.code for d in other] == ["trace-meta-config"]
    file_form = RunRecord(job=Job(("python", "c.py"), JobConfig(pinned, path="c.yaml")))
    assert reference_disagreements(file_form, [MetaEvent(0)]) == [], "a data configuration's meta may say nothing"


def test_init_hands_the_script_the_configuration_it_pins(cli: Cli, tmp_path: Path) -> None:
    """`init --config ../config/train.py` without --entrypoint: the entrypoint init made passed the
    configuration it had found (../config/tiny.yaml) while the record pinned train.py, a file the
    run never read. The entrypoint now names the pinned file."""
    import yaml

    repo = code_config_repository(tmp_path)
    made = cli("init", "project", "--config", "../config/train.py", "--seeds", "1", "--level", "bitwise", cwd=repo)
    assert made.exit_code == 0, made.output
    record = yaml.safe_load((repo / "records" / "project.yaml").read_text())
    assert record["job"]["entrypoint"] == ["python", "train.py", "--config", "../config/train.py"]
    assert record["contract"]["steps"]["count"] == 30, "the steps train.py computes ran, not tiny.yaml's 80"


def test_a_code_configuration_an_entrypoint_never_names_is_refused_with_the_line_that_would(tmp_path: Path) -> None:
    """nanoGPT's train.py takes its config/*.py as a positional argument (configurator.py), so the
    entrypoint init makes up (`python train.py`) never hands it over."""
    from reprogate.core.errors import UsageError
    from reprogate.init.command import ConfigPin, code_config_passed

    project = tmp_path / "repo" / "nanogpt"
    (tmp_path / "repo" / "nanogpt" / "config").mkdir(parents=True)
    pin = ConfigPin("nanogpt/config/train_shakespeare_char.py", None, "sha256:" + "0" * 64)
    notes: list[str] = []
    with pytest.raises(UsageError) as refused:
        code_config_passed(pin, ["python", "train.py"], project, tmp_path / "repo", given=False, notes=notes)
    assert "never names it" in refused.value.message and "--entrypoint 'python train.py config/train_shakespeare_char.py'" in refused.value.hint
    code_config_passed(pin, ["python", "train.py", "config/train_shakespeare_char.py"], project, tmp_path / "repo", given=False, notes=notes)
    code_config_passed(pin, ["python", "train.py"], project, tmp_path / "repo", given=True, notes=notes)
    assert notes == ["the entrypoint never names nanogpt/config/train_shakespeare_char.py: the record pins it, so make sure the script reads it"]
