"""envelope: the machine and environment the ranks got lie inside the contract's envelope,
checked before the run and never widened. Software facts (Python, torch, OS) come from inside
the realized environment (rank 0's probe, told in the preflight), GPU facts from NVML on this machine, the
shape from the launcher."""

from __future__ import annotations

import platform
from typing import Any

from reprogate.rebuild.context import RebuildContext, StageResult, failed, passed


def machine_facts(ctx: RebuildContext) -> dict[str, Any]:
    """The rebuild as the envelope sees it, without importing torch here."""
    probe = ctx.probe
    packages = probe.get("packages") or {}
    used = ctx.facts.get("nodes_used") or []
    facts: dict[str, Any] = {
        "nodes": len(used) or (ctx.shape.nodes if ctx.shape else 1),
        "machine": probe.get("machine") or platform.machine(),
        "python": probe.get("python"),
        "os": probe.get("os"),
    }
    if "torch" in packages:
        facts["torch"] = packages["torch"]
    if ctx.launcher is not None and not ctx.launcher.ranks_run_here:  # the nodes' GPUs, as their rank hosts named them; not this machine's
        facts["gpu_models"] = sorted(set(ctx.facts.get("rank_gpu_models") or []))
        return facts
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            facts["gpu_models"] = sorted({str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(pynvml.nvmlDeviceGetCount())})
            facts["driver"] = str(pynvml.nvmlSystemGetDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML: a CPU machine
        facts["gpu_models"] = []
    return facts


def envelope(ctx: RebuildContext) -> StageResult:
    from reprogate.rules.envelope import release_admits

    env = ctx.section("contract", "envelope") or {}
    facts = ctx.facts
    facts.update({k: v for k, v in machine_facts(ctx).items() if v is not None})
    facts["world_size"] = ctx.world_size
    problems = []
    allowed_sizes = env.get("world_sizes") or [ctx.section("execution", "world_size")]
    if ctx.world_size not in allowed_sizes:
        problems.append(f"world size {ctx.world_size} is not among the envelope's {allowed_sizes}")
    models = env.get("gpu_models") or []
    if models and not set(facts["gpu_models"]) <= set(models):
        problems.append(f"GPUs {facts['gpu_models'] or 'none'} are outside the envelope's {models}")
    nodes = env.get("nodes") or {}
    if not (nodes.get("min", 1) <= facts["nodes"] <= nodes.get("max", facts["nodes"])):
        problems.append(f"{facts['nodes']} node(s) is outside {nodes.get('min', 1)}..{nodes.get('max')}")
    problems += _shape_problems(ctx, facts, env)
    branches = env.get("driver_branch") or []
    if branches and facts.get("driver") and f"R{facts['driver'].split('.')[0]}" not in branches:
        problems.append(f"driver {facts['driver']} is outside the branches {branches}")
    framework = env.get("framework") or {}
    if framework.get("name") == "torch":
        if "torch" not in facts:
            problems.append("torch is not installed in the rebuilt environment")
        elif not release_admits(str(framework.get("release")), facts["torch"]):
            problems.append(f"torch {facts['torch']} is outside the envelope's release {framework.get('release')}")
    systems = env.get("os") or []
    if systems and facts.get("os") not in systems and str(facts.get("os", "")).split("-")[0] not in systems:
        problems.append(f"operating system {facts.get('os')} is outside {systems}")
    from reprogate.rebuild.cpu import cpu_envelope
    from reprogate.rules.trace_meta import reference_disagreements

    problems += [d.message for d in reference_disagreements(ctx.data, ctx.reference_events)]
    cpu_problems, cpu_facts = cpu_envelope(ctx)
    facts.update(cpu_facts)
    problems += cpu_problems
    if problems:
        return failed("rejected before the run, never widened: " + "; ".join(problems), facts=facts)
    where = ", ".join(facts["gpu_models"]) or "CPU"
    return passed(f"{ctx.world_size} rank(s) on {where}, torch {facts.get('torch', '-')}, {facts.get('os') or 'unknown OS'}: inside the envelope", facts=facts)


def _shape_problems(ctx: RebuildContext, facts: dict[str, Any], env: dict[str, Any]) -> list[str]:
    """A multi-node rebuild replays the recorded shape: the nodes the launcher really got, the
    ranks on each, and the record's rank mapping unless the envelope tolerates a remap."""
    from reprogate.rebuild.topology import topology

    placement = ctx.facts.get("placement") or {}
    if not placement:
        return []
    found = topology(ctx.data, placement)
    facts["topology"] = found.as_dict()
    problems = []
    recorded = ctx.nodes
    if len(found.nodes) != recorded:
        problems.append(
            f"the ranks ran on {len(found.nodes)} node(s) ({', '.join(found.nodes)}); the record's run used {recorded}: a rebuild replays the recorded shape"
        )
    per_node = int(ctx.section("execution", "ranks_per_node") or max(1, ctx.world_size // max(1, recorded)))
    uneven = {n: c for n, c in found.per_node.items() if c != per_node}
    if uneven and len(found.nodes) == recorded:
        problems.append(f"ranks per node {uneven} differ from the record's {per_node}")
    if found.remapped and "rank-remap" not in (env.get("topology_changes") or []):
        problems.append("rank mapping differs from the record's (" + "; ".join(found.remapped[:3]) + ") and the envelope does not tolerate rank-remap")
    return problems
