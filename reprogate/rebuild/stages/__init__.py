"""The eleven rebuild stages, in the runbook's diagnosis order, listed here and nowhere else.

The runner (rebuild/runner.py) stops at the first failure and marks the rest not-run; a stage
that does not apply says `skipped` and why; a comparison that cannot be made is a failure, not a
pass. Each stage names the state fields it needs from earlier stages and those it sets
(rebuild/state.py); each field is set by one stage, once.
"""

from __future__ import annotations

from reprogate.rebuild.stage_names import StageName
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

STAGES: dict[StageName, Stage] = {
    "artifacts": Stage(artifacts, provides=("fetched",)),
    "digest": Stage(digest, needs=("fetched",), provides=("environment",)),
    "preflight": Stage(preflight, needs=("fetched", "environment"), provides=("probe", "ranks")),
    "dataset": Stage(dataset, needs=("fetched",)),  # reads what artifacts copied in
    "config": Stage(config, needs=("fetched",)),
    "envelope": Stage(envelope, needs=("fetched", "probe", "ranks"), provides=("machine",)),
    "run": Stage(run, needs=("environment", "ranks"), provides=("runs",)),
    "batches": Stage(batches, needs=("fetched", "runs")),
    "model-state": Stage(model_state, needs=("fetched", "runs")),
    "steps": Stage(steps, needs=("fetched", "runs")),
    "metric": Stage(metric, needs=("runs",)),
}

# What each stage is doing, for the progress line a person at a terminal sees (core/progress.py).
DOING: dict[StageName, str] = {
    "artifacts": "copying what the record addresses into an empty work folder",
    "digest": "realizing the environment",
    "preflight": "starting the ranks and proving devices and collective",
    "dataset": "fetching the shards and checking their checksums",
    "config": "checking the configuration",
    "envelope": "checking the machine against the envelope",
    "run": "running the entrypoint on every rank",
    "batches": "comparing batch digests",
    "model-state": "comparing tensor digests",
    "steps": "comparing losses",
    "metric": "judging the metric",
}

__all__ = ["DOING", "STAGES", "Stage"]
