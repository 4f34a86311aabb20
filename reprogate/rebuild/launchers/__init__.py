"""Launchers: where a rebuild's ranks start. One module each, listed here.

`choose` takes --launcher, else the record's execution.scheduler_name (slurm, kubernetes), else
`local`. `record_shape` is the shape every launcher replays: the record's world size, node count
and GPUs per node (a rebuild with another shape is rejected by the envelope).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from reprogate.core.errors import UsageError
from reprogate.rebuild.launchers import kubernetes, local, slurm
from reprogate.rebuild.launchers.base import Launcher, RankGroup, Shape

LAUNCHERS: dict[str, Launcher] = {
    local.NAME: local.LocalLauncher(),
    slurm.NAME: slurm.SlurmLauncher(),
    kubernetes.NAME: kubernetes.KubernetesLauncher(),
}


def choose(data: dict[str, Any], override: str | None = None) -> Launcher:
    if override:
        name = override
    else:
        scheduler = (data.get("execution") or {}).get("scheduler_name") if isinstance(data.get("execution"), dict) else None
        name = str(scheduler).lower() if isinstance(scheduler, str) and str(scheduler).lower() in LAUNCHERS else local.NAME
    if name not in LAUNCHERS:
        raise UsageError(f"unknown launcher {name!r}; choose one of {', '.join(LAUNCHERS)}")
    return LAUNCHERS[name]


def gpus_per_node(data: dict[str, Any], nodes: int) -> int:
    """GPUs the record's run used on each node: by the node each GPU sits in, else spread evenly."""
    devices = data.get("devices") if isinstance(data.get("devices"), dict) else {}
    gpus = [g for g in (devices or {}).get("gpus") or [] if isinstance(g, dict)]
    if not gpus:
        return 0
    by_node = Counter(int(g["node"]) for g in gpus if isinstance(g.get("node"), int))
    if by_node:
        return max(by_node.values())
    return -(-len(gpus) // max(1, nodes))


def record_shape(data: dict[str, Any], world_size: int | None = None, time_limit: float | None = None) -> Shape:
    """The shape a rebuild of this record must have (--world-size may ask for another; the envelope judges it)."""
    execution = data.get("execution") if isinstance(data.get("execution"), dict) else {}
    nodes = int((execution or {}).get("nodes") or 1)
    world = int(world_size or (execution or {}).get("world_size") or 1)
    return Shape(world, nodes, gpus_per_node(data, nodes), time_limit)


__all__ = ["LAUNCHERS", "Launcher", "RankGroup", "Shape", "choose", "record_shape"]
