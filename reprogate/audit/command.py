"""`reprogate audit`: the retention review over records found like `validate` finds them."""

from __future__ import annotations

from pathlib import Path

from reprogate.audit.check import audit, sample
from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import UsageError
from reprogate.output.result import CommandResult
from reprogate.output.workflow import visible
from reprogate.validate.runner import FileResult, Options, validate


def audit_command(paths: list[str], timeout: float, retries: int, size: int | None = None, seed: int = 0) -> CommandResult:

    found = validate(paths, Options())

    def shaped(f: FileResult) -> bool:  # a record whose schema holds: the audit reports its artifacts itself
        return not any(d.code.startswith("schema") for d in f.errors)

    records = [Path(f.path) for f in found.files if f.kind == "RunRecord" and shaped(f)]
    notes = [f"{visible(problem.path)}: {problem.message}" for problem in found.problems if problem.code != "no-documents"]
    # a file that cannot be read, or is no valid run record, is named, never silently dropped
    refused = [f for f in found.files if not f.skipped and f.kind not in ("Config", "DatasetManifest") and (f.kind != "RunRecord" or not shaped(f))]
    notes += [f"{visible(f.path)}: {f.skipped}" for f in found.files if f.skipped.startswith("not a reprogate document (")]  # named explicitly
    for f in refused:
        first = next((d for d in f.errors if d.code.startswith("schema")), f.diagnostics[0] if f.diagnostics else None)
        name = visible(f.path)
        notes.append(f"{name}:{first.location.line}: {first.message} (not audited)" if first else f"{name}: not a run record (not audited)")
    if not records:
        raise UsageError("no run records to audit" + (f": {'; '.join(notes[:3])}" if notes else ""))
    chosen = sample(records, size, seed)
    if size is not None:
        notes.append(f"sampled {len(chosen)} of {len(records)} record(s) with seed {seed}: {', '.join(visible(p.as_posix()) for p in chosen)}")
    result = audit(chosen, timeout=timeout, retries=retries)
    done = CommandResult(result.code, result.lines, notes)
    return done.worst(ExitCode.USAGE) if refused else done
