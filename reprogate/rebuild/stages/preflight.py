"""preflight: start the ranks where the launcher puts them, inside the realized environment, and
have each prove its devices, framework and collective before any data is fetched.

The ranks stay up afterwards, torch already imported, waiting for the run stage's order (see
runtime/rank_host.py); the device check against the record's GPU UUIDs runs here, in the
rebuild's own process, through NVML. Rank 0 first tells what its environment holds (Python,
packages, OS: runtime/probe.py) — the probe the envelope and the rebuild record use, asked of a
rank that runs anyway rather than of a process or container of its own.
"""

from __future__ import annotations

import json

from reprogate.core.errors import ReprogateError
from reprogate.rebuild.context import RebuildContext, RebuildOptions, StageResult, failed, passed

BETWEEN_STAGES = 3600.0  # dataset, config and envelope run while the ranks wait; a big dataset takes a while


def time_limit(options: RebuildOptions) -> float:
    """How long one set of ranks may live: starting, the preflight, the stages between it and the
    run (fetching the dataset among them) and one seed's run. A scheduler's limit for the job."""
    from reprogate.rebuild.ranks import PREFLIGHT_STAGES, STARTUP_GRACE

    return STARTUP_GRACE + options.preflight_timeout * len(PREFLIGHT_STAGES) + BETWEEN_STAGES + options.timeout


def preflight(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild import launchers
    from reprogate.rebuild.preflight import check_devices
    from reprogate.rebuild.ranks import RankHosts, rank_environment

    assert ctx.realized is not None and ctx.runtime is not None
    try:
        ctx.launcher = launchers.choose(ctx.data, ctx.options.launcher)
    except ReprogateError as exc:
        return failed(exc.message, exit_code=int(exc.exit_code))
    ctx.shape = launchers.record_shape(ctx.data, ctx.options.world_size, time_limit(ctx.options))
    if ctx.launcher.ranks_run_here:
        devices, gpus = check_devices(ctx.record_path if (ctx.section("devices") or {}).get("gpus") else None)
        ctx.facts["gpus"] = devices.detail
        if devices.status == "fail":
            return failed(f"devices: {devices.detail}")
    else:  # the nodes' devices: each rank host's framework op proves its own; the scheduler assigns them
        gpus = ctx.shape.gpus_per_node
        ctx.facts["gpus"] = f"{gpus} GPU(s) per node, assigned by {ctx.launcher.name}" if gpus else f"no GPU asked of {ctx.launcher.name}"
    try:
        backend = str(ctx.section("execution", "collective", "backend") or ("nccl" if gpus else "gloo"))
        env = rank_environment(ctx.section("execution", "env") or {}, ctx.workdir, ctx.runtime)
        folder = ctx.workdir / "runs" / "preflight"
        cwd = ctx.workdir / (ctx.section("job", "workdir") or ctx.section("source", "path") or ".")
        ctx.hosts = RankHosts(ctx.launcher, ctx.realized, ctx.shape, env, folder, cwd, True, backend, ctx.options.preflight_timeout, probe=True)
        ctx.hosts.start()
    except ReprogateError as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), exit_code=int(exc.exit_code))
    try:
        ready = ctx.hosts.wait_ready()
    except ReprogateError as exc:  # the scheduler stopped answering while the ranks started
        return failed(exc.message, exit_code=int(exc.exit_code))
    ctx.probe = ready.probe  # kept when a rank then fails: the report shows what the environment held
    group = ctx.hosts.group
    ctx.facts.update(backend=backend, launcher=ctx.launcher.name, nodes_used=group.nodes if group else [], placement=group.placement() if group else {})
    (ctx.workdir / "preflight.json").write_text(
        json.dumps({"stages": [s.__dict__ for s in ready.stages], "failed": ready.failed, "detail": ready.detail, "seconds": round(ready.seconds, 3)}, indent=2)
        + "\n"
    )
    if ready.failed:
        return failed(
            f"preflight failed at {ready.failed}: {ready.detail}", log_tail=ready.log_tail, exit_code=3 if ready.infrastructure else 1, stage=ready.failed
        )
    ctx.facts["spare_port"] = ready.spare_port
    ctx.facts["rank_gpu_models"] = ready.gpu_models
    summary = ", ".join(f"{s.name} {s.status}" for s in ready.stages)
    return passed(
        f"{ctx.world_size} rank(s) on {ctx.launcher.name} ({ctx.shape.nodes} node(s)), {backend}: {summary} in {ready.seconds:.1f} s; ranks wait for the run; "
        + inside(ctx.probe)
    )


def inside(probe: dict) -> str:
    """What rank 0 found in its environment, in a few words."""
    if not probe:
        return "the environment was not probed (rank 0 said nothing of it)"
    if probe.get("error"):
        return f"the environment's packages could not be listed ({probe['error'][:200]})"
    return f"inside: Python {probe.get('python')}, torch {(probe.get('packages') or {}).get('torch', 'not installed')}"
