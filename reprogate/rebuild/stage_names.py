"""The closed sets a rebuild's stages are named and judged by, apart from the stages themselves
(rebuild/stages/), so that the verdict and its readers can type them without importing a stage.

The eleven names in the runbook's diagnosis order (stages/__init__.py runs them in this order,
the verdict schema's enum lists them; tests/test_registries.py holds all three to this tuple),
the four statuses a stage ends in, and what a failed stage blames where it can tell.
"""

from __future__ import annotations

from typing import Literal, get_args

StageName = Literal["artifacts", "digest", "preflight", "dataset", "config", "envelope", "run", "batches", "model-state", "steps", "metric"]
STAGE_NAMES: tuple[StageName, ...] = get_args(StageName)
StageStatus = Literal["pass", "fail", "skipped", "not-run"]
STAGE_STATUSES: tuple[StageStatus, ...] = get_args(StageStatus)
# runner: the machine (rerun elsewhere); lock-file / image: the environment the record pins lacks something
Cause = Literal["runner", "lock-file", "image"]
CAUSES: tuple[Cause, ...] = get_args(Cause)


def stage_name_of(value: object) -> StageName:
    """`value` as a stage name; a schema-checked verdict's always is one."""
    for name in STAGE_NAMES:
        if value == name:
            return name
    raise ValueError(f"{value!r} is no rebuild stage ({', '.join(STAGE_NAMES)})")


def stage_status_of(value: object) -> StageStatus:
    for status in STAGE_STATUSES:
        if value == status:
            return status
    raise ValueError(f"{value!r} is no stage status ({', '.join(STAGE_STATUSES)})")


def cause_of(value: object) -> Cause | None:
    """`value` as a cause, or None where it names none (or is not written)."""
    return next((cause for cause in CAUSES if value == cause), None)


__all__ = ["CAUSES", "STAGE_NAMES", "STAGE_STATUSES", "Cause", "StageName", "StageStatus", "cause_of", "stage_name_of", "stage_status_of"]
