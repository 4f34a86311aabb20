"""The runner of `reprogate rebuild`: the stages in order; the first failure is the diagnosis.

Everything that can be refused without running (an invalid record, a non-empty work folder, an
unknown realizer, an equivalence test without its margin) is refused before the first stage,
with exit 2, so a long run never ends in a usage error. It lives here, not in the package's
__init__, so importing one small module of the package (options.py, verdict.py) does not load it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.core import processes
from reprogate.core.config import repository_root
from reprogate.core.documents import Document, display_path, load_document
from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.optional import preload
from reprogate.core.progress import Activity
from reprogate.core.record import read_record
from reprogate.core.seedstats import MAX_PLANNED_SEEDS, trace_replays
from reprogate.core.timestamps import utc_now
from reprogate.core.yamlout import dump_yaml
from reprogate.rebuild import launchers, realizers, sandbox
from reprogate.rebuild.claim import bounded_claim
from reprogate.rebuild.code_origin import CodeOrigin, decide, own_code
from reprogate.rebuild.compare import loss_curve
from reprogate.rebuild.comparisons import StatedTest
from reprogate.rebuild.environments import RebuiltSide, side_by_side
from reprogate.rebuild.inject import make_writable
from reprogate.rebuild.judged_by import from_base
from reprogate.rebuild.launchers.base import Launcher
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.rank_logs import keep_rank_logs
from reprogate.rebuild.realizers.base import ENVIRONMENTS, Choice
from reprogate.rebuild.record import rebuild_record
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.seed_plan import runs_for
from reprogate.rebuild.stages import DOING, STAGES
from reprogate.rebuild.stages.base import StageResult
from reprogate.rebuild.stages.compare import first_difference, loss_figures
from reprogate.rebuild.state import RebuildJob, RebuildState, record_digest
from reprogate.rebuild.verdict import FileRef, RecordRef, SeedsUsed, StageRecord, StatedCause, Verdict
from reprogate.rebuild.verdict_environment import VerdictEnvironment
from reprogate.validate.runner import Options, validate_document

REBUILD_RECORD = "rebuild-record.yaml"


class RebuildUsageError(UsageError):
    """The rebuild cannot begin: the record is unreadable or invalid, or the work folder is not empty (exit 2)."""


@dataclass(frozen=True)
class Chosen:
    """The realizer and launcher of a rebuild, chosen once before anything runs."""

    realizer: Choice
    launcher: Launcher


def check_before_running(doc: Document, record: Path, options: RebuildOptions, code: CodeOrigin | None = None) -> Chosen:
    """Every refusal that needs no run: raised before the first stage (exit 2, or 3 for a runner
    that cannot sandbox or a scheduler that cannot take the shape). `code`: whose code the
    rebuild runs, once --contract-from has named a base (code_origin.py)."""
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
    typed = read_record(data, schema_valid=True)  # validated just above
    assert typed.contract is not None  # a schema-valid record has one
    metric = typed.contract.metric
    runs = runs_for(options.seeds, typed)
    if runs > 1 and metric is not None and metric.test == "equivalence" and metric.margin is None:
        raise RebuildUsageError(
            f"{runs} rebuild seeds with test: equivalence needs contract.metric.margin; the record declares none",
            hint="declare the equivalence margin in the record (before the drill), or drop `test: equivalence` for the two-sample t",
        )
    if runs > MAX_PLANNED_SEEDS:
        raise RebuildUsageError(f"--seeds {runs}: at most {MAX_PLANNED_SEEDS} runs (`reprogate interval RECORD --plan` says how many a shift needs)")
    replay = list(typed.seeds.replay or ()) if typed.seeds is not None else []
    trace_run = trace_replays(typed.contract.level)
    if replay and runs - trace_run > len(replay):
        raise RebuildUsageError(
            f"{runs} rebuild seeds: the record asks to replay {len(replay)} named seed(s) (seeds.replay) and no others",
            hint="name more seeds in seeds.replay, or drop it to draw fresh seeds",
        )
    realizer = realizers.choose(data, options.realizer, options.environment)
    launcher = launchers.choose(typed, options.launcher)
    foreign = (code or own_code()).foreign(options.environment)
    unsafe = sandbox.refusal(realizers.REALIZERS[realizer.name].isolation, launcher.name, foreign, options.allow_unsandboxed)
    if unsafe is not None:
        hint = "install bubblewrap on the runner, or pass --allow-unsandboxed where the runner is ephemeral (the claim then says so)"
        raise InfrastructureError(unsafe, hint=hint)
    if not options.dry_run:  # a partition too small for the record, a scheduler that does not answer: before anything runs
        launcher.admit(launchers.record_shape(typed, options.world_size))
    return Chosen(realizer, launcher)


def job_for(
    record: Path,
    doc: Document,
    root: Path,
    workdir: Path,
    options: RebuildOptions,
    chosen: Chosen | None = None,
    head_data: dict[str, Any] | None = None,
    judged_note: str = "",
    code: CodeOrigin | None = None,
    draft: bool = False,
) -> RebuildJob:
    """The job of a rebuild (or of `init` making a reference, which needs no refusal check).
    `head_data`, `judged_note`, `code`: under --contract-from, the record as checked out, where the
    judging contract came from, and whose code runs; `draft`: init's draft (RebuildJob's fields)."""
    if chosen is None:
        chosen = Chosen(realizers.choose(doc.data, options.realizer, options.environment), launchers.choose(read_record(doc.data), options.launcher))
    return RebuildJob(record, doc, root, workdir, options, chosen.realizer, chosen.launcher, head_data, judged_note, code or own_code(), draft)


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild leaves: its verdict, the run record it wrote about itself, and how many
    processes the code under test had left running."""

    verdict: Verdict
    record: dict[str, Any]
    escaped: int


