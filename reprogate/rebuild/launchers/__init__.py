"""Launchers: where a rebuild's ranks start. One module each, listed here.

`choose` takes --launcher, else the record's execution.scheduler_name (slurm, kubernetes), else
`local`. `record_shape` (launchers/base.py) is the shape every launcher replays: the record's world size, node count
and GPUs per node (a rebuild with another shape is rejected by the envelope).
"""

from __future__ import annotations

from reprogate.core.errors import UsageError
from reprogate.core.record import RunRecord
from reprogate.rebuild.launchers import kubernetes, local, slurm
from reprogate.rebuild.launchers.base import Launcher, RankGroup, Shape, record_shape

LAUNCHERS: dict[str, Launcher] = {
    local.NAME: local.LocalLauncher(),
    slurm.NAME: slurm.SlurmLauncher(),
    kubernetes.NAME: kubernetes.KubernetesLauncher(),
}


def choose(record: RunRecord, override: str | None = None) -> Launcher:
    if override:
        name = override
    else:
        scheduler = record.execution.scheduler_name if record.execution is not None else None
        name = scheduler if scheduler is not None and scheduler in LAUNCHERS else local.NAME
    if name not in LAUNCHERS:
        raise UsageError(f"unknown launcher {name!r}; choose one of {', '.join(LAUNCHERS)}")
    return LAUNCHERS[name]


__all__ = ["LAUNCHERS", "Launcher", "RankGroup", "Shape", "choose", "record_shape"]
