"""A reference that already ran elsewhere, handed to `init` instead of running the seeds again.

A tracking store (MLflow: reprogate/integrations/mlflow.py) holds a team's reference runs: one
run per seed, with its parameters, final metrics, logged trace and git commit. `init` makes the
same record from them as from runs of its own — the same layout, pins, contract, interval and
validation — except that the events, the seeds and the machine come from what was logged. What
cannot be known from the store (the host, the GPUs, the collective backend) is written as not
recorded, never as this machine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reprogate.init.reference import ReferenceRuns


@dataclass(frozen=True)
class ImportedReference:
    """What the store told of the reference, in the shape init's own reference runs have."""

    runs: ReferenceRuns
    origin: str  # e.g. "MLflow runs a1b2.., c3d4.. of sqlite:///mlflow.db"
    commit: str | None  # the git commit the runs were made at (their tag), checked against the project's tree
    host: dict[str, Any] = field(default_factory=dict)
    cpu: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def not_recorded(origin: str) -> dict[str, Any]:
    """A record section the store cannot fill."""
    return {"present": False, "reason": f"imported from {origin}, which does not record it"}
