"""The audit's reports as text, JSON or GitHub annotations, through the output layer's findings.

Both modes (the retention review and `--retiring`) become Diagnostic lists here, so GitHub sees
them as annotations on the record's line and in the step summary's table, the way `validate`'s
findings are shown (output/findings.py).
"""

from __future__ import annotations

import json
from typing import Any

from reprogate.audit.check import AuditResult, Entry
from reprogate.audit.retiring import Retired, RetiringReport
from reprogate.core.diagnostics import Diagnostic, ExitCode, Location, Severity
from reprogate.output.findings import annotate, summary_markdown
from reprogate.output.result import CommandResult
from reprogate.output.workflow import visible

SEVERITY = {"missing": Severity.ERROR, "expired": Severity.ERROR, "unreachable": Severity.WARNING, "unchecked": Severity.NOTICE, "notice": Severity.NOTICE}
TEXT_LIMIT = 20  # lost inputs a record lists in text; JSON lists every one


def _finding(entry: Entry) -> Diagnostic:
    return Diagnostic(entry.record, entry.message, f"audit-{entry.status}", SEVERITY[entry.status], Location(entry.line, 1), entry.field)


def render_audit(result: AuditResult, fmt: str, notes: list[str]) -> CommandResult:
    """The retention review in `fmt`; `notes` (what was not audited, the sample) go to stderr."""
    summary = result.lines[-1] if result.lines else ""
    if fmt == "json":
        payload = {
            "version": 1,
            "ok": result.code == ExitCode.OK,
            "exit_code": int(result.code),
            "summary": summary,
            "counts": {"missing": result.missing, "expired": result.expired, "unreachable": result.unreachable, "unchecked": result.unchecked},
            "entries": [{"file": e.record, "line": e.line, "field": e.field, "status": e.status, "message": e.message} for e in result.entries],
            "notes": notes,
        }
        return CommandResult(result.code, [json.dumps(payload, indent=2)], notes)
    if fmt == "github":
        findings = [_finding(e) for e in result.entries if e.status in SEVERITY]
        return CommandResult(
            result.code,
            [*annotate(findings), summary],
            notes,
            outputs={"ok": "true" if result.code == ExitCode.OK else "false"},
            summary=summary_markdown("reprogate audit", result.code == ExitCode.OK, summary, findings),
        )
    return CommandResult(result.code, list(result.lines), notes)


def _size(count: int | None) -> str:
    if count is None:
        return ""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _what(item: Retired) -> str:
    one = item.input
    digest = f"@{one.digest}" if one.digest and one.kind in ("image", "base-image") else (f" {one.digest}" if one.digest else " (no digest)")
    size = f", {_size(one.bytes)}" if one.bytes is not None else ""
    return f"{one.field}: {one.kind} {visible(one.location or '(no location)')}{digest}{size}"


def _message(item: Retired) -> str:
    if item.lost:
        return f"{_what(item)}: LOST (no other copy is addressed by this digest)"
    return f"{_what(item)}: kept, the same digest at {visible(item.copies[0])}" + (f" and {len(item.copies) - 1} more" if len(item.copies) > 1 else "")


def _retiring_summary(report: RetiringReport) -> str:
    touched = sorted({r.input.record for r in report.retired})
    losing = sorted({r.input.record for r in report.lost})
    lost_bytes = sum(r.input.bytes or 0 for r in report.lost)
    return (
        f"retiring {visible(report.target)}: {len(report.records)} record(s) read, {len(touched)} address something under it, "
        f"{len(losing)} would lose an input no other copy holds ({len(report.lost)} input(s)"
        + (f", {_size(lost_bytes)}" if lost_bytes else "")
        + f"); {len(report.retired) - len(report.lost)} input(s) kept by another copy"
    )


def _retired_json(item: Retired) -> dict[str, Any]:
    one = item.input
    return {
        "field": one.field,
        "line": one.line,
        "kind": one.kind,
        "location": one.location or None,
        "digest": one.digest,
        "bytes": one.bytes,
        "dataset": {"id": one.dataset[0], "version": one.dataset[1] or None} if one.dataset else None,
        "lost": item.lost,
        "copies": list(item.copies),
    }


def render_retiring(report: RetiringReport, fmt: str, notes: list[str]) -> CommandResult:
    """What retiring the target takes from each record, in `fmt`."""
    notes = [*notes, *report.notes, *report.unreachable]
    summary = _retiring_summary(report)
    by_record: dict[str, list[Retired]] = {}
    for item in report.retired:
        by_record.setdefault(item.input.record, []).append(item)
    if fmt == "json":
        payload = {
            "version": 1,
            "target": report.target,
            "ok": report.code == ExitCode.OK,
            "exit_code": int(report.code),
            "summary": summary,
            "records": [{"file": name, "loses": any(i.lost for i in items), "inputs": [_retired_json(i) for i in items]} for name, items in by_record.items()],
            "unreachable": report.unreachable,
            "notes": notes,
        }
        return CommandResult(report.code, [json.dumps(payload, indent=2)], notes)
    if fmt == "github":
        findings = [
            Diagnostic(
                i.input.record,
                _message(i),
                "retiring-lost" if i.lost else "retiring-kept",
                Severity.ERROR if i.lost else Severity.NOTICE,
                Location(i.input.line, 1),
                i.input.field,
            )
            for i in report.retired
        ]
        return CommandResult(
            report.code,
            [*annotate(findings), summary],
            notes,
            outputs={"ok": "true" if report.code == ExitCode.OK else "false"},
            summary=summary_markdown(f"reprogate audit --retiring {report.target}", report.code == ExitCode.OK, summary, findings),
        )
    lines: list[str] = []
    for name, items in by_record.items():
        lost = [i for i in items if i.lost]
        kept = [i for i in items if not i.lost]
        lines.append(f"{visible(name)}: {len(items)} input(s) under {visible(report.target)}, {len(lost)} LOST, {len(kept)} kept by another copy")
        for i in lost[:TEXT_LIMIT] + kept[: max(0, TEXT_LIMIT - len(lost))]:
            lines.append(f"  {_message(i)}")
        left = len(items) - min(len(items), TEXT_LIMIT)
        if left:
            lines.append(f"  ... {left} more input(s) (--format json lists every one)")
    lines.append(summary)
    return CommandResult(report.code, lines, notes)
