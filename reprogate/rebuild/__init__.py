"""`reprogate rebuild`: the drill. Stages in order; the first failure is the diagnosis.

The verdict (schemas/verdict.schema.json) records every stage, the environment that was realized
and what it was told from inside, the seeds, each statistical test with its α, n, m and power,
the loss curves, and the bounded claim: what was replayed, on what, compared how, and what the
claim does not cover. Next to it the rebuild writes its own run record (rebuild/record.py).

Everything that can be refused without running (an invalid record, a non-empty work folder, an
unknown realizer, an equivalence test without its margin) is refused before the first stage,
with exit 2, so a long run never ends in a usage error.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.core import processes
from reprogate.core.canonical import canonical_digest
from reprogate.core.config import repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import Document, display_path, load_document
from reprogate.core.errors import UsageError
from reprogate.core.redact import redact
from reprogate.rebuild.compare import loss_curve
from reprogate.rebuild.context import RebuildContext, RebuildOptions, StageResult
from reprogate.rebuild.realizers.base import ENVIRONMENTS
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.stages import STAGES


class RebuildUsageError(UsageError):
    """The rebuild cannot begin: the record is unreadable or invalid, or the work folder is not empty (exit 2)."""


def record_digest(data: dict[str, Any]) -> str:
    """The digest a verdict binds to: the record without its baseline section (promoting a
    record must not invalidate the verdict that allowed the promotion)."""
    return canonical_digest({k: v for k, v in data.items() if k != "baseline"})


def check_before_running(doc: Document, record: Path, options: RebuildOptions) -> None:
    """Every refusal that needs no run: raised before the first stage (exit 2)."""
    from reprogate.validate.runner import Options, validate_document

    data = doc.data
    if not isinstance(data, dict) or data.get("kind") != "RunRecord":
        raise RebuildUsageError(f"{record}: not a run record (kind: RunRecord)")
    findings = [d for d in validate_document(doc, "RunRecord", Options(addressed_files=False), {}, record) if d.severity.value == "error"]
    if findings:
        first = findings[0]
        raise RebuildUsageError(
            f"the record is not valid ({first.path}:{first.location.line}:{first.location.col} {first.field} {first.message})",
            hint=f"run `reprogate validate {record}`",
        )
    if options.environment not in ENVIRONMENTS:
        raise RebuildUsageError(f"--environment must be one of {', '.join(ENVIRONMENTS)}")
    from reprogate.rebuild.seed_plan import runs_for

    metric = (data.get("contract") or {}).get("metric")
    equivalence = isinstance(metric, dict) and metric.get("test") == "equivalence"
    runs = runs_for(options.seeds, data)
    if runs > 1 and equivalence and metric.get("margin") is None:
        raise RebuildUsageError(
            f"{runs} rebuild seeds with test: equivalence needs contract.metric.margin; the record declares none",
            hint="declare the equivalence margin in the record (before the drill), or drop `test: equivalence` for the two-sample t",
        )
    from reprogate.core.seedstats import MAX_PLANNED_SEEDS

    if runs > MAX_PLANNED_SEEDS:
        raise RebuildUsageError(f"--seeds {runs}: at most {MAX_PLANNED_SEEDS} runs (`reprogate interval RECORD --plan` says how many a shift needs)")
    seeds = data.get("seeds") or {}
    replay = [s for s in seeds.get("replay") or [] if isinstance(s, int)]
    trace_run = 1 if (data.get("contract") or {}).get("level") in ("bitwise", "behavioral") else 0
    if replay and runs - trace_run > len(replay):
        raise RebuildUsageError(
            f"{runs} rebuild seeds: the record asks to replay {len(replay)} named seed(s) (seeds.replay) and no others",
            hint="name more seeds in seeds.replay, or drop it to draw fresh seeds",
        )
    from reprogate.rebuild import launchers, realizers

    realizer = realizers.choose(data, options.realizer)
    launcher = launchers.choose(data, options.launcher)
    from reprogate.rebuild import sandbox

    unsafe = sandbox.refusal(realizer.name, launcher.name, options.environment, options.allow_unsandboxed)
    if unsafe is not None:
        from reprogate.core.errors import InfrastructureError

        hint = "install bubblewrap on the runner, or pass --allow-unsandboxed where the runner is ephemeral (the claim then says so)"
        raise InfrastructureError(unsafe, hint=hint)
    if not options.dry_run:  # a partition too small for the record, a scheduler that does not answer: before anything runs
        launcher.admit(launchers.record_shape(data, options.world_size))


def run_rebuild(record: Path, options: RebuildOptions, checked: Document | None = None) -> tuple[dict[str, Any], RebuildContext]:
    """Run the stages; returns the verdict and the context (for the rebuild record). `checked`:
    the record, already loaded and through check_before_running. With --contract-from, the
    record's judging sections are another revision's (judged_by.py)."""
    doc = checked
    if doc is None:
        doc = load_document(record)
        check_before_running(doc, record, options)
    head_data, note = None, ""
    if options.contract_from:
        import dataclasses

        from reprogate.rebuild.judged_by import from_base

        judged = from_base(record, doc.data, options.contract_from)
        head_data, note = doc.data, judged.note
        doc = dataclasses.replace(doc, data=judged.data)
        check_before_running(doc, record, options)
    root = (options.root or repository_root(record.parent)).resolve()
    temporary = options.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="reprogate-rebuild-")) if temporary else options.workdir
    assert workdir is not None
    if workdir.exists() and any(workdir.iterdir()):
        raise RebuildUsageError(f"work folder {workdir} is not empty; a rebuild starts from an empty worker")
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = RebuildContext(record, doc, root, workdir.resolve(), options, head_data=head_data, judged_note=note)
    # What runs below us now (in a test session: its daemons) is spared; whatever the code under
    # test starts and leaves behind, however detached, is ours to end before a verdict exists.
    spared = frozenset(processes.descendants())
    reaper = processes.become_subreaper()
    started_at = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    started = time.monotonic()
    results: list[StageResult] = []
    failed: StageResult | None = None
    try:
        for name, stage in STAGES.items():
            if failed is not None:
                results.append(StageResult("not-run", f"not run: {failed.name} failed first", name=name))
                continue
            begin = time.monotonic()
            result = stage.run(ctx)
            result.name, result.seconds = name, time.monotonic() - begin
            results.append(result)
            if result.status == "fail":
                failed = result
        verdict = _verdict(ctx, results, failed, started_at, time.monotonic() - started)
        from reprogate.rebuild.record import rebuild_record

        options.output.mkdir(parents=True, exist_ok=True)
        ctx.rebuild_record = rebuild_record(ctx, verdict, options.output)  # before the work folder goes
    finally:
        ctx.close()
        ctx.escaped = processes.end_escaped(spared)
        if reaper:
            processes.become_subreaper(False)
        if temporary:
            from reprogate.rebuild.inject import make_writable

            make_writable(workdir)
            shutil.rmtree(workdir, ignore_errors=True)
    verdict["seconds"] = round(time.monotonic() - started, 3)
    return verdict, ctx


def _environment(ctx: RebuildContext) -> dict[str, Any]:
    """The environment the ranks got, as realized and as told from inside; then the machine."""
    env: dict[str, Any] = {"requested": ctx.options.environment}
    if ctx.choice is not None:
        env["realizer"] = ctx.choice.name
        env["why"] = ctx.choice.reason
    if ctx.realized is not None:
        env.update({f"realized_{k}" if k in env else k: v for k, v in ctx.realized.facts.items() if k != "realizer"})
    if ctx.probe:
        env["inside"] = {k: v for k, v in ctx.probe.items() if k != "packages"}
        packages = ctx.probe.get("packages") or {}
        env["inside"]["packages"] = len(packages)
    env.update({k: v for k, v in ctx.facts.items() if v not in (None, "", []) and k != "spare_port"})
    from reprogate.rebuild.environments import side_by_side

    env["compared"] = side_by_side(ctx.data, env, (ctx.probe or {}).get("packages"), ctx.reference_events)
    return env


def _verdict(ctx: RebuildContext, results: list[StageResult], failed: StageResult | None, started_at: str, seconds: float) -> dict[str, Any]:
    from reprogate.rebuild.claim import claim

    verdict: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "kind": "Verdict",
        "verdict": "fail" if failed else "pass",
        "diagnosis": failed.name if failed else None,
        "infrastructure": bool(failed and failed.exit_code == ExitCode.INFRA),
        "exit_code": int(failed.exit_code) if failed else 0,
        "record": {
            "path": display_path(ctx.record_path),
            "name": ctx.section("metadata", "name"),
            "digest": record_digest(ctx.checked_out),
            "level": ctx.level,
        },
        "run": RunBinding.from_environment(ctx.options.nonce).as_json(),
        "stages": [
            {
                "name": r.name,
                "status": r.status,
                "seconds": round(r.seconds, 3),
                "detail": redact(r.detail),
                **({"log_tail": redact(r.log_tail)} if r.log_tail else {}),
            }
            for r in results
        ],
        "environment": _environment(ctx),
        "seeds": {
            "rebuilt": [r.seed for r in ctx.runs],
            "reference": [v["seed"] for v in ctx.section("reference", "metric", "values") or [] if isinstance(v, dict)],
            "metric": list(ctx.seed_plan.metric_seeds),
            "source": ctx.seed_plan.source,
        },
        "tests": ctx.tests,
        "curves": {"reference": loss_curve(ctx.reference_events), "rebuilt": loss_curve(ctx.runs[0].events) if ctx.runs else []},
        "started_at": started_at,
        "seconds": round(seconds, 3),
        "tool": f"reprogate {__version__}",
    }
    verdict["claim"] = claim(ctx, verdict)
    return verdict


def exit_code(verdict: dict[str, Any]) -> ExitCode:
    if verdict["verdict"] == "pass":
        return ExitCode.OK
    return ExitCode(verdict.get("exit_code") or (ExitCode.INFRA if verdict.get("infrastructure") else ExitCode.FAILED))
