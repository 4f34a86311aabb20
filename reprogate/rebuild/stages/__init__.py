"""The eleven rebuild stages, in the runbook's diagnosis order, listed here and nowhere else.

The runner (rebuild/__init__.py) stops at the first failure and marks the rest not-run; a stage
that does not apply says `skipped` and why; a comparison that cannot be made is a failure, not a
pass. Each stage names the context fields it needs from earlier stages and those it provides.
"""

from __future__ import annotations

from reprogate.rebuild.stages.artifacts import artifacts
from reprogate.rebuild.stages.base import Stage
from reprogate.rebuild.stages.compare import batches, model_state, steps
from reprogate.rebuild.stages.config import config
from reprogate.rebuild.stages.dataset import dataset
from reprogate.rebuild.stages.digest import digest
from reprogate.rebuild.stages.envelope import envelope
from reprogate.rebuild.stages.metric import metric
from reprogate.rebuild.stages.preflight import preflight
from reprogate.rebuild.stages.run import run

STAGES: dict[str, Stage] = {
    "artifacts": Stage(artifacts, provides=("fetched", "reference_events", "runtime")),
    "digest": Stage(digest, needs=("runtime",), provides=("choice", "realized")),
    "preflight": Stage(preflight, needs=("realized", "runtime"), provides=("launcher", "shape", "hosts", "probe")),
    "dataset": Stage(dataset, needs=("fetched",)),
    "config": Stage(config, needs=("fetched",)),
    "envelope": Stage(envelope, needs=("probe", "shape", "launcher", "reference_events"), provides=("facts",)),
    "run": Stage(run, needs=("hosts", "realized", "launcher", "shape"), provides=("runs",)),
    "batches": Stage(batches, needs=("runs", "reference_events")),
    "model-state": Stage(model_state, needs=("runs", "reference_events")),
    "steps": Stage(steps, needs=("runs", "reference_events")),
    "metric": Stage(metric, needs=("runs",)),
}

__all__ = ["STAGES", "Stage"]
