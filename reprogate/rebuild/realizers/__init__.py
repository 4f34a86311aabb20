"""Realizers: how a rebuild gets the environment its ranks run in. One module each, listed here.

Each module holds its `Realizer` (with its `Isolation`), its `Realized` environment and that
environment's `Identity` (realizers/base.py); the rest of the rebuild asks those, never a name,
so a new realizer is its module and one line in REALIZERS (ARCHITECTURE.md, "Realizers").

`choose` reads the record: `job.environment.realizer` when it says (for a candidate rebuild,
`job.environment.candidate` first: a record whose reference ran in reprogate's own interpreter
can still have a pull request's lock file made into a venv); otherwise a record that ran in
a container is rebuilt in a container, and one that pins a lock file in a venv (core/semantics.py:
unless the record states the semantics of 0.1, whose default was the interpreter reprogate runs
in). That interpreter (`current`) is otherwise used only when the record asks for it.
"""

from __future__ import annotations

from typing import Any, Literal

from reprogate.core.errors import UsageError
from reprogate.core.record import read_record
from reprogate.core.semantics import SemanticsError, implied_realizer
from reprogate.rebuild.realizers import container, current, venv
from reprogate.rebuild.realizers.base import Choice, Realized, RealizeFailed, Realizer, RealizeRequest

REALIZERS: dict[str, Realizer] = {
    container.NAME: container.ContainerRealizer(),
    venv.NAME: venv.VenvRealizer(),
    current.NAME: current.CurrentRealizer(),
}


def choose(data: dict[str, Any], override: str | None = None, environment: Literal["reference", "candidate"] | str = "reference") -> Choice:
    """Which realizer rebuilds this record in `environment`, and why (the claim repeats it)."""
    if override:
        if override not in REALIZERS:
            raise UsageError(f"unknown realizer {override!r}; choose one of {', '.join(REALIZERS)}")
        return Choice(override, f"chosen with --realizer {override}")
    declared_in = (data.get("job") or {}).get("environment") if isinstance(data.get("job"), dict) else None
    declared_in = declared_in if isinstance(declared_in, dict) else {}
    for field in ("candidate", "realizer") if environment == "candidate" else ("realizer",):
        declared = declared_in.get(field)
        if isinstance(declared, str):
            if declared not in REALIZERS:
                raise UsageError(f"job.environment.{field} is {declared!r}; choose one of {', '.join(REALIZERS)}")
            return Choice(declared, f"the record declares job.environment.{field}: {declared}")
    try:
        implied = implied_realizer(read_record(data))
    except SemanticsError as exc:
        raise UsageError(str(exc)) from None
    if implied is not None:
        return Choice(implied.name, implied.reason)
    raise UsageError(
        "the record names neither a container nor a lock file, so there is no environment to rebuild",
        hint=(
            "pin source.lock_files or a container; or declare job.environment.realizer: current "
            "to run in reprogate's own interpreter (the claim will say nothing was rebuilt)"
        ),
    )


__all__ = ["REALIZERS", "Choice", "RealizeFailed", "RealizeRequest", "Realized", "Realizer", "choose"]
