"""Realizers: how a rebuild gets the environment its ranks run in. One module each, listed here.

`choose` reads the record: `job.environment.realizer` when it says; otherwise a record that ran in
a container is rebuilt in a container, and one that pins a lock file in a venv. The interpreter
reprogate itself runs in (`current`) is used only when the record asks for it.
"""

from __future__ import annotations

from typing import Any

from reprogate.core.errors import UsageError
from reprogate.rebuild.realizers import container, current, venv
from reprogate.rebuild.realizers.base import Choice, Realized, RealizeFailed, Realizer, RealizeRequest

REALIZERS: dict[str, Realizer] = {
    container.NAME: container.ContainerRealizer(),
    venv.NAME: venv.VenvRealizer(),
    current.NAME: current.CurrentRealizer(),
}


def choose(data: dict[str, Any], override: str | None = None) -> Choice:
    """Which realizer rebuilds this record, and why (the claim repeats it)."""
    if override:
        if override not in REALIZERS:
            raise UsageError(f"unknown realizer {override!r}; choose one of {', '.join(REALIZERS)}")
        return Choice(override, f"chosen with --realizer {override}")
    declared = ((data.get("job") or {}).get("environment") or {}).get("realizer") if isinstance(data.get("job"), dict) else None
    if isinstance(declared, str):
        if declared not in REALIZERS:
            raise UsageError(f"job.environment.realizer is {declared!r}; choose one of {', '.join(REALIZERS)}")
        return Choice(declared, f"the record declares job.environment.realizer: {declared}")
    box = data.get("container")
    if isinstance(box, dict) and box.get("used") is not False:
        return Choice(container.NAME, "the reference ran in a container")
    if (data.get("source") or {}).get("lock_files"):
        return Choice(venv.NAME, "the record pins lock files and no container")
    raise UsageError(
        "the record names neither a container nor a lock file, so there is no environment to rebuild",
        hint=(
            "pin source.lock_files or a container; or declare job.environment.realizer: current "
            "to run in reprogate's own interpreter (the claim will say nothing was rebuilt)"
        ),
    )


__all__ = ["REALIZERS", "Choice", "RealizeFailed", "RealizeRequest", "Realized", "Realizer", "choose"]
