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
import re

from reprogate.core.errors import ReprogateError
from reprogate.rebuild import launchers
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.preflight import check_devices
from reprogate.rebuild.ranks import PREFLIGHT_STAGES, STARTUP_GRACE, RankHosts, rank_environment
from reprogate.rebuild.realizers.base import Defect
from reprogate.rebuild.stages.base import StageResult, failed, passed
from reprogate.rebuild.state import Environment, Probe, Ranks, RebuildState

# How Python names a module it cannot find, as a rank reports it (ModuleNotFoundError's message).
MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
BETWEEN_STAGES = 3600.0  # dataset, config and envelope run while the ranks wait; a big dataset takes a while


def time_limit(options: RebuildOptions) -> float:
    """How long one set of ranks may live: starting, the preflight, the stages between it and the
    run (fetching the dataset among them) and one seed's run. A scheduler's limit for the job."""
    return STARTUP_GRACE + options.preflight_timeout * len(PREFLIGHT_STAGES) + BETWEEN_STAGES + options.timeout


def preflight(state: RebuildState) -> StageResult:
    job, fetched, environment = state.job, state.fetched, state.environment
    assert fetched is not None and environment is not None
    launcher = job.launcher
    record = job.record
    shape = launchers.record_shape(record, job.options.world_size, time_limit(job.options))
    if launcher.ranks_run_here:
        devices, gpus = check_devices(job.record_path if record.devices is not None and record.devices.gpus else None)
        found_gpus = devices.detail
        if devices.status == "fail":
            return failed(f"devices: {devices.detail}")
    else:  # the nodes' devices: each rank host's framework op proves its own; the scheduler assigns them
        gpus = shape.gpus_per_node
        found_gpus = f"{gpus} GPU(s) per node, assigned by {launcher.name}" if gpus else f"no GPU asked of {launcher.name}"
    try:
        execution = record.execution
        backend = str((execution.collective_backend if execution is not None else None) or ("nccl" if gpus else "gloo"))
        env = rank_environment((execution.env if execution is not None else None) or {}, job.workdir, fetched.runtime)
        hosts = RankHosts(
            launcher,
            environment.realized,
            shape,
            env=env,
            folder=job.workdir / "runs" / "preflight",
            within=job.workdir,
            cwd=job.ranks_cwd,
            preflight=True,
            backend=backend,
            stage_timeout=job.options.preflight_timeout,
            probe=True,
        )
        state.on_close(hosts.stop)
        hosts.start()
    except ReprogateError as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), exit_code=int(exc.exit_code))
    try:
        ready = hosts.wait_ready()
    except ReprogateError as exc:  # the scheduler stopped answering while the ranks started
        return failed(exc.message, exit_code=int(exc.exit_code))
    state.probe = Probe(ready.probe)  # kept when a rank then fails: the report shows what the environment held
    group = hosts.group
    state.ranks = Ranks(
        launcher,
        shape,
        hosts,
        backend,
        found_gpus,
        nodes_used=tuple(group.nodes) if group else (),
        placement=group.placement() if group else {},
        spare_port=None if ready.failed else ready.spare_port,
        gpu_models=() if ready.failed else tuple(ready.gpu_models),
    )
    (job.workdir / "preflight.json").write_text(
        json.dumps(
            {
                "stages": [s.__dict__ for s in ready.stages],
                "failed": ready.failed,
                "detail": ready.detail,
                "seconds": round(ready.seconds, 3),
                "ranks": {str(rank): cost for rank, cost in sorted(ready.costs.items())},
            },
            indent=2,
        )
        + "\n"
    )
    if ready.failed:
        defect = environment_defect(environment, ready.detail) if ready.infrastructure else None
        if defect is not None:  # the environment the record pins lacks a module: its lock or image, not the runner
            detail = f"preflight failed at {ready.failed}: {ready.detail}; {defect.words}"
            return failed(detail, log_tail=ready.log_tail, exit_code=1, cause=defect.cause, stage=ready.failed)
        return failed(
            f"preflight failed at {ready.failed}: {ready.detail}",
            log_tail=ready.log_tail,
            exit_code=3 if ready.infrastructure else 1,
            cause="runner",
            stage=ready.failed,
        )
    summary = ", ".join(f"{s.name} {s.status}" for s in ready.stages)
    return passed(
        f"{job.world_size} rank(s) on {launcher.name} ({shape.nodes} node(s)), {backend}: {summary} in {ready.seconds:.1f} s; ranks wait for the run; "
        + inside(state.probe)
    )


def environment_defect(environment: Environment, detail: str) -> Defect | None:
    """Why a rank that cannot import a module says something of the environment the record pins:
    a venv made from its lock file or the image it names lacks the module (exit 1, with what to
    do), where reprogate's own interpreter lacking it is the runner's to fix (exit 3). The realized
    environment's identity says which (`Identity.missing_module`)."""
    found = MISSING_MODULE.search(detail)
    return None if found is None else environment.realized.identity.missing_module(found.group(1))


def inside(probe: Probe) -> str:
    """What rank 0 found in its environment, in a few words."""
    if not probe.facts:
        return "the environment was not probed (rank 0 said nothing of it)"
    if probe.error:
        return f"the environment's packages could not be listed ({probe.error[:200]})"
    return f"inside: Python {probe.python}, torch {probe.packages.get('torch', 'not installed')}"
