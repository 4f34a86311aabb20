"""Each requirement a record's envelope states, against what a pool offers.

The runbook: "Capacity sourcing can honor the run only after the record states the supported
device, topology, storage, and driver constraints; procurement cannot replace missing
provenance." So a requirement the record does not state fails as unstated (the record must say it
first), and one the pool does not state fails as unknown (nothing promises it); only a stated
requirement the pool states it meets passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reprogate.capacity.models import normalised, offered
from reprogate.capacity.pool import Pool
from reprogate.core.shapes import table

HONORED, SHORT, UNSTATED, UNKNOWN, NOT_NEEDED = "honored", "short", "unstated", "unknown", "not-needed"


@dataclass(frozen=True)
class Requirement:
    """One requirement, what the record asks, what the pool offers, and the verdict with its reason."""

    # gpu-model, nodes, gpus-per-node, driver-branch, interconnect, node-cpus, host-memory, gpu-memory, cpu-kernels,
    # local-scratch, shared-storage, read-throughput
    name: str
    field: str  # where the record states it
    status: str
    reason: str

    @property
    def ok(self) -> bool:
        return self.status in (HONORED, NOT_NEEDED)


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
    contract = table(record, "contract")
    envelope = table(contract, "envelope")
    execution = table(record, "execution")
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
    else:
        status, why = offered(pool.gpu_model, gres=pool.source.startswith("slurm ")).verdict(models)
        out.append(Requirement("gpu-model", f"{at}.gpu_models", status, why))
    nodes = envelope.get("nodes") if isinstance(envelope.get("nodes"), dict) else None
    needed = (nodes or {}).get("min", execution.get("nodes"))
    away = f" ({'; '.join(pool.unavailable[:4])})" if pool.unavailable else ""
    if not isinstance(needed, int):
        out.append(Requirement("nodes", f"{at}.nodes", UNSTATED, "the record states no node count"))
    elif pool.nodes >= needed:
        out.append(Requirement("nodes", f"{at}.nodes", HONORED, f"{needed} node(s) needed, the pool gives {pool.nodes}{away}"))
    else:
        out.append(Requirement("nodes", f"{at}.nodes", SHORT, f"{needed} node(s) needed, the pool gives only {pool.nodes}{away}"))
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
    out += _node(envelope.get("node"), pool, record)
    cpu = _cpu(envelope.get("cpu"), pool, execution)
    if cpu is not None:
        out.append(cpu)
    out += _storage(envelope.get("storage"), pool)
    return out


def _at_least(name: str, where: str, needed: object, offered_: int | None, what: str, shown: Callable[[int], str]) -> Requirement | None:
    if not isinstance(needed, int) or isinstance(needed, bool):
        return None
    if offered_ is None:
        return Requirement(name, where, UNKNOWN, f"the pool states no {what}; the run needs {shown(needed)}")
    ok = offered_ >= needed
    return Requirement(name, where, HONORED if ok else SHORT, f"{shown(needed)} of {what} needed, the pool has {shown(offered_)}")


def _node(node: Any, pool: Pool, record: dict[str, Any]) -> list[Requirement]:
    """CPUs, host memory and GPU memory per node, where the record states them (optional: older records state none)."""
    if not isinstance(node, dict):
        return []
    at = "contract.envelope.node"
    found = [
        _at_least("node-cpus", f"{at}.cpus", node.get("cpus"), pool.cpus_per_node, "CPUs per node", str),
        _at_least("host-memory", f"{at}.memory_bytes", node.get("memory_bytes"), pool.memory_bytes, "host memory per node", _gib),
    ]
    gpu = _at_least("gpu-memory", f"{at}.gpu_memory_bytes", node.get("gpu_memory_bytes"), pool.gpu_memory_bytes, "memory per GPU", _gib)
    if gpu is not None and gpu.status == UNKNOWN and pool.gpu_model:
        # the same model as the reference's own GPUs has their memory
        ran_on = {normalised(str(g.get("name"))) for g in ((record.get("devices") or {}).get("gpus") or []) if isinstance(g, dict)}
        if ran_on and {normalised(n) for n in offered(pool.gpu_model).names} <= ran_on:
            gpu = Requirement(gpu.name, gpu.field, HONORED, f"the pool's {pool.gpu_model} is the model the reference ran on, with its memory")
    return [r for r in (*found, gpu) if r is not None]


CAPABILITY_ORDER = ("default", "avx2", "avx512")


def _cpu(cpu: Any, pool: Pool, execution: dict[str, Any]) -> Requirement | None:
    """The CPU kernels a bitwise CPU contract holds for: the architecture, and a capability torch
    will pick there (the one execution.env pins with ATEN_CPU_CAPABILITY, if the CPUs run it; else the CPUs' best)."""
    if not isinstance(cpu, dict) or not (cpu.get("capability") or cpu.get("architectures")):
        return None
    at = "contract.envelope.cpu"
    arches = cpu.get("architectures") or []
    if arches and pool.architecture is None:
        return Requirement("cpu-kernels", f"{at}.architectures", UNKNOWN, f"the pool states no architecture; the record allows {arches}")
    if arches and pool.architecture not in arches:
        return Requirement("cpu-kernels", f"{at}.architectures", SHORT, f"the pool's CPUs are {pool.architecture}; the record allows {arches}")
    allowed = cpu.get("capability") or []
    if not allowed:
        return Requirement("cpu-kernels", f"{at}.architectures", HONORED, f"{pool.architecture} is one of {arches}")
    if not pool.cpu_capabilities:
        return Requirement("cpu-kernels", f"{at}.capability", UNKNOWN, f"the pool states no CPU capability; the record allows {allowed}")
    env = table(execution, "env")
    pinned = str(env.get("ATEN_CPU_CAPABILITY", "")).lower() or None
    if pinned is not None:
        ok = pinned in allowed and pinned in pool.cpu_capabilities
        return Requirement(
            "cpu-kernels", f"{at}.capability", HONORED if ok else SHORT, f"ATEN_CPU_CAPABILITY={pinned}; the pool's CPUs run {list(pool.cpu_capabilities)}"
        )
    best = max(pool.cpu_capabilities, key=lambda c: CAPABILITY_ORDER.index(c) if c in CAPABILITY_ORDER else -1)
    ok = best in allowed
    return Requirement(
        "cpu-kernels",
        f"{at}.capability",
        HONORED if ok else SHORT,
        f"torch picks {best} on the pool's CPUs (nothing pins ATEN_CPU_CAPABILITY); the record allows {allowed}",
    )


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
