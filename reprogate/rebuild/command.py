"""What `reprogate rebuild` and `reprogate compare` print and write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.fileio import atomic_write


def text_summary(verdict: dict[str, Any]) -> str:
    lines = [f"rebuild of {verdict['record']['path']} ({verdict['record']['level']} contract): {verdict['verdict'].upper()}" + (f", diagnosis: {verdict['diagnosis']}" if verdict["diagnosis"] else "")]
    for stage in verdict["stages"]:
        lines.append(f"  {stage['name']:<12} {stage['status']:<8} {stage['seconds']:6.1f} s  {stage['detail']}")
    tail = next((s.get("log_tail") for s in verdict["stages"] if s.get("log_tail")), None)
    if tail:
        lines += ["  log tail:", *("    " + line for line in tail.splitlines()[-10:])]
    lines.append("claim: " + verdict["claim"]["text"])
    return "\n".join(lines) + "\n"


def run_command(record: Path, workdir: Path | None, output_dir: Path, steps: int | None, seeds: int, world_size: int | None, image: str | None, timeout: float, fmt: str) -> tuple[ExitCode, str, list[str]]:
    from reprogate.rebuild import RebuildUsageError, exit_code, run_rebuild
    from reprogate.rebuild.context import RebuildOptions
    from reprogate.rebuild.report import markdown

    options = RebuildOptions(workdir=workdir, steps=steps, seeds=seeds, world_size=world_size, image=image, timeout=timeout)
    try:
        verdict = run_rebuild(record, options)
    except RebuildUsageError as exc:
        return ExitCode.USAGE, "", [f"reprogate rebuild: {exc}"]
    report = markdown(verdict)
    atomic_write(output_dir / "verdict.json", json.dumps(verdict, indent=2) + "\n")
    atomic_write(output_dir / "report.md", report)
    messages = [f"wrote {output_dir / 'verdict.json'} and {output_dir / 'report.md'}"]
    if fmt == "json":
        text = json.dumps(verdict, indent=2) + "\n"
    elif fmt == "github":
        from reprogate.output import workflow as actions

        failed = next((s for s in verdict["stages"] if s["status"] == "fail"), None)
        text = ""
        if failed:
            text = actions.annotation("error", f"{failed['name']}: {failed['detail']}", verdict["record"]["path"], title=f"reprogate rebuild: {failed['name']}") + "\n"
        text += text_summary(verdict)
        actions.append_summary(report)
        actions.set_outputs({"verdict": verdict["verdict"], "diagnosis": verdict["diagnosis"] or "", "report-path": str(output_dir / "report.md")})
    else:
        text = text_summary(verdict)
    return exit_code(verdict), text, messages


def compare_traces(reference: Path, rebuilt: list[Path], tolerance: tuple[float, float] | None, tensors: list[str], first: int, last: int | None) -> tuple[ExitCode, list[str]]:
    from reprogate.rebuild import compare
    from reprogate.runtime.trace import read_trace

    try:
        ref = compare.step_events(read_trace([reference]), first, last)
        new = compare.step_events(read_trace(rebuilt), first, last)
    except (OSError, ValueError, KeyError) as exc:
        return ExitCode.USAGE, [f"reprogate compare: cannot read a trace: {exc}"]
    outcomes = [("batches", compare.compare_batches(ref, new))]
    if tensors:
        outcomes.append(("tensors", compare.compare_tensors(ref, new, tensors)))
    abs_tol, rel_tol = tolerance or (0.0, 0.0)
    outcomes.append(("steps", compare.compare_values(ref, new, ["loss"], abs_tol, rel_tol)[0]))
    lines = [f"{name:<8} {outcome.status:<8} {outcome.detail}" for name, outcome in outcomes]
    failed = any(outcome.status == "fail" for _, outcome in outcomes)
    return (ExitCode.FAILED if failed else ExitCode.OK), lines
