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
        looked = [c for c in item.copies if c.status == "absent"]
        why = "; ".join(f"{visible(c.where)}: {c.why}" for c in looked[:3]) + (f" and {len(looked) - 3} more" if len(looked) > 3 else "")
        return f"{_what(item)}: LOST (" + (f"no copy holds it: {why}" if looked else "no other copy is addressed by this digest") + ")"
    if item.unconfirmed:
        open_ = [c for c in item.copies if c.status == "unconfirmed"]
        return f"{_what(item)}: UNCONFIRMED (no copy was seen to hold it; {visible(open_[0].where)}: {visible(open_[0].why)})"
    holding = item.holding
    first = holding[0]
    return f"{_what(item)}: kept, the same digest at {visible(first.where)} ({first.why})" + (f" and {len(holding) - 1} more" if len(holding) > 1 else "")


def repoint(item: Retired) -> str | None:
    """How to rebuild the record from the copy that keeps the input, when that copy lives elsewhere."""
    one = item.input
    holding = item.holding
    if item.lost or item.unconfirmed or any(c.where.startswith("the repository") for c in holding):
        return None
    image = next((c for c in holding if c.registry), None)
    if image is not None and one.kind == "image":
        return (
            f"rebuild from the copy: reprogate rebuild {visible(one.record)} --image {visible(image.registry or '')}@{one.digest}, "
            f"or set container.registry/repository to {visible(image.registry or '')} in the record"
        )
    if image is not None:
        return f"the base image is at {visible(image.registry or '')}@{one.digest}: point {one.field}.ref there before the build needs it"
    folder = next((c.folder for c in holding if c.folder), None)
    if folder is not None:
        return f"rebuild from the copy: reprogate rebuild {visible(one.record)} --dataset-root {visible(folder)}, or set the manifest's namespace to it"
    return None


def _retiring_summary(report: RetiringReport) -> str:
    touched = sorted({r.input.record for r in report.retired})
    losing = sorted({r.input.record for r in report.lost})
    lost_bytes = sum(r.input.bytes or 0 for r in report.lost)
    open_ = len(report.unconfirmed)
    return (
        f"retiring {visible(report.target)}: {len(report.records)} record(s) read, {len(touched)} address something under it, "
        f"{len(losing)} would lose an input no other copy holds ({len(report.lost)} input(s)"
        + (f", {_size(lost_bytes)}" if lost_bytes else "")
        + f"); {len(report.retired) - len(report.lost) - open_} input(s) kept by a copy checked now"
        + (f"; {open_} input(s) unconfirmed (a copy could not be asked)" if open_ else "")
        + (f"; {len(report.unusable)} dataset manifest(s) could not be read, so what they list is not known" if report.unusable else "")
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
        "status": "lost" if item.lost else "unconfirmed" if item.unconfirmed else "kept",
        "copies": [c.where for c in item.holding],
        "asked": [{"where": c.where, "status": c.status, "why": c.why} for c in item.copies],
        "repoint": repoint(item),
    }


def render_retiring(report: RetiringReport, fmt: str, notes: list[str]) -> CommandResult:
    """What retiring the target takes from each record, in `fmt`."""
    notes = [*notes, *(f"error: {u}" for u in report.unusable), *report.notes, *report.unreachable]
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
            "unusable": report.unusable,
            "notes": notes,
        }
        return CommandResult(report.code, [json.dumps(payload, indent=2)], notes)
    if fmt == "github":
        findings = [
            Diagnostic(
                i.input.record,
                _message(i),
                "retiring-lost" if i.lost else "retiring-unconfirmed" if i.unconfirmed else "retiring-kept",
                Severity.ERROR if i.lost else Severity.WARNING if i.unconfirmed else Severity.NOTICE,
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
        open_ = [i for i in items if i.unconfirmed]
        kept = [i for i in items if not i.lost and not i.unconfirmed]
        lines.append(
            f"{visible(name)}: {len(items)} input(s) under {visible(report.target)}, {len(lost)} LOST, "
            + (f"{len(open_)} UNCONFIRMED, " if open_ else "")
            + f"{len(kept)} kept by a copy checked now"
        )
        shown = (lost + open_ + kept)[:TEXT_LIMIT]
        for i in shown:
            lines.append(f"  {_message(i)}")
        hints = list(dict.fromkeys(h for h in (repoint(i) for i in kept) if h))
        lines += [f"  {h}" for h in hints[:3]]
        left = len(items) - min(len(items), TEXT_LIMIT)
        if left:
            lines.append(f"  ... {left} more input(s) (--format json lists every one)")
    lines.append(summary)
    return CommandResult(report.code, lines, notes)
