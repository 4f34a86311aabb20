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
from reprogate.rebuild.context import RebuildContext


def _trace_file(ctx: RebuildContext, target: Path) -> str | None:
    """The first seed's per-rank traces as one file beside the record; its sha256."""
    if not ctx.runs or not ctx.runs[0].trace_files:
        return None
    h = hashlib.sha256()
    with open(target, "wb") as out:
        for path in ctx.runs[0].trace_files:
            data = path.read_bytes()
            out.write(data)
            h.update(data)
    return "sha256:" + h.hexdigest()


def _where(path: Path, root: Path) -> dict[str, str]:
    try:
        return {"path": path.resolve().relative_to(root.resolve()).as_posix()}
    except ValueError:
        return {"uri": path.resolve().as_uri()}


def rebuild_record(ctx: RebuildContext, verdict: dict[str, Any], folder: Path) -> dict[str, Any]:
    from reprogate.capture import CaptureContext, run_layer
    from reprogate.capture import devices as devices_layer
    from reprogate.capture import host as host_layer
    from reprogate.rebuild.compare import metrics

    data = copy.deepcopy(ctx.checked_out)
    data.pop("baseline", None)
    realized = ctx.realized.facts if ctx.realized is not None else {}
    name = str(ctx.section("metadata", "name") or "run")
    meta = data.setdefault("metadata", {})
    meta["name"] = f"{name}-rebuild"[:128]
    meta["created"] = verdict["started_at"]
    meta["description"] = f"Rebuild of {verdict['record']['path']} ({ctx.options.environment} environment), written by reprogate {__version__}."
    meta["rebuild_of"] = {
        "record": verdict["record"]["path"],
        "digest": verdict["record"]["digest"],
        "environment": ctx.options.environment,
        "verdict": verdict["verdict"],
        **({"realizer": ctx.choice.name} if ctx.choice else {}),
    }
    capture = CaptureContext(root=ctx.root, framework=False)
    data["host"] = run_layer(host_layer, capture)
    data["devices"] = run_layer(devices_layer, capture)
    packages = ctx.probe.get("packages") or {}
    software: dict[str, Any] = {"present": True}
    if ctx.probe.get("python"):
        software["python"] = ctx.probe["python"]
    if "torch" in packages:
        software["framework"] = {"name": "torch", "version": packages["torch"]}
    if packages:
        software["packages"] = packages
    data["software"] = software
    kind = realized.get("realizer")
    if kind == "container":
        box = dict(data.get("container") or {}) if isinstance(data.get("container"), dict) else {}
        box.pop("used", None)
        box["image_id"] = realized.get("image_id")
        if realized.get("built_from"):
            box["built_from"] = realized["built_from"]
            box.pop("digest", None)
            box.pop("platform_digest", None)
        box.setdefault("registry", "localhost")
        box.setdefault("repository", "reprogate-candidate")
        data["container"] = box
    elif kind == "venv":
        source = data.setdefault("source", {"dirty": False})
        locks = [e for e in source.get("lock_files") or [] if isinstance(e, dict)]
        for entry in locks:
            if entry.get("path") == realized.get("lock_file"):
                entry["checksum"] = realized.get("lock_digest")
        source["lock_files"] = locks
    execution = data.setdefault("execution", {})
    execution["world_size"] = ctx.world_size
    if ctx.shape is not None:
        execution["nodes"] = ctx.shape.nodes
    trace_path = folder / "rebuild-trace.jsonl"
    checksum = _trace_file(ctx, trace_path)
    reference: dict[str, Any] = {}
    if checksum:
        reference["trace"] = {**_where(trace_path, ctx.root), "checksum": checksum}
    values = [
        {"seed": run.seed, "value": metrics(run.events)[m]}
        for run in ctx.runs
        for m in [str(ctx.section("contract", "metric", "name"))]
        if m in metrics(run.events)
    ]
    if values:
        reference["metric"] = {"name": str(ctx.section("contract", "metric", "name")), "values": values}
    data["reference"] = reference
    return data
