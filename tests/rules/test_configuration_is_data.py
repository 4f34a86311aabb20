"""A configuration written as code (a Python file exec'd by a configurator, as nanoGPT's) read as
YAML is one scalar: its hash pins the text, not the values the run used. `validate` warns of
such a pin in an existing record (its meaning is kept), and `init` refuses to make one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

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


def test_init_refuses_a_configuration_written_as_code(cli: Cli, tmp_path: Path) -> None:
    import shutil

    from support import EXAMPLES, git

    repo = tmp_path / "repo"
    for part in ("project", "config", "data"):
        shutil.copytree(EXAMPLES / "tiny" / part, repo / part)
    (repo / "config" / "train.py").write_text(CODE)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the project")
    result = cli("init", "project", "--config", "../config/train.py", "--world-size", "2", "--seeds", "1", cwd=repo)
    assert result.exit_code == 2, result.output
    assert "config/train.py is not a mapping or a list (it reads as one str)" in result.output and "Tracer(config=...)" in result.output
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
