"""`reprogate audit`: the retention review over records found like `validate` finds them, or
with `--retiring TARGET`, what retiring a registry, bucket prefix or dataset snapshot takes away."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprogate.audit.check import audit, sample
from reprogate.audit.render import render_audit, render_retiring
from reprogate.audit.retiring import parse_target, retiring
from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import UsageError
from reprogate.datasets.remote import Remote
from reprogate.images.registry import RegistryClient
from reprogate.output.result import CommandResult
from reprogate.output.workflow import visible
from reprogate.validate.runner import FileResult, Options, validate


@dataclass(frozen=True)
class Found:
    """The run records to audit, the dataset manifests beside them, and what was not audited (and why)."""

    records: list[Path]
    manifests: list[Path]
    notes: list[str]
    refused: bool


def find_records(paths: list[str]) -> Found:
    found = validate(paths, Options())

    def shaped(f: FileResult) -> bool:  # a record whose schema holds: the audit reports its artifacts itself
        return not any(d.code.startswith("schema") for d in f.errors)

    records = [Path(f.path) for f in found.files if f.kind == "RunRecord" and shaped(f)]
    manifests = [Path(f.path) for f in found.files if f.kind == "DatasetManifest" and shaped(f)]
    notes = [f"{visible(problem.path)}: {problem.message}" for problem in found.problems if problem.code != "no-documents"]
    # a file that cannot be read, or is no valid run record, is named, never silently dropped
    refused = [f for f in found.files if not f.skipped and f.kind not in ("Config", "DatasetManifest", "Cluster") and (f.kind != "RunRecord" or not shaped(f))]
    notes += [f"{visible(f.path)}: {f.skipped}" for f in found.files if f.skipped.startswith("not a reprogate document (")]  # named explicitly
    for f in refused:
        first = next((d for d in f.errors if d.code.startswith("schema")), f.diagnostics[0] if f.diagnostics else None)
        name = visible(f.path)
        notes.append(f"{name}:{first.location.line}: {first.message} (not audited)" if first else f"{name}: not a run record (not audited)")
    if not records:
        raise UsageError("no run records to audit" + (f": {'; '.join(notes[:3])}" if notes else ""))
    return Found(records, manifests, notes, bool(refused))


def audit_command(paths: list[str], timeout: float, retries: int, size: int | None = None, seed: int = 0, fmt: str = "text") -> CommandResult:

    found = find_records(paths)
    notes = list(found.notes)
    chosen = sample(found.records, size, seed)
    if size is not None:
        notes.append(f"sampled {len(chosen)} of {len(found.records)} record(s) with seed {seed}: {', '.join(visible(p.as_posix()) for p in chosen)}")
    done = render_audit(audit(chosen, timeout=timeout, retries=retries), fmt, notes)
    return done.worst(ExitCode.USAGE) if found.refused else done


def retiring_command(paths: list[str], target: str, mirrors: list[str], timeout: float, retries: int, fmt: str = "text", deep: bool = False) -> CommandResult:
    """Every record's inputs under `target`, lost, unconfirmed or kept by a copy checked now (exit 1 when one is lost, 3 when one is unconfirmed)."""
    retired = parse_target(target)
    for mirror in mirrors:
        if not mirror.strip("/ ") or " " in mirror.strip():
            raise UsageError(f"--mirror {mirror!r}: name a registry, HOST[/PREFIX]")
    found = find_records(paths)
    client, remote = RegistryClient(timeout=timeout, retries=retries), Remote(timeout=timeout, retries=retries)
    report = retiring(found.records, found.manifests, retired, mirrors, client, remote, deep)
    done = render_retiring(report, fmt, found.notes)
    return done.worst(ExitCode.USAGE) if found.refused else done