def run_rebuild(record: Path, options: RebuildOptions, checked: tuple[Document, Chosen] | None = None) -> Rebuilt:
    """Run the stages and write the rebuild record into options.output (the caller writes the
    verdict and report beside it). `checked`: the record, already loaded, and what
    check_before_running chose for it. With --contract-from, the record's judging sections are
    another revision's (judged_by.py), and they are checked again."""
    if checked is None:
        doc = load_document(record)
        chosen = check_before_running(doc, record, options)
    else:
        doc, chosen = checked
    head_data, note, code = None, "", own_code()
    root = (options.root or repository_root(record.parent)).resolve()
    if options.contract_from:
        judged = from_base(record, doc.data, options.contract_from)
        head_data, note = doc.data, judged.note
        code = decide(root, head_data, judged.base, options.contract_from)
        doc = dataclasses.replace(doc, data=judged.data)
        chosen = check_before_running(doc, record, options, code)
    temporary = options.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="reprogate-rebuild-")) if options.workdir is None else options.workdir
    if workdir.exists() and any(workdir.iterdir()):
        raise RebuildUsageError(f"work folder {workdir} is not empty; a rebuild starts from an empty worker")
    workdir.mkdir(parents=True, exist_ok=True)
    state = RebuildState(job_for(record, doc, root, workdir.resolve(), options, chosen, head_data=head_data, judged_note=note, code=code))
    # Every optional library now, absent ones recorded as absent: a module the code under test
    # plants on reprogate's import path later is never imported (core/optional.py).
    preload()
    # What runs below us now (in a test session: its daemons) is spared; whatever the code under
    # test starts and leaves behind, however detached, is ours to end before a verdict exists.
    spared = frozenset(processes.descendants())
    reaper = processes.become_subreaper()
    started_at = utc_now()
    started = time.monotonic()
    stages: list[StageRecord] = []
    results: list[StageResult] = []
    failed: StageRecord | None = None
    try:
        for name, stage in STAGES.items():
            if failed is not None:
                stages.append(StageRecord(name, "not-run", 0.0, f"not run: {failed.name} failed first"))
                continue
            begin = time.monotonic()
            with Activity(f"rebuild: {name}, {DOING[name]}"):
                result = stage.run(state)
            results.append(result)
            stages.append(StageRecord(name, result.status, time.monotonic() - begin, result.detail, result.log_tail, result.exit_code, result.cause))
            if result.status == "fail":
                failed = stages[-1]
        of = RecordRef(display_path(record), state.job.name, record_digest(state.job.checked_out), state.job.level)
        options.output.mkdir(parents=True, exist_ok=True)
        written = rebuild_record(state, of, failed is None, started_at, options.output)  # before the work folder goes
        record_file = _write_rebuild_record(written, of, options.output)
    finally:
        state.close()
        escaped = processes.end_escaped(spared)
        logs = keep_rank_logs(workdir, options.output) if options.output.is_dir() else ()
        if reaper:
            processes.become_subreaper(False)
        if temporary:
            make_writable(workdir)
            shutil.rmtree(workdir, ignore_errors=True)
    verdict = _verdict(state, of, tuple(stages), results, failed, started_at, time.monotonic() - started, record_file, logs)
    return Rebuilt(verdict, written, escaped)


