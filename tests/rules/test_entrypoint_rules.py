"""The entrypoint against what the record says of it: a configuration pinned as its arguments
(job.config hash_of: argv) and a torchrun command against the world size; and the schema's rule
that only `hash_of: argv` may leave out the configuration's path (older records keep theirs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result
from support import edit_record

from reprogate.runtime.entry_command import arguments_digest

Cli = Callable[..., Result]
ARGV = ["--config", "../config/tiny.yaml"]


def _findings(cli: Cli, project: Path, change: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    record = project / "tiny" / "records" / "tiny.yaml"
    edit_record(record, change)
    result = cli("validate", "--format", "json", str(record), cwd=project)
    return [f for entry in json.loads(result.output)["files"] for f in entry["findings"]]


def _argv_config(data: dict[str, Any]) -> None:
    data["job"]["config"] = {"hash_of": "argv", "argv": list(ARGV), "hash": arguments_digest(ARGV)}


def test_an_argv_configuration_without_a_file_validates(cli: Cli, project: Path) -> None:
    found = _findings(cli, project, _argv_config)
    assert not [f for f in found if f["severity"] == "error"], found


def test_a_changed_flag_names_the_flag(cli: Cli, project: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        _argv_config(data)
        data["job"]["entrypoint"] = ["python", "train.py", "--config", "../config/other.yaml"]

    found = [f for f in _findings(cli, project, change) if f["code"] == "configuration-changed"]
    assert len(found) == 1 and found[0]["field"] == "job.entrypoint", found
    assert "--config ../config/tiny.yaml -> ../config/other.yaml" in found[0]["message"]


def test_an_argv_hash_that_is_not_its_arguments_is_refused(cli: Cli, project: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        _argv_config(data)
        data["job"]["config"]["hash"] = arguments_digest(["--config", "elsewhere.yaml"])

    found = [f for f in _findings(cli, project, change) if f["code"] == "canonical-mismatch"]
    assert found and found[0]["field"] == "job.config.hash"


def test_arguments_of_a_command_with_no_script_are_no_configuration(cli: Cli, project: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        _argv_config(data)
        data["job"]["entrypoint"] = ["bash", "-c", "python train.py --config ../config/tiny.yaml"]

    assert [f for f in _findings(cli, project, change) if f["code"] == "argv-without-script"]


def test_torchrun_must_start_the_records_world_size(cli: Cli, project: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["job"]["entrypoint"] = ["torchrun", "--nproc-per-node", "4", "train.py", *ARGV]  # the record says 2 ranks

    found = [f for f in _findings(cli, project, change) if f["code"] == "torchrun-shape"]
    assert len(found) == 1 and "torchrun starts 4 rank(s)" in found[0]["message"] and "execution.world_size 2" in found[0]["message"]


def test_only_argv_configurations_leave_out_the_path(cli: Cli, project: Path) -> None:
    """An older record's configuration (no hash_of) still needs its path; hash_of: argv needs argv."""

    def no_path(data: dict[str, Any]) -> None:
        del data["job"]["config"]["path"]

    assert [f for f in _findings(cli, project, no_path) if f["severity"] == "error" and "path" in f["message"]]

    def no_argv(data: dict[str, Any]) -> None:
        _argv_config(data)
        del data["job"]["config"]["argv"]

    assert [f for f in _findings(cli, project, no_argv) if f["severity"] == "error" and "argv" in f["message"]]
