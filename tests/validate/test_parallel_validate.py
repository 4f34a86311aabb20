"""Many files are validated by forked processes; the report is the one a single process gives."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path

import pytest
from support import record_copies

from reprogate.validate import runner
from reprogate.validate.runner import Options, validate


@pytest.mark.parametrize("chunk", [runner.CHUNK_FILES, 5])  # 5: many chunks, each worker takes several
def test_parallel_validation_gives_the_same_report_in_the_same_order(project: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(runner, "CHUNK_FILES", chunk)
    count = runner.PARALLEL_MIN_FILES + 6
    many = record_copies(project, count, invalid={i for i in range(count) if i % 9 == 4})  # a schema error in some
    (many / "notes.yaml").write_text("just: a file\n")  # not a reprogate document: skipped

    frozen = gc.get_freeze_count()
    parallel = validate([str(many)], Options())
    assert gc.get_freeze_count() == frozen  # the heap frozen for the workers is the caller's again
    monkeypatch.setattr(runner, "PARALLEL_MIN_FILES", 10**9)
    serial = validate([str(many)], Options())

    assert [f.path for f in parallel.files] == [f.path for f in serial.files] == sorted(f.path for f in serial.files)
    assert [(f.status, f.skipped, [(d.code, d.location, d.message) for d in f.diagnostics]) for f in parallel.files] == [
        (f.status, f.skipped, [(d.code, d.location, d.message) for d in f.diagnostics]) for f in serial.files
    ]
    failed = [f.path for f in parallel.files if f.errors]
    assert len(failed) == len([i for i in range(count) if i % 9 == 4]) and parallel.exit_code == 1


def test_exit_code_is_the_worst_of_its_files_in_the_common_order() -> None:
    from reprogate.core.diagnostics import Diagnostic, ExitCode, Severity
    from reprogate.validate.runner import FileResult, Validation

    def report(*codes: ExitCode, strict: bool = False, warn: bool = False) -> ExitCode:
        files = [FileResult(f"r{i}.yaml", "RunRecord", [], code) for i, code in enumerate(codes)]
        if warn:
            files.append(FileResult("w.yaml", "RunRecord", [Diagnostic("w.yaml", "old", "stale", Severity.WARNING)]))
        return Validation(files=files, strict=strict).exit_code

    assert report(ExitCode.OK, ExitCode.INFRA, ExitCode.FAILED) == ExitCode.INFRA  # an unreachable service makes a failure unsure
    assert report(ExitCode.INFRA, ExitCode.USAGE) == ExitCode.USAGE
    assert report(ExitCode.OK, ExitCode.FAILED) == ExitCode.FAILED
    assert report(ExitCode.OK, warn=True) == ExitCode.OK
    assert report(ExitCode.OK, warn=True, strict=True) == ExitCode.FAILED
    assert report(ExitCode.INFRA, warn=True, strict=True) == ExitCode.INFRA


def _killed(targets: list, options: Options) -> list:
    os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does to a worker
    return []


def test_a_worker_killed_midway_is_an_infrastructure_failure_not_a_traceback(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.core.errors import InfrastructureError

    many = record_copies(project, runner.PARALLEL_MIN_FILES)
    monkeypatch.setattr(runner, "_validate_in_worker", _killed)
    with pytest.raises(InfrastructureError, match="validation worker died") as caught:
        validate([str(many)], Options())
    assert caught.value.exit_code == 3


def test_a_caller_that_froze_its_heap_keeps_it_frozen(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = record_copies(project, runner.PARALLEL_MIN_FILES)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert validate([str(many)], Options()).exit_code == 0
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
