"""A pool of machines, as a Cluster document (schemas/cluster.schema.json) or read from Slurm.

The file is what a platform team writes down for a runner pool; for a Slurm partition the same
facts are read from the live cluster (`scontrol show partition` and `show node`): the nodes a job
can get now (a partition that is not UP gives none, a drained, down or unresponsive node is not
counted), GPUs from each node's GRES (`gpu:h100:8`), CPUs (`CPUTot`), memory (`RealMemory`), the
architecture (`Arch`), a driver branch, interconnect and CPU capability from node features
(`R580`, `nvlink`, `avx512`), local scratch from `TmpDisk`. A fact Slurm does not hold (shared
storage) is absent unless `--shared-bytes` states it, so a record that needs it is not honored on
the word of a guess.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.documents import load_document
from reprogate.core.errors import UsageError
from reprogate.core.schema_check import schema_diagnostics
from reprogate.rebuild.launchers.slurm import SlurmUnreachable, client, fields

MiB = 1024 * 1024
_GRES_GPU = re.compile(r"^gpu(?::([^:(]+))?:(\d+)")


@dataclass(frozen=True)
class Pool:
    """What a pool offers; None where it does not say."""

    name: str
    nodes: int
    gpu_model: str | None = None
    gpus_per_node: int = 0
    driver_branch: str | None = None
    interconnect: str | None = None
    local_scratch_bytes: int | None = None
    shared_bytes: int | None = None
    shared_read_mb_per_s: float | None = None
    source: str = ""  # the file, or `slurm partition NAME`
    cpus_per_node: int | None = None
    memory_bytes: int | None = None  # host memory per node
    gpu_memory_bytes: int | None = None  # memory per GPU
    cpu_capabilities: tuple[str, ...] = ()  # torch CPU capabilities the nodes' CPUs run (default, avx2, avx512)
    architecture: str | None = None  # platform.machine() of the nodes (x86_64, aarch64)
    unavailable: tuple[str, ...] = ()  # why nodes (or the whole partition) cannot be given: `partition debug is DOWN`, `n1 is DRAIN`


def load_pool(path: Path) -> Pool:
    """A Cluster document, held to its schema (a finding names the file, line and field)."""
    doc = load_document(path)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "Cluster":
        raise UsageError(f"{path}: not a cluster description (kind: Cluster, see schemas/cluster.schema.json)")
    problems = schema_diagnostics(doc, "Cluster")
    if problems:
        first = problems[0]
        raise UsageError(f"{path}:{first.location.line}: {first.field or '-'}: {first.message}", hint=first.hint)
    data: dict[str, Any] = doc.data
    gpus = data.get("gpus") or {}
    storage = data.get("storage") or {}
    cpu = data.get("cpu") or {}
    return Pool(
        name=data["name"],
        nodes=data["nodes"],
        gpu_model=gpus.get("model"),
        gpus_per_node=gpus.get("per_node", 0),
        driver_branch=data.get("driver_branch"),
        interconnect=data.get("interconnect"),
        local_scratch_bytes=storage.get("local_scratch_bytes"),
        shared_bytes=storage.get("shared_bytes"),
        shared_read_mb_per_s=storage.get("shared_read_mb_per_s"),
        source=str(path),
        cpus_per_node=data.get("cpus_per_node"),
        memory_bytes=data.get("memory_bytes"),
        gpu_memory_bytes=gpus.get("memory_bytes"),
        cpu_capabilities=tuple(cpu.get("capabilities") or ()),
        architecture=cpu.get("architecture"),
    )


def _gres_gpus(gres: str) -> tuple[str | None, int]:
    """(type, count) of the node's GPUs from `Gres=gpu:h100:8(S:0-1),...`; (None, 0) without any."""
    for item in gres.split(","):
        found = _GRES_GPU.match(item.strip())
        if found:
            return found.group(1), int(found.group(2))
    return None, 0


def _common(values: list[Any]) -> Any:
    """The value every node shares, or None when they differ (a pool promises only what all its nodes have)."""
    return values[0] if values and all(v == values[0] for v in values) else None


UNUSABLE = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "INVAL", "FUTURE", "MAINT", "NOT_RESPONDING", "POWERED_DOWN", "POWER_DOWN"}
CAPABILITY_FEATURES = {"avx512": ("default", "avx2", "avx512"), "avx2": ("default", "avx2")}


def usable(state: str) -> bool:
    """A node state (`IDLE`, `MIXED+DRAIN`, `IDLE*`) a job can be given now: no down, drain or failing flag, responding."""
    return not state.endswith("*") and not ({flag.upper() for flag in state.split("+")} & UNUSABLE)


