"""Findings (Diagnostic lists) as text for people, JSON for tools, or GitHub annotations.

`validate` and `dataset verify` both report findings; both render here, into a CommandResult,
so the two look alike and neither writes to GitHub itself.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.output import workflow
from reprogate.output.markdown import cell, code_span
from reprogate.output.result import CommandResult

if TYPE_CHECKING:
    from reprogate.datasets.verify import VerifyOutcome
    from reprogate.validate.runner import Validation


def format_line(d: Diagnostic) -> str:
    """One finding as a line (and its hint on the next). A file name, key or value from a pull
    request is shown with its control characters escaped, so it can neither start a line that
    reads as another finding nor drive the reader's terminal."""
    where = f"{workflow.visible(d.path)}:{d.location.line}:{d.location.col}"
    level = "" if d.severity is Severity.ERROR else f"{d.severity.value}: "
    head = f"{where}  {workflow.visible(d.field or '-')}  {level}{workflow.visible(d.message)}"
    return head + (f"\n    hint: {workflow.visible(d.hint)}" if d.hint else "")


def _summary(report: Validation) -> str:
    checked = report.checked
    invalid = sum(1 for f in checked if f.status)
    errors = sum(len(f.errors) for f in report.files) + sum(1 for p in report.problems if p.severity is Severity.ERROR)
    warnings = sum(len(f.warnings) for f in report.files) + sum(1 for p in report.problems if p.severity is Severity.WARNING)
    unreadable = sum(1 for f in report.files if f.kind is None and not f.skipped)
    skipped = sum(1 for f in report.files if f.skipped)
    parts = [f"{len(checked)} document(s) checked", f"{len(checked) - invalid} valid", f"{invalid} invalid"]
    drift = len(report.drift)
    if drift:
        parts.append(f"{drift} environment drift")
    if unreadable:
        parts.append(f"{unreadable} unreadable")
    if skipped:
        parts.append(f"{skipped} skipped")
    return ", ".join(parts) + f" ({errors} error(s), {warnings} warning(s))"


def all_findings(report: Validation) -> list[Diagnostic]:
    return [*report.problems, *(d for f in report.files for d in f.diagnostics)]


def errors_first(findings: list[Diagnostic]) -> list[Diagnostic]:
    """Errors, then warnings, then notices, each in the order found: what fails a commit or a
    job is read first (a pre-commit run shows the top of the list)."""
    rank = {Severity.ERROR: 0, Severity.WARNING: 1}
    return sorted(findings, key=lambda d: rank.get(d.severity, 2))


def render_text(report: Validation, verbose: bool = False) -> CommandResult:
    out = [format_line(d) for d in errors_first(all_findings(report))]
    shown = workflow.visible  # a file name is one line, whatever characters it holds
    if verbose:
        for f in report.files:
            if f.skipped:
                out.append(f"{shown(f.path)}: skipped, {f.skipped}")
            elif not f.diagnostics:
                out.append(f"{shown(f.path)}: ok ({f.kind})")
    else:
        out += [f"{shown(f.path)}: skipped, {f.skipped}" for f in report.files if f.skipped and f.skipped.startswith("not a reprogate document (")]
    out.append(_summary(report))
    return CommandResult(report.exit_code, out)


def render_json(report: Validation, verbose: bool = False) -> CommandResult:
    payload = {
        "version": 1,
        "valid": report.exit_code == 0,
        "exit_code": int(report.exit_code),
        "summary": _summary(report),
        "problems": [d.to_json() for d in report.problems],
        "drift": [{"file": d.path, "field": d.field, "message": d.message} for d in report.drift],
        "files": [
            {
                "file": f.path,
                "kind": f.kind if f.kind != "?" else None,
                "status": "skipped" if f.skipped else ("invalid" if f.status else "valid"),
                "skipped": f.skipped or None,
                "findings": [d.to_json() for d in f.diagnostics],
            }
            for f in report.files
        ],
    }
    return CommandResult(report.exit_code, [json.dumps(payload, indent=2)])


