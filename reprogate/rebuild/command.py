"""The rebuild family's commands: preflight, rebuild, interval, compare and report.

Each returns a CommandResult (output/result.py) or raises a ReprogateError; nothing here prints.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path

import yaml

from reprogate.core.config import repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import Document, load_document
from reprogate.core.errors import ReprogateError, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.json_input import parse_json_bytes, read_bounded
from reprogate.core.progress import switch_off
from reprogate.core.redact import redact
from reprogate.core.seedstats import percent
from reprogate.output import workflow
from reprogate.output.result import CommandResult
from reprogate.rebuild import compare
from reprogate.rebuild.interval import read_inputs, store
from reprogate.rebuild.launchers import kubernetes
from reprogate.rebuild.options import RebuildOptions as RebuildOptions  # the command line names it from here (one import per command)
from reprogate.rebuild.planner import plan
from reprogate.rebuild.preflight import PreflightOptions as PreflightOptions  # the command line names it from here
from reprogate.rebuild.preflight import render_text, run_preflight
from reprogate.rebuild.report import markdown, render
from reprogate.rebuild.run_binding import check_nonce, fresh_output
from reprogate.rebuild.runner import Chosen, check_before_running, run_rebuild
from reprogate.rebuild.stages.preflight import time_limit
from reprogate.rebuild.verdict import Verdict
from reprogate.rebuild.verdicts import read_verdict
from reprogate.runtime.trace import TraceError, TraceEvent, parse_event
from reprogate.runtime.trace import order as trace_order


def text_summary(verdict: Verdict) -> list[str]:
    record = verdict.record
    lines = [
        f"rebuild of {record.path} ({record.level} contract): {'PASS' if verdict.passed else 'FAIL'}"
        + (f", diagnosis: {verdict.diagnosis}" if verdict.diagnosis else "")
    ]
    for stage in verdict.stages:
        lines.append(f"  {stage.name:<12} {stage.status:<8} {stage.seconds:6.1f} s  {stage.detail}")
    tail = verdict.log_tail
    if tail:
        lines += ["  log tail:", *("    " + line for line in tail.splitlines()[-10:])]
    lines.append("claim: " + verdict.claim.text)
    return lines


def preflight_command(options: PreflightOptions, output: Path | None, fmt: str) -> CommandResult:
    report = run_preflight(options)
    payload = json.dumps(report.as_json(), indent=2)
    if output is not None:
        atomic_write(output, payload + "\n")
    return CommandResult(report.exit_code, [payload if fmt == "json" else render_text(report)])


def linux_only(platform: str) -> None:
    """A rebuild runs code under test in a Linux sandbox and ends what it leaves behind with Linux's
    process controls (core/processes.py, rebuild/sandbox.py): elsewhere it is refused before
    anything starts, in words, with exit 2."""
    if not platform.startswith("linux"):
        raise UsageError(
            f"reprogate rebuild runs on Linux only (this system is {platform}): the sandbox of the code under test (bubblewrap), "
            "the process control that ends what it leaves behind and the launchers are Linux's",
            hint="rebuild on a Linux runner (the reference-rebuild workflow's); validate, detect, digest, interval, report and "
            "gate --dry-run run here, and rebuild --dry-run --launcher kubernetes writes its manifests anywhere",
        )


def rebuild_command(record: Path, options: RebuildOptions, output_dir: Path | None, fmt: str, quiet: bool = False) -> CommandResult:
    if not options.dry_run:
        linux_only(sys.platform)
    switch_off(quiet or fmt != "text")  # the progress line is for a person reading text at a terminal
    nonce = check_nonce(options.nonce)  # before any folder is made
    doc = load_document(record)
    chosen = check_before_running(doc, record, options)  # the record's own problems first, then the output folder's
    existed = output_dir is not None and output_dir.exists()
    output_dir = fresh_output(output_dir, options.root or repository_root(record.parent), options.dry_run)
    options = dataclasses.replace(options, output=output_dir, nonce=nonce)
    try:
        if options.dry_run:
            return dry_run_command(doc, options, output_dir, chosen)
        rebuilt = run_rebuild(record, options, (doc, chosen))
    except ReprogateError:
        if not existed and not any(output_dir.iterdir()):
            output_dir.rmdir()  # refused before anything was written: the folder it made goes again
        raise
    written = rebuilt.verdict.to_json()
    verdict = Verdict.from_json(written, str(output_dir / "verdict.json"))  # as every reader reads it: its text redacted, its shape the schema's
    report = redact(markdown(verdict))  # the verdict's text is redacted already; what the report adds to it (names, values) is too
    atomic_write(output_dir / "verdict.json", json.dumps(written, indent=2) + "\n")
    atomic_write(output_dir / "report.md", report)
    result = CommandResult(
        rebuilt.verdict.code(),
        stderr=[
            f"wrote {output_dir / 'verdict.json'}, {output_dir / 'report.md'} and {output_dir / 'rebuild-record.yaml'}"
            + (f"; each rank's output in {output_dir / 'ranks'}" if rebuilt.verdict.logs else "")
        ],
    )
    if rebuilt.escaped:
        ended = f"ended {rebuilt.escaped} process(es) the code under test had left running (detached from its ranks) before writing the verdict"
        result.stderr.insert(0, ended)
    if fmt == "json":
        result.stdout = [json.dumps(written, indent=2)]
        return result
    result.stdout = text_summary(verdict)
    if fmt == "github":
        failed = next((s for s in verdict.stages if s.status == "fail"), None)
        if failed:
            result.stdout.insert(
                0,
                workflow.annotation("error", f"{failed.name}: {failed.detail}", verdict.record.path, title=f"reprogate rebuild: {failed.name}"),
            )
        result.summary = report
        result.outputs = {
            "verdict": "pass" if verdict.passed else "fail",
            "diagnosis": verdict.diagnosis or "",
            "report-path": str(output_dir / "report.md"),
            "out-dir": str(output_dir),
        }
    return result


def dry_run_command(doc: Document, options: RebuildOptions, output_dir: Path, chosen: Chosen) -> CommandResult:
    """What the launcher would submit, written and not submitted: Kubernetes manifests."""
    if chosen.launcher.name != kubernetes.NAME:
        raise UsageError(
            "--dry-run writes the Kubernetes manifests of a rebuild (--launcher kubernetes)",
            hint="the slurm launcher leaves the job.sh and rank.sh it submits in the work folder's runs/*/logs (keep them with --workdir)",
        )
    workdir = (options.workdir or Path("/reprogate/work")).absolute()
    documents = kubernetes.rendered(doc.data, options.image, workdir, options.world_size, time_limit(options), options.preflight_timeout)
    target = output_dir / "kubernetes.yaml"
    atomic_write(
        target,
        "# reprogate rebuild --dry-run: a headless Service and an indexed Job; the work folder is the claim mounted at "
        + str(workdir)
        + "\n"
        + yaml.safe_dump_all(documents, sort_keys=False),
    )
    kinds = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in documents)
    return CommandResult(ExitCode.OK, [f"wrote {target}: {kinds} (not submitted)"])


def interval_command(record: Path, alpha: float | None) -> CommandResult:
    stored = store(record, alpha)
    line = (
        f"{record}: {percent(1 - stored['alpha'])} prediction interval [{stored['low']:.6g}, "
        f"{stored['high']:.6g}] from n={stored['n']} seeds (mean {stored['mean']:.6g}, sd {stored['sd']:.3g})"
    )
    notices = [f"notice: {part}" for part in str(stored.get("notice", "")).split("; ") if part]
    return CommandResult(ExitCode.OK, [line], stderr=notices)


def plan_command(record: Path, alpha: float | None = None, gpu_hour_cost: float | None = None, fmt: str = "text") -> CommandResult:
    doc = load_document(record)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        raise UsageError(f"{record} is not a run record (kind: RunRecord)")
    record_read = read_inputs(doc)
    if gpu_hour_cost is not None and not (math.isfinite(gpu_hour_cost) and gpu_hour_cost >= 0):
        raise UsageError(f"--gpu-hour-cost must be a finite number of at least 0, not {gpu_hour_cost!r}")
    found = plan(record_read, alpha, gpu_hour_cost)
    if fmt == "json":
        return CommandResult(ExitCode.OK, [json.dumps({"record": str(record), **found.to_json()}, indent=2)])
    return CommandResult(ExitCode.OK, [f"{record}:", *found.lines()])


MAX_TRACE_BYTES = 1024 * 1024 * 1024


def _read_traces(paths: list[Path]) -> list[TraceEvent]:
    """Events of trace files given on the command line, read as untrusted input: a FIFO is not
    waited on, and a line that is not UTF-8, not JSON or not an object is named by file and line."""
    events: list[TraceEvent] = []
    for path in paths:
        raw = read_bounded(path, MAX_TRACE_BYTES, "the trace", "a trace")
        if not raw.strip():
            raise UsageError(f"{path}: the trace is empty (or a pipe nobody writes to)")
        for number, line in enumerate(raw.split(b"\n"), 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                events.append(parse_event(parse_json_bytes(line, where, "the line"), where))
            except TraceError as exc:
                raise UsageError(str(exc)) from None
    return sorted(events, key=trace_order)


def compare_command(
    reference: Path, rebuilt: list[Path], tolerance: tuple[float, float] | None, tensors: list[str], first: int, last: int | None
) -> CommandResult:
    try:
        ref = compare.step_events(_read_traces([reference]), first, last)
        new = compare.step_events(_read_traces(rebuilt), first, last)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot read a trace: {exc}") from None
    outcomes = [("batches", compare.compare_batches(ref, new))]
    if tensors:
        outcomes.append(("tensors", compare.compare_tensors(ref, new, tensors)))
    abs_tol, rel_tol = tolerance or (0.0, 0.0)
    try:
        outcomes.append(("steps", compare.compare_values(ref, new, ["loss"], abs_tol, rel_tol)[0]))
    except TraceError as exc:
        raise UsageError(f"cannot compare the traces: {exc}") from None
    lines = [f"{name:<8} {outcome.status:<8} {outcome.detail}" for name, outcome in outcomes]
    failed = any(outcome.status == "fail" for _, outcome in outcomes)
    return CommandResult(ExitCode.FAILED if failed else ExitCode.OK, lines)


def report_command(verdict_path: Path, fmt: str) -> CommandResult:
    verdict = read_verdict(verdict_path)
    return CommandResult(ExitCode.OK if verdict.passed else ExitCode.FAILED, render(verdict, fmt).splitlines())