def _write_rebuild_record(data: dict[str, Any], of: RecordRef, folder: Path) -> FileRef:
    text = dump_yaml(data, f"Run record of a rebuild of {of.path} (reprogate rebuild); its verdict is verdict.json beside it")
    target = folder / REBUILD_RECORD
    atomic_write(target, text)
    return FileRef(str(target), "sha256:" + hashlib.sha256(text.encode()).hexdigest())


def _environment(state: RebuildState) -> dict[str, Any]:
    """The environment the ranks got, as realized and as told from inside; then the machine; then
    side by side with the record."""
    env: dict[str, Any] = {"requested": state.job.options.environment}
    if state.environment is not None:
        env["realizer"] = state.environment.choice.name
        env["why"] = state.environment.choice.reason
        env.update({f"realized_{k}" if k in env else k: v for k, v in state.environment.realized.identity.to_json().items()})
        env["sandbox"] = state.environment.sandbox
    env["code"] = state.job.code.to_json()
    if state.probe is not None and state.probe.facts:
        env["inside"] = state.probe.inside()
    facts: dict[str, Any] = {}
    if state.fetched is not None and state.fetched.deferred:
        facts["source_changes_deferred"] = dict(state.fetched.deferred)
    if state.ranks is not None:
        facts.update(state.ranks.facts())
    if state.machine is not None:
        facts.update(state.machine.facts())
    env.update({k: v for k, v in facts.items() if v not in (None, "", [])})
    env["compared"] = side_by_side(state.job.data, RebuiltSide.of(state), state.reference_events)
    return env


def _verdict(
    state: RebuildState,
    of: RecordRef,
    stages: tuple[StageRecord, ...],
    results: list[StageResult],
    failed: StageRecord | None,
    started_at: str,
    seconds: float,
    record_file: FileRef,
    logs: tuple[str, ...] = (),
) -> Verdict:
    job = state.job
    tests = tuple(r.comparison for r in results if r.comparison is not None)
    runs = state.runs.seeds if state.runs is not None else ()
    seeds = SeedsUsed(
        tuple(r.seed for r in runs),
        tuple(v.seed for v in (job.record.reference.metric.values if job.record.reference and job.record.reference.metric else ())),
        tuple(job.seed_plan.metric_seeds),
        job.seed_plan.source,
    )
    return Verdict(
        passed=failed is None,
        diagnosis=failed.name if failed else None,
        exit_code=int(failed.exit_code) if failed else 0,
        record=of,
        run=RunBinding.from_environment(job.options.nonce),
        stages=stages,
        environment=VerdictEnvironment(_environment(state)),
        seeds=seeds,
        tests=tuple(StatedTest.of(t) for t in tests),
        curves={"reference": loss_curve(state.reference_events), "rebuilt": loss_curve(runs[0].events) if runs else []},
        started_at=started_at,
        seconds=seconds,
        tool=f"reprogate {__version__}",
        claim=bounded_claim(state, stages, tests, failed, seeds.rebuilt),
        rebuild_record=record_file,
        logs=logs,
        first_difference=StatedCause.from_json(cause.to_json(), as_read=False) if (cause := first_difference(state, failed.name if failed else None)) else None,
        loss=loss_figures(state),
    )
