"""Fuzz harness: `reprogate capacity`, a record against a Cluster file (the record's schema at
the boundary, then every requirement), and one Slurm `scontrol show node -o` line read into a
SlurmNode.

The first byte picks the subject: even, the rest is a Slurm node line; odd, a record (half of
those an example record mutated structurally, the rest the bytes as they are) held against a
fixed pool. Expected: a ReprogateError (exit 2 for a record of the wrong shape); otherwise
requirements, never an exception. Seeds: the example records, and node lines as Slurm writes them.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, files, fuzz, instrumented, structured, text

with instrumented():
    from reprogate.capacity.command import capacity_command
    from reprogate.capacity.pool import slurm_node
    from reprogate.core.errors import ReprogateError
    from reprogate.rebuild.launchers.slurm import fields

FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-capacity-"))
RECORD = FOLDER / "record.yaml"
POOL = FOLDER / "pool.yaml"
POOL.write_text(
    yaml.safe_dump(
        {
            "apiVersion": "reprogate/v1",
            "kind": "Cluster",
            "name": "pool",
            "nodes": 4,
            "gpus": {"model": "NVIDIA H100 80GB HBM3", "per_node": 8},
            "driver_branch": "R580",
            "interconnect": "nvlink",
            "cpu": {"architecture": "x86_64", "capabilities": ["default", "avx2"]},
            "storage": {"local_scratch_bytes": 1 << 42, "shared_bytes": 1 << 46, "shared_read_mb_per_s": 2000},
        }
    )
)
RECORDS = [yaml.safe_load(p.read_text()) for p in files("**/records/*.yaml", under=EXAMPLES)]
NODES = [
    "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 Gres=gpu:h100:8(S:0-1) RealMemory=1000 TmpDisk=2048 State=IDLE",
    "NodeName=n2 Arch=x86_64 CPUTot=4 RealMemory=1000 State=MIXED+DRAIN AvailableFeatures=R580,nvlink,avx512 Reason=disk full [root]",
]


def seeds() -> list[tuple[str, bytes]]:
    lines = [(f"node-{i}", b"\x00" + line.encode()) for i, line in enumerate(NODES)]
    raw = [(p.name, b"\x01\x00" + p.read_bytes()) for p in files("**/records/*.yaml", under=EXAMPLES)]
    return lines + raw + [(f"structured-{i}", bytes([1, 1, i]) + b"\x00" * 16) for i in range(len(RECORDS))]


def one(data: bytes) -> None:
    if not data:
        return
    if not data[0] & 1:
        line = text(data[1:])
        if line is not None:
            slurm_node(fields(line))
        return
    document = structured(data[1:], RECORDS)
    if document is not None:
        RECORD.write_text(yaml.safe_dump(document, sort_keys=False))
    else:
        RECORD.write_bytes(data[2:])
    try:
        capacity_command(RECORD, str(POOL), "json")
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds())
