"""`validate` warns when a valid record cannot be rebuilt, naming the cause and the field."""

from __future__ import annotations

import datetime
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support import edit_record

from reprogate.core.diagnostics import ExitCode
from reprogate.validate.runner import Options, validate


def rebuildable_findings(record: Path) -> list[tuple[str, str]]:
    """(field, message) of every not-rebuildable finding; asserts they are warnings, not errors."""
    report = validate([str(record)], Options(today=datetime.date.today()))
    found = [d for f in report.files for d in f.diagnostics if d.code == "not-rebuildable"]
    assert all(d.severity.value == "warning" for d in found)
    assert report.exit_code == ExitCode.OK, "a record that cannot be rebuilt is still valid"
    return [(d.field, d.message) for d in found]


def tiny(project: Path, change: Callable[[dict[str, Any]], None] | None = None) -> Path:
    record = project / "tiny" / "records" / "tiny.yaml"
    if change is not None:
        edit_record(record, change)
    return record


def test_the_tiny_example_is_rebuildable(project: Path) -> None:
    assert rebuildable_findings(tiny(project)) == []


def test_a_commit_without_the_project_folders_tree(project: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["source"] = {"commit": "1051c499202c31a7847879027d508182d45c400b", "dirty": False}

    [(field, message)] = rebuildable_findings(tiny(project, change))
    assert field == "source.commit" and "source.path + source.tree" in message


def test_a_record_inside_the_folder_whose_tree_it_pins(project: Path) -> None:
    inside = project / "tiny" / "project" / "tiny.yaml"
    shutil.copyfile(tiny(project), inside)
    [(field, message)] = rebuildable_findings(inside)
    assert field == "source.path" and "inside tiny/project" in message


def test_a_remote_only_reference_trace_and_checkpoint(project: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["reference"]["trace"] = {"uri": "s3://bucket/trace.jsonl", "checksum": r["reference"]["trace"]["checksum"]}
        r["state"] = {"checkpoint": {"id": "K-1", "step": 1, "uri": "s3://bucket/k1/", "checksum": r["reference"]["trace"]["checksum"]}}

    found = dict(rebuildable_findings(tiny(project, change)))
    assert "s3://bucket/trace.jsonl" in found["reference.trace"] and "s3://bucket/k1/" in found["state.checkpoint"]


def test_a_dataset_without_a_manifest_file(project: Path) -> None:
    def inline(r: dict[str, Any]) -> None:
        r["dataset"] = {"inline": {"id": "x", "algorithm": "sha256", "shards": []}}

    [(field, message)] = rebuildable_findings(tiny(project, inline))
    assert field == "dataset" and "manifest file" in message

    def unused(r: dict[str, Any]) -> None:
        r["dataset"] = {"used": False, "reason": "generated from the seed"}

    assert rebuildable_findings(tiny(project, unused)) == []


def test_no_environment_to_realize(project: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        del r["job"]["environment"]
        del r["source"]["lock_files"]  # the tiny record pins its lock file: without it, nothing to realize

    [(field, message)] = rebuildable_findings(tiny(project, change))
    assert field == "container" and "neither a container nor a lock file" in message


def test_strict_makes_the_warning_fail(project: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        del r["job"]["environment"]

    record = tiny(project, change)
    assert validate([str(record)], Options(strict=True, today=datetime.date.today())).exit_code == ExitCode.FAILED


def test_a_dirty_source_is_addressed_by_its_folders_tree(project: Path) -> None:
    """What ran is pinned by the tree id of the project folder's files, so a dirty working tree
    needs no diff digest; a commit-pinned source still does."""

    def dirty(r: dict[str, Any]) -> None:
        r["source"]["dirty"] = True

    report = validate([str(tiny(project, dirty))], Options(today=datetime.date.today()))
    assert report.exit_code == ExitCode.OK and not [d for f in report.files for d in f.diagnostics], report.files
