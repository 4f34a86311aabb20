"""Many files are validated by forked processes; the report is the one a single process gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprogate.validate import runner
from reprogate.validate.runner import Options, validate


def test_parallel_validation_gives_the_same_report_in_the_same_order(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = (project / "records" / "drill.yaml").read_text()
    many = project / "many"
    many.mkdir()
    count = runner.PARALLEL_MIN_FILES + 6
    for i in range(count):
        text = template.replace("name: decoder-7b-d77-c19-ref", f"name: run-{i:03d}")
        if i % 9 == 4:
            text = text.replace("level: statistical", "level: nearly")  # a schema error in some
        (many / f"run-{i:03d}.yaml").write_text(text)
    (many / "notes.yaml").write_text("just: a file\n")  # not a reprogate document: skipped

    parallel = validate([str(many)], Options())
    monkeypatch.setattr(runner, "PARALLEL_MIN_FILES", 10**9)
    serial = validate([str(many)], Options())

    assert [f.path for f in parallel.files] == [f.path for f in serial.files] == sorted(f.path for f in serial.files)
    assert [(f.status, f.skipped, [(d.code, d.location, d.message) for d in f.diagnostics]) for f in parallel.files] == [
        (f.status, f.skipped, [(d.code, d.location, d.message) for d in f.diagnostics]) for f in serial.files
    ]
    failed = [f.path for f in parallel.files if f.errors]
    assert len(failed) == len([i for i in range(count) if i % 9 == 4]) and parallel.exit_code == 1
