"""A file reached by several names (a symlinked file, a symlinked folder, a `..` through a
symlink) is validated once, under the first name it was met by; a walk resolves each folder once."""

from __future__ import annotations

import os
from pathlib import Path

from reprogate.validate.discovery import discover


def test_one_file_reached_by_many_names_is_validated_once(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    records = project / "records"
    (project / "deep" / "down").mkdir(parents=True)
    os.symlink(records, project / "deep" / "down" / "records")  # deep/down/records -> records
    os.symlink(project / "deep" / "down", project / "hop")  # hop -> deep/down
    os.symlink("records/drill.yaml", project / "alias.yaml")  # a symlinked file
    os.symlink("records", project / "shelf")  # a symlinked folder
    os.symlink("nowhere.yaml", project / "dangling.yaml")  # a broken link named explicitly is still a target
    names = [
        "records/drill.yaml",
        "alias.yaml",
        "shelf/drill.yaml",
        "hop/../down/records/drill.yaml",  # `..` after a symlink: lexically `down/records`, which does not exist here
        "hop/records/drill.yaml",
        "dangling.yaml",
        "records",
    ]
    found = discover(names)
    assert not found.problems
    paths = [str(t.path) for t in found.targets]
    assert paths[:2] == ["records/drill.yaml", "dangling.yaml"]
    real = [os.path.realpath(p) for p in paths]
    assert len(real) == len(set(real))  # each file once
    assert sorted(real) == sorted({os.path.realpath(p) for p in [*names[:-1], *(str(p) for p in records.iterdir() if p.is_file())]})


def test_a_file_that_is_a_symlink_loop_is_a_warning_and_the_rest_is_still_found(project: Path, monkeypatch) -> None:
    monkeypatch.chdir(project)
    os.symlink("loop.yaml", project / "records" / "loop.yaml")
    found = discover(["records"])
    assert [(p.path, p.code, p.severity.value) for p in found.problems] == [("records/loop.yaml", "unreadable-file", "warning")]
    assert "records/drill.yaml" in [str(t.path) for t in found.targets]
