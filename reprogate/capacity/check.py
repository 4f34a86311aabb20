"""Each requirement a record's envelope states, against what a pool offers.

The runbook: "Capacity sourcing can honor the run only after the record states the supported
device, topology, storage, and driver constraints; procurement cannot replace missing
provenance." So a requirement the record does not state fails as unstated (the record must say it
first), and one the pool does not state fails as unknown (nothing promises it); only a stated
requirement the pool states it meets passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from reprogate.capacity.pool import Pool

HONORED, SHORT, UNSTATED, UNKNOWN, NOT_NEEDED = "honored", "short", "unstated", "unknown", "not-needed"


@dataclass(frozen=True)
class Requirement:
    """One requirement, what the record asks, what the pool offers, and the verdict with its reason."""

    name: str  # gpu-model, nodes, gpus-per-node, driver-branch, interconnect, local-scratch, shared-storage, read-throughput
    field: str  # where the record states it
    status: str
    reason: str

    @property
    def ok(self) -> bool:
        return self.status in (HONORED, NOT_NEEDED)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _model_matches(offered: str, allowed: list[str]) -> bool:
    """An NVML name equal to one allowed, or a GRES type (h100) contained in one."""
    return any(offered == model or (_norm(offered) and _norm(offered) in _norm(model)) for model in allowed)


def _gib(count: int | float) -> str:
    return f"{count / (1 << 30):.1f} GiB"


def _interconnect(record: dict[str, Any]) -> str | None:
    """nvlink when the reference's GPUs talked over NVLink, pcie when its topology shows only PCIe paths."""
    topology = ((record.get("devices") or {}).get("topology") or {}) if isinstance(record.get("devices"), dict) else {}
    if topology.get("nvlinks"):
        return "nvlink"
    cells = {cell for row in topology.get("matrix") or [] for cell in row if cell != "X"}
    if not cells:
        return None
    return "nvlink" if "NV" in cells else "pcie"


