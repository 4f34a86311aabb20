"""`reprogate audit`: the retention review over records found like `validate` finds them."""

from __future__ import annotations

from pathlib import Path

from reprogate.core.errors import UsageError
from reprogate.output.result import CommandResult


def audit_command(paths: list[str], timeout: float, retries: int, size: int | None = None, seed: int = 0) -> CommandResult:
    from reprogate.audit.check import audit, sample
    from reprogate.validate.runner import Options, validate

    found = validate(paths, Options())
    records = [Path(f.path) for f in found.files if f.kind == "RunRecord"]
    notes = [f"{problem.path}: {problem.message}" for problem in found.problems]
    if not records:
        raise UsageError("no run records to audit" + (f" ({notes[0]})" if notes else ""))
    chosen = sample(records, size, seed)
    if size is not None:
        notes.append(f"sampled {len(chosen)} of {len(records)} record(s) with seed {seed}: {', '.join(p.as_posix() for p in chosen)}")
    result = audit(chosen, timeout=timeout, retries=retries)
    return CommandResult(result.code, result.lines, notes)
