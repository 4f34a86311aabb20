"""What a launcher is: it starts the ranks of a rebuild, where the record's shape says.

A launcher gets a realized environment, the command every rank runs (the rank host) and the
environment shared by all ranks; it adds torchrun's variables per rank (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and returns a group the
rebuild can poll and stop. `where(rank)` names the node a rank ran on and `describe(rank, code)`
says how it ended, for failure messages ("rank 1 on node n2 was lost with its node ...").

`admit(shape)` runs before the first stage: whatever a launcher can refuse without starting
anything (a partition smaller than the record's node count, a scheduler that does not answer)
is refused there, before an environment is realized or data fetched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reprogate.core.record import RunRecord
from reprogate.rebuild.realizers.base import Realized


@dataclass(frozen=True)
class Shape:
    """The execution shape a rebuild replays: it must be the record's (the envelope checks)."""

    world_size: int
    nodes: int = 1
    gpus_per_node: int = 0  # asked of a scheduler (Slurm GRES, nvidia.com/gpu per pod)
    time_limit: float | None = None  # seconds the ranks may live at most: a scheduler's limit, so nothing outlives a killed rebuild for long

    @property
    def ranks_per_node(self) -> int:
        return max(1, self.world_size // max(1, self.nodes))


class RankGroup(Protocol):
    def poll(self) -> dict[int, int | None]:
        """Exit code per rank, None while it runs."""
        ...

    def where(self, rank: int) -> str:
        """Where the rank runs, in words (`this machine`, `node n2`)."""
        ...

    def describe(self, rank: int, code: int | None) -> str:
        """How the rank ended, in words (`exited with code 1`, `was lost with its node ...`)."""
        ...

    @property
    def nodes(self) -> list[str]:
        """The nodes the group runs on, in rank order of their first rank."""
        ...

    def placement(self) -> dict[int, str]:
        """The node each rank really ran on (rank -> node name), as far as known."""
        ...

    def stop(self) -> None:
        """End every rank (and release what the launcher holds: an allocation, pods)."""
        ...


class Launcher(Protocol):
    name: str
    ranks_run_here: bool  # False: ranks run on other machines, whose devices this one cannot see

    def admit(self, shape: Shape) -> None:
        """Refuse, before anything starts, a shape this launcher cannot run (UsageError, exit 2)
        or a scheduler that does not answer (InfrastructureError, exit 3)."""
        ...

    def start(self, realized: Realized, argv: list[str], env: Mapping[str, str], shape: Shape, cwd: Path, logs: Path) -> RankGroup: ...


def gpus_per_node(record: RunRecord, nodes: int) -> int:
    """GPUs the record's run used on each node: by the node each GPU sits in, else spread evenly."""
    gpus = (record.devices.gpus if record.devices is not None else None) or ()
    if not gpus:
        return 0
    by_node = Counter(g.node for g in gpus if g.node is not None)
    if by_node:
        return max(by_node.values())
    return -(-len(gpus) // max(1, nodes))


def record_shape(record: RunRecord, world_size: int | None = None, time_limit: float | None = None) -> Shape:
    """The shape a rebuild of this record must have (--world-size may ask for another; the envelope judges it)."""
    execution = record.execution
    nodes = (execution.nodes if execution is not None else None) or 1
    world = int(world_size or (execution.world_size if execution is not None else None) or 1)
    return Shape(world, nodes, gpus_per_node(record, nodes), time_limit)
