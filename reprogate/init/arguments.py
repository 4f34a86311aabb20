"""An entrypoint's own arguments as the configuration: `python train.py --lr 3e-4 --epochs 1`.

Most scripts are configured on the command line (argparse), not by a file. For those, `init`
pins the script's arguments — exactly as the entrypoint gives them — as `job.config` with
`hash_of: argv` (`argv`, and `hash`, the canonical digest of that list). The record then states
the exact command (`job.entrypoint`) and the configuration within it; validate and the rebuild's
`config` stage compare the entrypoint's arguments with the pin and name each flag that changed.
A torchrun command (`torchrun --nproc-per-node 2 train.py ...`) also says how many ranks the
reference runs: its nproc-per-node x nnodes is the world size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprogate.core.errors import UsageError
from reprogate.runtime.entry_command import EntryCommand, EntryCommandError, arguments_digest, read_entry


@dataclass(frozen=True)
class ArgumentsPin:
    """The arguments the script reads, and their digest (job.config with hash_of: argv)."""

    argv: tuple[str, ...]
    hash: str

    def record(self) -> dict[str, object]:
        return {"hash_of": "argv", "argv": list(self.argv), "hash": self.hash}


def read_command(entrypoint: list[str]) -> EntryCommand:
    try:
        return read_entry(entrypoint)
    except EntryCommandError as exc:
        raise UsageError(f"--entrypoint: {exc}") from None


def arguments_pin(entrypoint: list[str]) -> ArgumentsPin:
    """The pin of a Python or torchrun entrypoint's script arguments; a usage error for a command
    whose script cannot be told (a shell wrapper): its configuration is then a file (--config)."""
    command = read_command(entrypoint)
    if command.launcher == "other" or command.no_python:
        raise UsageError(
            f"{' '.join(entrypoint)}: not a Python or torchrun command, so its script's arguments cannot be told from the launcher's",
            hint="--config FILE pins a configuration file instead; or start the script with `python SCRIPT ...` or `torchrun ... SCRIPT ...`",
        )
    return ArgumentsPin(command.arguments, arguments_digest(command.arguments))


def torchrun_world_size(entrypoint: list[str], given: int | None) -> int | None:
    """The world size a torchrun entrypoint states (None for other commands), refusing one that
    contradicts --world-size or that is no fixed number (`--nproc-per-node auto`, `--nnodes 1:4`)."""
    command = read_command(entrypoint)
    if command.launcher != "torchrun":
        return None
    if command.world_size is None:
        raise UsageError(
            f"{' '.join(entrypoint)}: torchrun's --nproc-per-node and --nnodes must be numbers for a reference run (a record states its world size)",
            hint="write the count: --nproc-per-node 2 --nnodes 1",
        )
    if command.nnodes != 1:
        raise UsageError(
            f"{' '.join(entrypoint)}: --nnodes {command.nnodes}; init runs the reference on this machine (one node)",
            hint="record a multi-node reference with `capture --into` on the cluster (docs/multi-node.md)",
        )
    if given is not None and given != command.world_size:
        raise UsageError(f"--world-size {given}, but the entrypoint's torchrun starts {command.world_size} rank(s) (--nproc-per-node x --nnodes)")
    return command.world_size


def mentions(entrypoint: list[str], path: Path, project: Path) -> bool:
    """Whether the entrypoint names the configuration file (`--config ../config/tiny.yaml`)."""
    for argument in entrypoint[1:]:
        value = argument.partition("=")[2] if argument.startswith("-") and "=" in argument else argument
        if value and (project / value).resolve() == path.resolve():
            return True
    return False