def render_github(report: Validation, verbose: bool = False) -> CommandResult:
    findings = all_findings(report)
    return CommandResult(
        report.exit_code,
        [*annotate(findings), _summary(report)],
        outputs={
            "valid": "true" if report.exit_code == 0 else "false",
            "documents": str(len(report.checked)),
            "drift": ",".join(f"{workflow.visible(d.path)}:{d.field}" for d in report.drift),
        },
        summary=summary_markdown("reprogate validate", report.exit_code == 0, _summary(report), findings),
    )


def annotate(findings: list[Diagnostic]) -> list[str]:
    """Annotations within GitHub's per-step limits (10 errors, 10 warnings); the rest are printed
    inert (inside stop-commands) right after, so the step log holds every finding."""
    shown = {Severity.ERROR: 0, Severity.WARNING: 0, Severity.NOTICE: 0}
    out: list[str] = []
    overflow: list[Diagnostic] = []
    for d in findings:
        level = d.severity
        if shown[level] < workflow.ANNOTATIONS_PER_LEVEL:
            shown[level] += 1
            title = f"reprogate: {d.field or d.code}"
            text = d.message + (f" (hint: {d.hint})" if d.hint else "")
            out.append(workflow.annotation(level.value, text, d.path, d.location.line, d.location.col, title))
        else:
            overflow.append(d)
    if overflow:
        out.append(f"{len(overflow)} more finding(s) not annotated (GitHub shows 10 errors and 10 warnings per step); each one follows:")
        out += workflow.stop_commands(line for d in overflow for line in format_line(d).split("\n"))  # a hint on its own line, not shown as \x0a
    return out


SUMMARY_BUDGET = workflow.SUMMARY_LIMIT - 64 * 1024  # bytes of table: the rest of the step's summary stays whole


def summary_markdown(title: str, ok: bool, summary: str, findings: list[Diagnostic]) -> str:
    """The step summary: the verdict, then a table of findings. GitHub refuses a step summary
    over 1 MiB, so the table stops short of that and says how many findings it leaves to the
    step log (which lists every one), rather than being cut mid-row."""
    icon = "✅" if ok else "❌"
    lines = [f"### {icon} {title}", "", summary, ""]
    if findings:
        lines += ["| file | line | field | severity | message |", "|---|---|---|---|---|"]
        size = sum(len(line.encode()) + 1 for line in lines)
        for shown, d in enumerate(findings):
            msg = d.message + (f" — {d.hint}" if d.hint else "")
            path, name = code_span(d.path, in_table=True), code_span(d.field or "-", in_table=True)
            row = f"| {path} | {d.location.line}:{d.location.col} | {name} | {d.severity.value} | {cell(msg)} |"
            size += len(row.encode()) + 1
            if size > SUMMARY_BUDGET:
                left = len(findings) - shown
                lines += ["", f"_{left} more finding(s) are not in this table (GitHub takes 1 MiB of summary a step); the step log lists every one._"]
                break
            lines.append(row)
    return "\n".join(lines) + "\n"


RENDERERS = {"text": render_text, "json": render_json, "github": render_github}


def render_verify(report: VerifyOutcome, fmt: str) -> CommandResult:
    """Findings of `dataset verify`, grouped by kind so each list reads on its own."""
    ordered = sorted(report.findings, key=lambda d: (d.code, d.location.line))
    if fmt == "json":
        payload = {
            "version": 1,
            "manifest": report.manifest,
            "root": report.root,
            "ok": report.exit_code == 0,
            "exit_code": int(report.exit_code),
            "checked": report.checked,
            "checksums_skipped": report.checksums_skipped,
            **report.by_kind,
            "findings": [d.to_json() for d in ordered],
        }
        return CommandResult(report.exit_code, [json.dumps(payload, indent=2)])
    if fmt == "github":
        return CommandResult(
            report.exit_code,
            [*annotate(ordered), report.summary],
            outputs={"ok": "true" if report.exit_code == 0 else "false"},
            summary=summary_markdown("reprogate dataset verify", report.exit_code == 0, report.summary, ordered),
        )
    out: list[str] = []
    current = ""
    for d in ordered:
        if d.code != current:
            current = d.code
            kind = d.code.removeprefix("shard-")
            out.append(f"{kind} ({sum(1 for x in ordered if x.code == d.code)}):")
        out.append("  " + format_line(d).replace("\n", "\n  "))
    out.append(report.summary)
    return CommandResult(report.exit_code, out)
