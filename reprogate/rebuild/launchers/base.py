"""What a launcher is: it starts the ranks of a rebuild, where the record's shape says.

A launcher gets a realized environment, the command every rank runs (the rank host) and the
environment shared by all ranks; it adds torchrun's variables per rank (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and returns a group the
rebuild can poll and stop. `where(rank)` names the node a rank ran on, for failure messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol

from reprogate.rebuild.realizers.base import Realized


@dataclass(frozen=True)
class Shape:
    """The execution shape a rebuild replays: it must be the record's (the envelope checks)."""

    world_size: int
    nodes: int = 1

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

    @property
    def nodes(self) -> list[str]:
        """The nodes the group runs on, in rank order of their first rank."""
        ...

    def stop(self) -> None:
        """End every rank (and release what the launcher holds: an allocation, pods)."""
        ...


class Launcher(Protocol):
    name: str

    def start(self, realized: Realized, argv: list[str], env: Mapping[str, str], shape: Shape, cwd: Path, logs: Path) -> RankGroup: ...
