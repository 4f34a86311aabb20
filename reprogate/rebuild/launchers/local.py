"""Every rank on this machine, rendezvous on loopback: the launcher of a one-node rebuild."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from pathlib import Path

from reprogate.core.errors import UsageError
from reprogate.core.ports import free_port
from reprogate.rebuild.launchers.base import Shape
from reprogate.rebuild.realizers.base import RankProcess, RankStart, Realized

NAME = "local"


def torchrun_environment(
    rank: int, local_rank: int, world_size: int, local_world_size: int, node_rank: int, master_addr: str, master_port: int
) -> dict[str, str]:
    """The variables torchrun sets for a rank, which training scripts read."""
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(local_rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(local_world_size),
        "GROUP_RANK": str(node_rank),
        "NODE_RANK": str(node_rank),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
    }


class LocalGroup:
    def __init__(self, processes: dict[int, RankProcess]) -> None:
        self.processes = processes

    def poll(self) -> dict[int, int | None]:
        return {rank: process.poll() for rank, process in self.processes.items()}

    def where(self, rank: int) -> str:
        return "this machine"

    def describe(self, rank: int, code: int | None) -> str:
        return f"exited with code {code}"

    @property
    def nodes(self) -> list[str]:
        return [socket.gethostname()]

    def placement(self) -> dict[int, str]:
        return {rank: socket.gethostname() for rank in self.processes}

    def stop(self) -> None:
        for process in self.processes.values():
            process.kill()


class LocalLauncher:
    name = NAME
    ranks_run_here = True

    def admit(self, shape: Shape) -> None:
        if shape.nodes != 1:
            raise UsageError(
                f"the record's shape is {shape.nodes} nodes; the local launcher runs one",
                hint="rebuild with --launcher slurm (or kubernetes): a multi-node record is rebuilt only with its recorded shape",
            )

    def start(self, realized: Realized, argv: list[str], env: Mapping[str, str], shape: Shape, cwd: Path, logs: Path) -> LocalGroup:
        self.admit(shape)
        port = free_port()
        starts = [
            RankStart(
                rank,
                tuple(argv),
                {**env, **torchrun_environment(rank, rank, shape.world_size, shape.world_size, 0, "127.0.0.1", port)},
                logs / f"rank{rank}.log",
            )
            for rank in range(shape.world_size)
        ]
        processes: dict[int, RankProcess] = {}
        group = LocalGroup(processes)
        try:
            processes.update(realized.spawn_ranks(starts, cwd))  # one node: in one sandbox where there is one, meeting over its loopback
        except BaseException:
            group.stop()
            raise
        return group
