"""Launchers: where a rebuild's ranks start. One module each, listed here.

`choose` takes --launcher, else the record's execution.scheduler_name (slurm, kubernetes), else
`local`.
"""

from __future__ import annotations

from typing import Any

from reprogate.core.errors import UsageError
from reprogate.rebuild.launchers import local
from reprogate.rebuild.launchers.base import Launcher, RankGroup, Shape

LAUNCHERS: dict[str, Launcher] = {
    local.NAME: local.LocalLauncher(),
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


__all__ = ["LAUNCHERS", "Launcher", "RankGroup", "Shape", "choose"]