def requirements(record: dict[str, Any], pool: Pool) -> list[Requirement]:
    contract = record.get("contract") if isinstance(record.get("contract"), dict) else {}
    envelope = contract.get("envelope") if isinstance(contract.get("envelope"), dict) else {}
    execution = record.get("execution") if isinstance(record.get("execution"), dict) else {}
    out: list[Requirement] = []
    models = envelope.get("gpu_models")
    at = "contract.envelope"
    if models is None:
        out.append(Requirement("gpu-model", f"{at}.gpu_models", UNSTATED, "the record states no GPU models (an empty list states a CPU run)"))
    elif not models:
        out.append(Requirement("gpu-model", f"{at}.gpu_models", NOT_NEEDED, "a CPU run"))
    elif pool.gpus_per_node == 0 or not pool.gpu_model:
        out.append(
            Requirement(
                "gpu-model", f"{at}.gpu_models", UNKNOWN if pool.gpus_per_node else SHORT, f"the pool states no GPU model; the record needs one of {models}"
            )
        )
    elif _model_matches(pool.gpu_model, models):
        out.append(Requirement("gpu-model", f"{at}.gpu_models", HONORED, f"{pool.gpu_model} is one of {models}"))
    else:
        out.append(Requirement("gpu-model", f"{at}.gpu_models", SHORT, f"the pool has {pool.gpu_model}; the record allows only {models}"))
    nodes = envelope.get("nodes") if isinstance(envelope.get("nodes"), dict) else None
    needed = (nodes or {}).get("min", execution.get("nodes"))
    if not isinstance(needed, int):
        out.append(Requirement("nodes", f"{at}.nodes", UNSTATED, "the record states no node count"))
    elif pool.nodes >= needed:
        out.append(Requirement("nodes", f"{at}.nodes", HONORED, f"{needed} node(s) needed, the pool gives {pool.nodes}"))
    else:
        out.append(Requirement("nodes", f"{at}.nodes", SHORT, f"{needed} node(s) needed, the pool gives only {pool.nodes}"))
    world, run_nodes = execution.get("world_size"), execution.get("nodes")
    if models and isinstance(world, int) and isinstance(run_nodes, int) and run_nodes > 0:
        per_node = -(-world // run_nodes)
        status = HONORED if pool.gpus_per_node >= per_node else SHORT
        out.append(
            Requirement(
                "gpus-per-node",
                "execution.world_size",
                status,
                f"{per_node} GPU(s) per node needed ({world} ranks on {run_nodes} node(s)), the pool has {pool.gpus_per_node}",
            )
        )
    branches = envelope.get("driver_branch")
    if models:
        if not branches:
            out.append(Requirement("driver-branch", f"{at}.driver_branch", UNSTATED, "a GPU run whose record states no driver branch"))
        elif pool.driver_branch is None:
            out.append(Requirement("driver-branch", f"{at}.driver_branch", UNKNOWN, f"the pool states no driver branch; the record needs one of {branches}"))
        else:
            ok = pool.driver_branch in branches
            out.append(
                Requirement(
                    "driver-branch", f"{at}.driver_branch", HONORED if ok else SHORT, f"the pool runs {pool.driver_branch}; the record allows {branches}"
                )
            )
    out.append(_topology(record, envelope, pool, per_node_ranks(execution)))
    out += _storage(envelope.get("storage"), pool)
    return out


def per_node_ranks(execution: dict[str, Any]) -> int:
    world, nodes = execution.get("world_size"), execution.get("nodes")
    if isinstance(world, int) and isinstance(nodes, int) and nodes > 0:
        return -(-world // nodes)
    return 0


def _topology(record: dict[str, Any], envelope: dict[str, Any], pool: Pool, per_node: int) -> Requirement:
    where = "devices.topology"
    needed = _interconnect(record)
    if envelope.get("gpu_models") and per_node == 1:
        return Requirement("interconnect", "execution.world_size", NOT_NEEDED, "one GPU per node: no GPU-to-GPU path inside a node")
    if "interconnect-change" in (envelope.get("topology_changes") or []) or not envelope.get("gpu_models"):
        return Requirement(
            "interconnect",
            "contract.envelope.topology_changes",
            NOT_NEEDED,
            "the contract tolerates another interconnect" if envelope.get("gpu_models") else "a CPU run",
        )
    if needed is None:
        return Requirement("interconnect", where, UNSTATED, "the record states no GPU topology, and its contract does not tolerate an interconnect change")
    if pool.interconnect is None:
        return Requirement("interconnect", where, UNKNOWN, f"the pool states no interconnect; the reference ran over {needed}")
    ok = pool.interconnect == needed
    return Requirement("interconnect", where, HONORED if ok else SHORT, f"the reference ran over {needed}, the pool offers {pool.interconnect}")


def _storage(storage: Any, pool: Pool) -> list[Requirement]:
    at = "contract.envelope.storage"
    if not isinstance(storage, dict):
        return [Requirement("storage", at, UNSTATED, "the record states no storage (reprogate capture --into RECORD measures the dataset and checkpoint)")]
    out: list[Requirement] = []
    scratch = storage.get("scratch_bytes")
    if isinstance(scratch, int):
        if pool.local_scratch_bytes is None:
            out.append(Requirement("local-scratch", f"{at}.scratch_bytes", UNKNOWN, f"the pool states no local scratch; the run needs {_gib(scratch)}"))
        else:
            ok = pool.local_scratch_bytes >= scratch
            out.append(
                Requirement(
                    "local-scratch",
                    f"{at}.scratch_bytes",
                    HONORED if ok else SHORT,
                    f"{_gib(scratch)} needed per node, the pool has {_gib(pool.local_scratch_bytes)}",
                )
            )
    data = sum(v for v in (storage.get("dataset_bytes"), storage.get("checkpoint_bytes")) if isinstance(v, int))
    if any(isinstance(storage.get(k), int) for k in ("dataset_bytes", "checkpoint_bytes")):
        if pool.shared_bytes is None:
            out.append(
                Requirement(
                    "shared-storage", f"{at}.dataset_bytes", UNKNOWN, f"the pool states no shared storage; the dataset and checkpoint need {_gib(data)}"
                )
            )
        else:
            ok = pool.shared_bytes >= data
            out.append(
                Requirement(
                    "shared-storage",
                    f"{at}.dataset_bytes",
                    HONORED if ok else SHORT,
                    f"{_gib(data)} of dataset and checkpoint, the pool's shared storage has {_gib(pool.shared_bytes)}",
                )
            )
    rate = storage.get("min_read_mb_per_s")
    if isinstance(rate, (int, float)):
        if pool.shared_read_mb_per_s is None:
            out.append(Requirement("read-throughput", f"{at}.min_read_mb_per_s", UNKNOWN, f"the pool states no read throughput; the run needs {rate:g} MB/s"))
        else:
            ok = pool.shared_read_mb_per_s >= rate
            out.append(
                Requirement(
                    "read-throughput",
                    f"{at}.min_read_mb_per_s",
                    HONORED if ok else SHORT,
                    f"{rate:g} MB/s needed, the pool reads {pool.shared_read_mb_per_s:g} MB/s",
                )
            )
    return out or [Requirement("storage", at, UNSTATED, "the storage statement names no requirement")]
