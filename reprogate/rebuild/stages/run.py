"""run: each rebuild seed runs the record's entrypoint on every rank (which seeds: seed_plan.py).

The first seed uses the rank hosts the preflight proved (warm: torch already imported); later
seeds start fresh rank hosts. Each rank gets REPROGATE_SEED, REPROGATE_TRACE_DIR (where
reprogate.trace writes) and, with --steps, REPROGATE_MAX_STEPS — the entrypoint contract the
README documents — and a fresh rendezvous port.
"""

from __future__ import annotations

from pathlib import Path

from reprogate.core.errors import ReprogateError
from reprogate.rebuild.context import RebuildContext, SeedRun, StageResult, failed, passed


def run(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild.launchers.local import free_port
    from reprogate.rebuild.ranks import RankHosts
    from reprogate.runtime.trace import trace_events

    assert ctx.hosts is not None and ctx.realized is not None and ctx.launcher is not None and ctx.shape is not None
    entry = [str(a) for a in ctx.section("job", "entrypoint")]
    cwd = ctx.workdir / (ctx.section("job", "workdir") or ctx.section("source", "path") or ".")
    first, last = ctx.step_range
    seeds = ctx.seed_plan.all
    for index, seed in enumerate(seeds):
        folder = ctx.workdir / "runs" / f"seed-{seed}"
        trace_dir = folder / "trace"
        trace_dir.mkdir(parents=True, exist_ok=True)
        hosts = ctx.hosts
        if index > 0:  # a fresh set of ranks for every further seed
            hosts.stop()
            hosts = RankHosts(
                ctx.launcher,
                ctx.realized,
                ctx.shape,
                hosts.env,
                folder,
                cwd,
                False,
                hosts.env.get("REPROGATE_PREFLIGHT_BACKEND", "gloo"),
                ctx.options.preflight_timeout,
            )
            ctx.hosts = hosts
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
            port = ctx.facts.get("spare_port")
        orders = {"REPROGATE_SEED": str(seed), "REPROGATE_TRACE_DIR": str(trace_dir), "MASTER_PORT": str(port or free_port())}
        if ctx.options.steps is not None and last is not None:
            orders["REPROGATE_MAX_STEPS"] = str(last)
        hosts.go(entry, cwd, orders)
        try:
            done = hosts.wait_done(ctx.options.timeout)
        except ReprogateError as exc:  # the scheduler stopped answering during the run
            return failed(f"seed {seed}: {exc.message}", exit_code=int(exc.exit_code), seed=seed)
        traces = sorted(trace_dir.glob("trace-rank*.jsonl"))
        try:
            events = trace_events(_written(path) for path in traces)  # written by the code under test: no link, no FIFO
        except (OSError, ValueError) as exc:
            return failed(f"seed {seed}: the trace cannot be read: {exc}", seed=seed)
        outcome = SeedRun(seed, events, done.ok, done.seconds, done.log_tail, traces)
        ctx.runs.append(outcome)
        if not done.ok:
            return failed(f"seed {seed}: {done.detail}", log_tail=done.log_tail, seed=seed, rank=done.failed_rank)
        if not any(e.get("type") == "step" for e in events):
            return failed(f"seed {seed}: the entrypoint finished but wrote no step trace (does it use reprogate.trace.Tracer?)", log_tail=hosts.log_tail(0))
        applied = sorted({e["seed"] for e in events if e.get("type") == "meta" and isinstance(e.get("seed"), int)})
        if applied and applied != [seed]:  # a fresh seed the script never applied would be judged as one it did
            return failed(
                f"seed {seed}: the run applied seed {', '.join(map(str, applied))} (its trace's meta), not the one it was given: "
                "the script must seed from REPROGATE_SEED (seed_everything(seed_from_env(...)))",
                seed=seed,
            )
    steps = max(e["step"] for e in ctx.runs[0].events if e.get("type") == "step")
    if ctx.level == "startup":
        wanted = int(ctx.section("contract", "steps", "count") or 1)
        if steps < wanted:
            return failed(f"the run reached step {steps}; the startup contract needs {wanted}")
    return passed(f"{len(seeds)} seed(s) {seeds} x {ctx.world_size} rank(s) ran to step {steps} in {sum(r.seconds for r in ctx.runs):.1f} s", seeds=seeds)


MAX_RANK_TRACE = 1024 * 1024 * 1024  # as `compare` reads traces


def _written(path: Path) -> str:
    """A rank's trace as text: a regular file, not followed through a link, within its bound."""
    from reprogate.core.fileio import read_written_by_code

    data = read_written_by_code(path, MAX_RANK_TRACE)
    if data is None:
        raise ValueError(f"{path.name} is larger than {MAX_RANK_TRACE:,} bytes")
    return data.decode("utf-8")
