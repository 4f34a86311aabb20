"""The storage a record's run needs, measured: `contract.envelope.storage`.

Capacity sourcing can honor a run only when the record states its storage (the runbook), and a
statement nobody measured is a guess. What can be measured from the record is measured here: the
dataset's bytes, summed over every shard and file its manifest lists (streamed for a JSON Lines
manifest), and the checkpoint's bytes when the repository holds it. `init` adds the local scratch
its reference run used (rebuild work folder); `capture --into` keeps what a person stated and the
measurements cannot know (`min_read_mb_per_s`, a remote checkpoint's size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.documents import DocumentError
from reprogate.core.shapes import rows, table
from reprogate.datasets.manifest_header import Checked, read_manifest

MEASURED = ("dataset_bytes", "checkpoint_bytes")


def manifest_bytes(manifest: dict[str, Any]) -> int:
    """Every shard's and file's `bytes` of an inline manifest (a section of the record), summed (a
    missing or odd size counts 0)."""
    total = 0
    for section in ("shards", "files"):
        for entry in manifest.get(section) or ():
            size = entry.get("bytes") if isinstance(entry, dict) else None
            if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
                total += size
    return total


def checked_manifest_bytes(manifest: Checked) -> int:
    """Every shard's and side file's bytes of a manifest file (its shards streamed)."""
    return sum(s.bytes for s in manifest.shards()) + sum(f.bytes or 0 for f in manifest.header.files)


def _dataset_bytes(record: dict[str, Any], root: Path) -> int | None:
    dataset = table(record, "dataset")
    inline = dataset.get("inline")
    if isinstance(inline, dict):
        return manifest_bytes(inline)
    rel = (dataset.get("manifest") or {}).get("path") if isinstance(dataset.get("manifest"), dict) else None
    if not isinstance(rel, str):
        return None
    try:
        return checked_manifest_bytes(read_manifest(root / rel, rel))
    except (DocumentError, OSError):  # unreadable, or not of a manifest's shape: not measured
        return None


def measured_storage(record: dict[str, Any], root: Path) -> dict[str, int]:
    """What the record's own files say: dataset bytes from the manifest, checkpoint bytes from the
    checkpoint the repository holds. A size that cannot be measured is left out, never guessed."""
    found: dict[str, int] = {}
    dataset_bytes = _dataset_bytes(record, root)
    if dataset_bytes is not None:
        found["dataset_bytes"] = dataset_bytes
    state = table(record, "state")
    checkpoint = table(state, "checkpoint")
    rel = checkpoint.get("path")
    if isinstance(rel, str):
        target = (root / rel).resolve()
        if root.resolve() in target.parents and target.is_file():
            found["checkpoint_bytes"] = target.stat().st_size
    return found


def merged_storage(record: dict[str, Any], measured: dict[str, int]) -> dict[str, Any]:
    """The record's storage statement with the measurements in place of what they measure; what
    was stated and not measured (read throughput, a remote checkpoint's size) stays."""
    envelope = ((record.get("contract") or {}).get("envelope") or {}) if isinstance(record.get("contract"), dict) else {}
    stated = table(envelope, "storage") if isinstance(envelope, dict) else {}
    return {**stated, **measured}


def measured_node(record: dict[str, Any], devices: dict[str, Any], rank_peak: int | None = None) -> dict[str, int]:
    """`contract.envelope.node`, from what the run used: a CPU per rank (times the threads
    execution.env pins each to), the largest peak memory of a process of the run times the ranks
    per node (`rank_peak`: init measures it; None leaves it out), and the smallest memory of the
    GPUs the capture found."""
    execution = table(record, "execution")
    world, nodes = execution.get("world_size"), execution.get("nodes")
    ranks = -(-world // nodes) if isinstance(world, int) and isinstance(nodes, int) and world > 0 and nodes > 0 else 1
    env = table(execution, "env")
    threads = str(env.get("OMP_NUM_THREADS", ""))
    needs = {"cpus": ranks * (int(threads) if threads.isdigit() and int(threads) > 0 else 1)}
    if rank_peak is not None:
        needs["memory_bytes"] = rank_peak * ranks
    gpus = rows(devices, "gpus")
    memories = [g["memory_bytes"] for g in gpus if isinstance(g, dict) and isinstance(g.get("memory_bytes"), int)]
    if memories:
        needs["gpu_memory_bytes"] = min(memories)
    return needs