def _capabilities(features: AbstractSet[str], arch: str | None) -> tuple[str, ...]:
    """What torch's CPU dispatch can run on nodes with these features: every x86-64 CPU runs `default`."""
    lowered = {f.lower() for f in features}
    for feature, runs in CAPABILITY_FEATURES.items():
        if feature in lowered:
            return runs
    return ("default",) if arch == "x86_64" else ()


@dataclass(frozen=True)
class SlurmNode:
    """One `scontrol show node -o` line as the pool reads it: a count Slurm leaves out (a node
    without `TmpDisk`) or words as something else is None, never read as a number."""

    name: str
    state: str
    gpus: tuple[str | None, int]  # (GRES type, count)
    features: frozenset[str]
    tmp_disk_bytes: int | None
    cpus: int | None
    memory_bytes: int | None
    arch: str | None

    @property
    def usable(self) -> bool:
        return usable(self.state)


def _count(value: str | None, unit: int = 1) -> int | None:
    return int(value) * unit if value is not None and value.isascii() and value.isdigit() else None


def slurm_node(line: dict[str, str]) -> SlurmNode:
    """The node's facts from its fields (`fields` of one line), each checked as it is read."""
    features = set(line.get("AvailableFeatures", line.get("Features", "")).split(",")) - {"", "(null)"}
    return SlurmNode(
        name=line.get("NodeName", "?"),
        state=line.get("State", "?"),
        gpus=_gres_gpus(line.get("Gres", "")),
        features=frozenset(features),
        tmp_disk_bytes=_count(line.get("TmpDisk"), MiB),
        cpus=_count(line.get("CPUTot")),
        memory_bytes=_count(line.get("RealMemory"), MiB),
        arch=line.get("Arch"),
    )


def slurm_pool(partition: str, shared_bytes: int | None = None) -> Pool:
    """The partition as Slurm describes it now; SlurmUnreachable (exit 3) when it cannot say,
    UsageError (exit 2) for a partition Slurm does not know."""
    try:
        text = client("scontrol", "show", "partition", "-o", partition)
    except SlurmUnreachable as exc:
        if "not found" in exc.message.lower():
            raise UsageError(f"--cluster slurm:{partition}: Slurm knows no such partition ({exc.message})", hint="`sinfo -s` lists the partitions") from None
        raise
    lines = [fields(line) for line in text.splitlines() if line.strip()]
    if not lines:
        raise UsageError(f"--cluster slurm:{partition}: Slurm knows no such partition")
    node_list = lines[0].get("Nodes", "")
    every = [slurm_node(fields(line)) for line in client("scontrol", "show", "node", "-o", node_list).splitlines() if line.strip()] if node_list else []
    if not every:
        raise UsageError(f"--cluster slurm:{partition}: the partition has no nodes")
    unavailable: list[str] = []
    state = lines[0].get("State", "UP")
    if state != "UP":
        unavailable.append(f"partition {partition} is {state}")
    nodes = [n for n in every if n.usable] if state == "UP" else []
    unavailable += [f"{n.name} is {n.state}" for n in every if not n.usable]
    limit = lines[0].get("MaxNodes", "UNLIMITED")
    count = min(len(nodes), int(limit)) if limit.isascii() and limit.isdigit() else len(nodes)
    gres = [n.gpus for n in nodes]
    features = [n.features for n in nodes]
    branches = [next((f for f in sorted(fs) if re.fullmatch(r"R[0-9]{3}", f)), None) for fs in features]
    links = [next((f for f in sorted(fs) if f.lower() in ("nvlink", "pcie")), None) for fs in features]
    scratch = [n.tmp_disk_bytes for n in nodes if n.tmp_disk_bytes is not None]
    cpus = [n.cpus for n in nodes if n.cpus is not None]
    memory = [n.memory_bytes for n in nodes if n.memory_bytes is not None]
    arch = _common([n.arch for n in nodes])
    return Pool(
        name=partition,
        nodes=count,
        gpu_model=_common([g[0] for g in gres]),
        gpus_per_node=min((g[1] for g in gres), default=0),
        driver_branch=_common(branches),
        interconnect=(_common(links) or "").lower() or None,
        local_scratch_bytes=(min(scratch) or None) if scratch and len(scratch) == len(nodes) else None,
        shared_bytes=shared_bytes,
        source=f"slurm partition {partition}",
        cpus_per_node=min(cpus) if cpus and len(cpus) == len(nodes) else None,
        memory_bytes=min(memory) if memory and len(memory) == len(nodes) else None,
        cpu_capabilities=_common([_capabilities(fs, arch) for fs in features]) or (),
        architecture=arch,
        unavailable=tuple(unavailable),
    )
