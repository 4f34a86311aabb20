"""envelope: the machine and environment the ranks got lie inside the contract's envelope,
checked before the run and never widened. Software facts (Python, torch, OS) come from inside
the realized environment (rank 0's probe, told in the preflight), GPU facts from NVML on this machine, the
shape from the launcher."""

from __future__ import annotations

import platform
from typing import Any

from reprogate.rebuild.cpu import cpu_envelope
from reprogate.rebuild.stages.base import StageResult, failed, passed
from reprogate.rebuild.state import Machine, RebuildJob, RebuildState
from reprogate.rebuild.topology import topology
from reprogate.rules.envelope import release_admits
from reprogate.rules.trace_meta import reference_disagreements


def gpu_facts(state: RebuildState) -> tuple[tuple[str, ...], str | None]:
    """(GPU models, driver) the ranks got, without importing torch here: the nodes' GPUs as their
    rank hosts named them when a scheduler placed the ranks, else this machine's, through NVML."""
    ranks = state.ranks
    if ranks is not None and not ranks.launcher.ranks_run_here:
        return tuple(sorted(set(ranks.gpu_models))), None
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            models = sorted({str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(pynvml.nvmlDeviceGetCount())})
            return tuple(models), str(pynvml.nvmlSystemGetDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML: a CPU machine
        return (), None


def envelope(state: RebuildState) -> StageResult:
    job, probe, ranks = state.job, state.probe, state.ranks
    assert probe is not None and ranks is not None
    env = job.section("contract", "envelope") or {}
    models_found, driver = gpu_facts(state)
    placed, problems = _shape_problems(job, ranks.placement, env)
    cpu_problems, cpu_facts = cpu_envelope(job, state.reference_events)
    machine = Machine(
        nodes=len(ranks.nodes_used) or ranks.shape.nodes,
        world_size=job.world_size,
        machine=probe.machine or platform.machine(),
        python=probe.python,
        os=probe.os,
        torch=probe.packages.get("torch"),
        gpu_models=models_found,
        driver=driver,
        topology=placed,
        cpu=cpu_facts,
    )
    state.machine = machine
    allowed_sizes = env.get("world_sizes") or [job.section("execution", "world_size")]
    size_problems = [] if job.world_size in allowed_sizes else [f"world size {job.world_size} is not among the envelope's {allowed_sizes}"]
    problems = size_problems + _machine_problems(machine, env) + problems
    problems += _software_problems(machine, env)
    problems += [d.message for d in reference_disagreements(job.record, list(state.reference_events))]
    problems += cpu_problems
    facts = machine.facts()
    if problems:
        return failed("rejected before the run, never widened: " + "; ".join(problems), facts=facts)
    where = ", ".join(machine.gpu_models) or "CPU"
    return passed(f"{job.world_size} rank(s) on {where}, torch {machine.torch or '-'}, {machine.os or 'unknown OS'}: inside the envelope", facts=facts)


def _machine_problems(machine: Machine, env: dict[str, Any]) -> list[str]:
    problems = []
    models = env.get("gpu_models") or []
    if models and not set(machine.gpu_models) <= set(models):
        problems.append(f"GPUs {list(machine.gpu_models) or 'none'} are outside the envelope's {models}")
    nodes = env.get("nodes") or {}
    if not (nodes.get("min", 1) <= machine.nodes <= nodes.get("max", machine.nodes)):
        problems.append(f"{machine.nodes} node(s) is outside {nodes.get('min', 1)}..{nodes.get('max')}")
    return problems


def _software_problems(machine: Machine, env: dict[str, Any]) -> list[str]:
    problems = []
    branches = env.get("driver_branch") or []
    if branches and machine.driver and f"R{machine.driver.split('.')[0]}" not in branches:
        problems.append(f"driver {machine.driver} is outside the branches {branches}")
    framework = env.get("framework") or {}
    if framework.get("name") == "torch":
        if machine.torch is None:
            problems.append("torch is not installed in the rebuilt environment")
        elif not release_admits(str(framework.get("release")), machine.torch):
            problems.append(f"torch {machine.torch} is outside the envelope's release {framework.get('release')}")
    systems = env.get("os") or []
    if systems and machine.os not in systems and str(machine.os or "").split("-")[0] not in systems:
        problems.append(f"operating system {machine.os} is outside {systems}")
    return problems


def _shape_problems(job: RebuildJob, placement: dict[int, str] | Any, env: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """(topology, problems): a multi-node rebuild replays the recorded shape: the nodes the
    launcher really got, the ranks on each, and the record's rank mapping unless the envelope
    tolerates a remap."""
    if not placement:
        return None, []
    found = topology(job.data, dict(placement))
    problems = []
    recorded = job.nodes
    if len(found.nodes) != recorded:
        problems.append(
            f"the ranks ran on {len(found.nodes)} node(s) ({', '.join(found.nodes)}); the record's run used {recorded}: a rebuild replays the recorded shape"
        )
    per_node = int(job.section("execution", "ranks_per_node") or max(1, job.world_size // max(1, recorded)))
    uneven = {n: c for n, c in found.per_node.items() if c != per_node}
    if uneven and len(found.nodes) == recorded:
        problems.append(f"ranks per node {uneven} differ from the record's {per_node}")
    if found.remapped and "rank-remap" not in (env.get("topology_changes") or []):
        problems.append("rank mapping differs from the record's (" + "; ".join(found.remapped[:3]) + ") and the envelope does not tolerate rank-remap")
    return found.as_dict(), problems
