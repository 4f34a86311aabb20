"""`reprogate capacity RECORD --cluster FILE|slurm:PARTITION`: can this pool honor the record?"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from reprogate.capacity.check import Requirement, requirements
from reprogate.capacity.pool import Pool, load_pool, slurm_pool
from reprogate.core.diagnostics import Diagnostic, ExitCode, Location, Severity
from reprogate.core.documents import Document, load_document
from reprogate.core.errors import UsageError
from reprogate.core.schema_check import schema_diagnostics
from reprogate.output.findings import annotate, summary_markdown
from reprogate.output.result import CommandResult
from reprogate.output.workflow import visible

SLURM = "slurm:"
PARTITION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")  # what Slurm partition names are made of


UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
UNITS |= {f"{k[0]}IB": 1 << (10 * i) for i, k in enumerate(("K", "M", "G", "T", "P"), start=1)}
SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)")


def parse_size(text: str, option: str) -> int:
    """`100TB`, `2.5TiB`, `800000000` as bytes; anything else is a usage error naming the option."""
    found = SIZE.fullmatch(text.strip())
    unit = found.group(2).upper() if found else ""
    if found is None or unit not in UNITS:
        raise UsageError(f"{option} {visible(text[:40])}: write bytes, or a number with KB, MB, GB, TB, PB (or KiB ... PiB)")
    return int(float(found.group(1)) * UNITS[unit])


def pool_from(spec: str, shared_bytes: int | None = None) -> Pool:
    pool = _pool_from(spec, shared_bytes)
    return dataclasses.replace(pool, shared_bytes=shared_bytes) if shared_bytes is not None else pool


def _pool_from(spec: str, shared_bytes: int | None) -> Pool:
    if spec.startswith(SLURM):
        partition = spec[len(SLURM) :].strip()
        if not partition:
            raise UsageError("--cluster slurm:PARTITION: name the partition")
        if not PARTITION.fullmatch(partition):
            # scontrol takes its arguments as options too: `-a` would describe every partition
            raise UsageError(
                f"--cluster slurm:{visible(partition[:80])}: not a partition name (letters, digits, '_', '.' and '-', not first)",
            )
        return slurm_pool(partition, shared_bytes)
    return load_pool(Path(spec))


def capacity_command(record: Path, cluster: str, fmt: str, shared: str | None = None) -> CommandResult:
    doc = load_document(record)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        raise UsageError(f"{record}: not a run record (kind: RunRecord)")
    # the requirements read the envelope, execution and devices as the schema says they are
    # (a topology matrix of rows, a list of driver branches): a record of another shape is
    # refused here, naming its fields, never read half-way
    problems = schema_diagnostics(doc, "RunRecord")
    if problems:
        raise UsageError(f"{record}: not a valid run record", diagnostics=problems[:20], hint="`reprogate validate` lists every finding")
    pool = pool_from(cluster, parse_size(shared, "--shared-bytes") if shared is not None else None)
    found = requirements(doc.data, pool)
    failed = [r for r in found if not r.ok]
    code = ExitCode.FAILED if failed else ExitCode.OK
    name = visible(str(record))
    summary = f"{name} on {visible(pool.source)}: " + (
        f"{len(failed)} of {len(found)} requirement(s) not honored ({', '.join(r.name for r in failed)})"
        if failed
        else f"all {len(found)} requirement(s) honored"
    )
    if fmt == "json":
        payload = {
            "version": 1,
            "record": str(record),
            "cluster": pool.source,
            "ok": not failed,
            "exit_code": int(code),
            "summary": summary,
            "requirements": [{"name": r.name, "field": r.field, "status": r.status, "ok": r.ok, "reason": r.reason} for r in found],
        }
        return CommandResult(code, [json.dumps(payload, indent=2)])
    if fmt == "github":
        findings = [_finding(doc, str(record), r) for r in failed]
        return CommandResult(
            code,
            [*annotate(findings), summary],
            outputs={"ok": "true" if not failed else "false"},
            summary=summary_markdown("reprogate capacity", not failed, summary, findings),
        )
    lines = [f"{r.name:<16} {r.status:<10} {visible(r.reason)}" for r in found]
    return CommandResult(code, [*lines, summary])


def _finding(doc: Document, path: str, r: Requirement) -> Diagnostic:
    line = doc.locate(tuple(r.field.split("."))).line
    return Diagnostic(path, f"{r.name}: {r.reason}", f"capacity-{r.status}", Severity.ERROR, Location(line, 1), r.field)
