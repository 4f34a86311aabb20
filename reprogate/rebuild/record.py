"""The run record a rebuild writes about itself: the reproduction record a baseline promotes.

It is the rebuilt record with its environment half replaced by what the rebuild really ran:
the image the engine reported (or the one it built, by ID), the lock file and its digest, the
Python and packages the environment's own interpreter listed, this machine's host and devices,
the execution shape, and, as its reference, the rebuild's own trace and metrics. The verdict
names this file and its SHA-256, so the two cannot be paired with others afterwards.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.capture import CaptureContext, run_layer
from reprogate.capture import devices as devices_layer
from reprogate.capture import host as host_layer
from reprogate.rebuild.compare import metrics
from reprogate.rebuild.state import RebuildState
from reprogate.rebuild.verdict import RecordRef


def _trace_file(state: RebuildState, target: Path) -> str | None:
    """The first seed's per-rank traces as one file beside the record; its sha256. The bytes are
    those the run stage judged, never the files read again: a later seed's ranks could have
    rewritten (or swapped for a link) what the first seed left in the work folder."""
    first = state.runs.first if state.runs is not None else None
    if first is None or not first.traces:
        return None
    h = hashlib.sha256()
    with open(target, "wb") as out:
        for data in first.traces:
            out.write(data)
            h.update(data)
    return "sha256:" + h.hexdigest()


def _where(path: Path, root: Path) -> dict[str, str]:
    try:
        return {"path": path.resolve().relative_to(root.resolve()).as_posix()}
    except ValueError:
        return {"uri": path.resolve().as_uri()}


def rebuild_record(state: RebuildState, of: RecordRef, passed: bool, started_at: str, folder: Path) -> dict[str, Any]:
    """The record, written before the work folder goes (its trace is copied out of it)."""
    job = state.job
    data = copy.deepcopy(job.checked_out)
    data.pop("baseline", None)
    name = str(job.name or "run")
    meta = data.setdefault("metadata", {})
    meta["name"] = f"{name}-rebuild"[:128]
    meta["created"] = started_at
    meta["description"] = f"Rebuild of {of.path} ({job.options.environment} environment), written by reprogate {__version__}."
    meta["rebuild_of"] = {
        "record": of.path,
        "digest": of.digest,
        "environment": job.options.environment,
        "verdict": "pass" if passed else "fail",
        **({"realizer": state.environment.choice.name} if state.environment is not None else {}),
    }
    capture = CaptureContext(root=job.root, framework=False)
    data["host"] = run_layer(host_layer, capture)
    data["devices"] = run_layer(devices_layer, capture)
    packages = state.packages
    software: dict[str, Any] = {"present": True}
    if state.probe is not None and state.probe.python:
        software["python"] = state.probe.python
    if "torch" in packages:
        software["framework"] = {"name": "torch", "version": packages["torch"]}
    if packages:
        software["packages"] = dict(packages)
    data["software"] = software
    if state.environment is not None:  # the image that ran, the lock file installed: the realizer's identity writes its own part
        state.environment.realized.identity.amend_record(data)
    execution = data.setdefault("execution", {})
    execution["world_size"] = job.world_size
    if state.ranks is not None:
        execution["nodes"] = state.ranks.shape.nodes
    trace_path = folder / "rebuild-trace.jsonl"
    checksum = _trace_file(state, trace_path)
    reference: dict[str, Any] = {}
    if checksum:
        reference["trace"] = {**_where(trace_path, job.root), "checksum": checksum}
    declared = job.record.contract.metric if job.record.contract is not None else None
    metric = str(declared.name if declared is not None else None)
    values = [{"seed": run.seed, "value": metrics(run.events)[metric]} for run in (state.runs.seeds if state.runs else ()) if metric in metrics(run.events)]
    if values:
        reference["metric"] = {"name": metric, "values": values}
    data["reference"] = reference
    return data
