"""run: each rebuild seed runs the record's entrypoint on every rank (which seeds: seed_plan.py).

The first seed uses the rank hosts the preflight proved (warm: torch already imported); later
seeds start fresh rank hosts. Each rank gets REPROGATE_SEED, REPROGATE_TRACE_DIR (where
reprogate.trace writes) and, with --steps, REPROGATE_MAX_STEPS — the entrypoint contract the
README documents — and a fresh rendezvous port.
"""

from __future__ import annotations

from pathlib import Path

from reprogate.core.errors import ReprogateError
from reprogate.core.fileio import read_written_by_code
from reprogate.core.ports import free_port
from reprogate.core.record import JobConfig
from reprogate.rebuild.ranks import RankHosts
from reprogate.rebuild.stages.base import StageResult, failed, passed
from reprogate.rebuild.state import RebuildState, Runs, SeedRun
from reprogate.runtime.trace import MetaEvent, StepEvent, TraceEvent, meta_events, trace_events


def run(state: RebuildState) -> StageResult:
    done_runs: list[SeedRun] = []
    try:
        return _run_seeds(state, done_runs)
    finally:  # the seeds that ran, a failing one among them: the verdict lists them and draws the first
        state.runs = Runs(tuple(done_runs))


def _run_seeds(state: RebuildState, done_runs: list[SeedRun]) -> StageResult:
    job, ranks, environment = state.job, state.ranks, state.environment
    assert ranks is not None and environment is not None
    entry = list(job.job_section.entrypoint)
    cwd = job.ranks_cwd
    first, last = job.step_range
    seeds = job.seed_plan.all
    hosts = ranks.hosts
    for index, seed in enumerate(seeds):
        folder = job.workdir / "runs" / f"seed-{seed}"
        trace_dir = folder / "trace"
        trace_dir.mkdir(parents=True, exist_ok=True)
        if index > 0:  # a fresh set of ranks for every further seed
            hosts.stop()
            hosts = RankHosts(
                ranks.launcher,
                environment.realized,
                ranks.shape,
                env=hosts.env,
                folder=folder,
                within=job.workdir,
                cwd=cwd,
                preflight=False,
                backend=ranks.backend,
                stage_timeout=job.options.preflight_timeout,
            )
            state.on_close(hosts.stop)
            try:
                hosts.start()
                ready = hosts.wait_ready()
            except ReprogateError as exc:  # a scheduler that refuses or stops answering
                return failed(f"seed {seed}: {exc.message}", exit_code=int(exc.exit_code), seed=seed)
            if ready.failed:
                return failed(
                    f"seed {seed}: the ranks did not start: {ready.detail}", log_tail=ready.log_tail, exit_code=3 if ready.infrastructure else 1, seed=seed
                )
            port = ready.spare_port
        else:
            port = ranks.spare_port
        orders = {"REPROGATE_SEED": str(seed), "REPROGATE_TRACE_DIR": str(trace_dir), "MASTER_PORT": str(port or free_port())}
        if job.options.steps is not None and last is not None:
            orders["REPROGATE_MAX_STEPS"] = str(last)
        hosts.go(entry, cwd, orders)
        try:
            done = hosts.wait_done(job.options.timeout)
        except ReprogateError as exc:  # the scheduler stopped answering during the run
            return failed(f"seed {seed}: {exc.message}", exit_code=int(exc.exit_code), seed=seed)
        try:  # written by the code under test: no link, no FIFO; read once, and these bytes are what counts
            traces = [_written(path, job.workdir) for path in sorted(trace_dir.glob("trace-rank*.jsonl"))]
            events = trace_events(data.decode("utf-8") for data in traces)
        except (OSError, ValueError) as exc:
            return failed(f"seed {seed}: the trace cannot be read: {exc}", seed=seed)
        done_runs.append(SeedRun(seed, tuple(events), done.ok, done.seconds, done.log_tail, tuple(traces) if index == 0 else ()))
        if not done.ok:
            return failed(f"seed {seed}: {done.detail}", log_tail=done.log_tail, seed=seed, rank=done.failed_rank)
        if not any(isinstance(e, StepEvent) for e in events):
            return failed(f"seed {seed}: the entrypoint finished but wrote no step trace (does it use reprogate.trace.Tracer?)", log_tail=hosts.log_tail(0))
        applied = sorted({e.seed for e in meta_events(events) if e.seed is not None})
        if applied and applied != [seed]:  # a fresh seed the script never applied would be judged as one it did
            return failed(
                f"seed {seed}: the run applied seed {', '.join(map(str, applied))} (its trace's meta), not the one it was given: "
                "the script must seed from REPROGATE_SEED (seed_everything(seed_from_env(...)))",
                seed=seed,
            )
        wrong = _configuration_differs(job.job_section.config, events)
        if wrong:
            return failed(f"seed {seed}: {wrong}", seed=seed)
    steps = max(e.step for e in done_runs[0].events if isinstance(e, StepEvent))
    if job.level == "startup":
        steps_pinned = job.record.contract.steps if job.record.contract is not None else None
        wanted = (steps_pinned.count if steps_pinned is not None else None) or 1
        if steps < wanted:
            return failed(f"the run reached step {steps}; the startup contract needs {wanted}")
    return passed(f"{len(seeds)} seed(s) {seeds} x {job.world_size} rank(s) ran to step {steps} in {sum(r.seconds for r in done_runs):.1f} s", seeds=seeds)


def _configuration_differs(config: JobConfig, events: list[TraceEvent]) -> str:
    """For a configuration pinned from the trace (code, job.config.hash_of: trace): the first
    rank whose Tracer(config=...) digest is not the pinned hash, or that records none. `init`
    makes the reference before the hash exists, and so is not checked here."""
    if config.hash_of != "trace" or config.hash is None:
        return ""
    name = config.id or config.path
    metas: list[MetaEvent] = sorted((e for e in events if isinstance(e, MetaEvent)), key=lambda e: str(e.rank))
    if not metas:
        return f"configuration {name} (code): the run's trace has no meta, so what it computed is unknown"
    for meta in metas:
        digest = meta.config_digest
        if digest != config.hash:
            said = f"the configuration {digest}" if digest is not None else "no configuration"
            return (
                f"configuration {name} (code) computed other values: rank {meta.rank} handed "
                f"Tracer(config=...) {said}, the record pins {config.hash} (job.config.hash_of: trace)"
            )
    return ""


MAX_RANK_TRACE = 1024 * 1024 * 1024  # as `compare` reads traces


def _written(path: Path, workdir: Path) -> bytes:
    """A rank's trace: a regular file, not followed through a link (nor a folder of the work
    folder swapped for one), within its bound."""
    data = read_written_by_code(path, MAX_RANK_TRACE, within=workdir)
    if data is None:
        raise ValueError(f"{path.name} is larger than {MAX_RANK_TRACE:,} bytes")
    return data
