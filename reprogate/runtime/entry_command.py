"""What an entrypoint command is: which launcher, which script, and the arguments the script gets.

`python train.py --lr 3e-4`, `python -m pkg.train ...` and `torchrun --nproc-per-node 2 train.py
--lr 3e-4` (or `python -m torch.distributed.run ...`) are the commands training is started with.
A record states the command exactly (`job.entrypoint`); `init` pins the script's arguments as the
configuration, the rebuild's `config` stage and validate compare them flag by flag, and the rank
host runs a torchrun command as one of torchrun's workers: the rebuild's launcher already is the
agent torchrun would be (it starts `--nproc-per-node` x `--nnodes` ranks with torchrun's
variables), so the script runs once per rank, never a torchrun inside each rank.

torchrun's own command line is read with argparse, with the options of torch 2.13's
`torch.distributed.run.get_args_parser()` (tests/runtime/test_entry_command.py holds the two to
the same option set, value or flag): this module runs where torch may not be installed (validate
on a GitHub-hosted runner) and imports only the standard library.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Literal

from reprogate.core.canonical import canonical_digest

Launcher = Literal["python", "torchrun", "other"]

# torchrun's options that take a value, then its flags (each with its underscore spelling, as torchrun accepts both)
TORCHRUN_VALUED = (
    "--nnodes",
    "--nproc-per-node",
    "--rdzv-backend",
    "--rdzv-endpoint",
    "--rdzv-id",
    "--rdzv-conf",
    "--max-restarts",
    "--monitor-interval",
    "--start-method",
    "--event-log-handler",
    "--role",
    "--log-dir",
    "-r",
    "--redirects",
    "-t",
    "--tee",
    "--local-ranks-filter",
    "--duplicate-stdout-filters",
    "--duplicate-stderr-filters",
    "--node-rank",
    "--master-addr",
    "--master-port",
    "--local-addr",
    "--logs-specs",
    "--numa-binding",
    "--signals-to-handle",
    "--shutdown-timeout",
)
TORCHRUN_FLAGS = ("--standalone", "-m", "--module", "--no-python", "--run-path", "--virtual-local-rank")
TORCHRUN_NAMES = ("torchrun",)
TORCHRUN_MODULE = "torch.distributed.run"
PYTHON_NAMES = ("python", "python3")


class EntryCommandError(ValueError):
    """A command whose launcher's own options cannot be read (a torchrun option without its value)."""


@dataclass(frozen=True)
class EntryCommand:
    """One entrypoint, read: the launcher, what it starts, the arguments that reach the script."""

    launcher: Launcher
    script: str | None  # the script file, as written (relative to the working folder)
    module: str | None  # `-m MODULE` instead of a script
    arguments: tuple[str, ...]  # what the script's own argument parser reads
    nproc_per_node: int | None = None  # torchrun's, when it is a number
    nnodes: int | None = None  # torchrun's, when it is one number (not MIN:MAX)
    no_python: bool = False  # torchrun --no-python: the "script" is a program of its own

    @property
    def world_size(self) -> int | None:
        """The ranks a torchrun command starts (its nproc-per-node x nnodes), when both are numbers."""
        if self.launcher != "torchrun" or self.nproc_per_node is None or self.nnodes is None:
            return None
        return self.nproc_per_node * self.nnodes


def _torchrun_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="torchrun", add_help=False, exit_on_error=False)
    for option in TORCHRUN_VALUED:
        spellings = [option, option.replace("-", "_").replace("__", "--", 1)] if option.startswith("--") and "-" in option[2:] else [option]
        parser.add_argument(*dict.fromkeys(spellings), dest=option.lstrip("-").replace("-", "_"))
    for flag in TORCHRUN_FLAGS:
        spellings = [flag, flag.replace("-", "_").replace("__", "--", 1)] if flag.startswith("--") and "-" in flag[2:] else [flag]
        parser.add_argument(*dict.fromkeys(spellings), dest=flag.lstrip("-").replace("-", "_"), action="store_true")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser


def _number(value: str | None, default: int) -> int | None:
    if value is None:
        return default
    return int(value) if value.isdigit() else None  # "auto", "gpu", "1:4": not a fixed count


def _torchrun(options: list[str]) -> EntryCommand:
    try:
        parsed = _torchrun_parser().parse_args(options)
    except (argparse.ArgumentError, SystemExit) as exc:  # exit_on_error=False still exits for a missing positional
        raise EntryCommandError(f"torchrun {' '.join(options)}: {exc}") from None
    module = bool(parsed.m or parsed.module)
    return EntryCommand(
        "torchrun",
        None if module else parsed.training_script,
        parsed.training_script if module else None,
        tuple(parsed.training_script_args),
        _number(parsed.nproc_per_node, 1),
        _number(parsed.nnodes, 1),
        bool(parsed.no_python),
    )


def is_python(program: str, extra: tuple[str, ...] = ()) -> bool:
    name = os.path.basename(program)
    return name in PYTHON_NAMES or name in extra or (name.startswith("python3.") and name[len("python3.") :].isdigit())


def read_entry(argv: list[str] | tuple[str, ...], python_names: tuple[str, ...] = ()) -> EntryCommand:
    """The entrypoint `argv` read as its launcher would read it."""
    argv = list(argv)
    if not argv:
        return EntryCommand("other", None, None, ())
    if os.path.basename(argv[0]) in TORCHRUN_NAMES:
        return _torchrun(argv[1:])
    if is_python(argv[0], python_names) and len(argv) >= 2:
        if argv[1] == "-m" and len(argv) >= 3:
            if argv[2] == TORCHRUN_MODULE:
                return _torchrun(argv[3:])
            return EntryCommand("python", None, argv[2], tuple(argv[3:]))
        if not argv[1].startswith("-"):
            return EntryCommand("python", argv[1], None, tuple(argv[2:]))
    return EntryCommand("other", None, None, tuple(argv[1:]))


def arguments_digest(argv: list[str] | tuple[str, ...]) -> str:
    """The canonical digest a record pins for a script's argument list (job.config with hash_of:
    argv). The order is kept: argparse takes a repeated flag's last value."""
    return canonical_digest([str(a) for a in argv])


# flags, for saying which one changed ---------------------------------------------------------


def flags(arguments: list[str] | tuple[str, ...]) -> list[tuple[str, str | None]]:
    """(flag, value) pairs as a reader sees them: `--lr 3e-4` and `--lr=3e-4` alike, a flag
    followed by another flag (or nothing) has no value, and a word before any flag is positional
    (named by its place). Only for saying what changed: the pin is the exact argument list."""
    out: list[tuple[str, str | None]] = []
    position = 0
    items = list(arguments)
    index = 0
    while index < len(items):
        item = items[index]
        if item.startswith("-") and len(item) > 1 and not _is_number(item):
            name, sep, value = item.partition("=")
            if sep:
                out.append((name, value))
            elif index + 1 < len(items) and not (items[index + 1].startswith("-") and not _is_number(items[index + 1])):
                out.append((name, items[index + 1]))
                index += 1
            else:
                out.append((name, None))
        else:
            out.append((f"argument {position + 1}", item))
            position += 1
        index += 1
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def flag_changes(pinned: list[str] | tuple[str, ...], given: list[str] | tuple[str, ...]) -> list[str]:
    """What differs between two argument lists, flag by flag: `--lr 0.0003 -> 0.001`,
    `--tied added`, `--epochs 1 removed`; the order, when only the order differs."""
    before, after = flags(pinned), flags(given)
    if list(pinned) == list(given):
        return []
    old: dict[str, list[str | None]] = {}
    new: dict[str, list[str | None]] = {}
    for name, value in before:
        old.setdefault(name, []).append(value)
    for name, value in after:
        new.setdefault(name, []).append(value)
    changes: list[str] = []
    for name in dict.fromkeys([*old, *new]):
        if name not in new:
            changes.append(f"{name} {_shown(old[name])} removed".replace("  ", " "))
        elif name not in old:
            changes.append(f"{name} {_shown(new[name])} added".replace("  ", " "))
        elif old[name] != new[name]:
            changes.append(f"{name} {_shown(old[name])} -> {_shown(new[name])}")
    return changes or [f"the same flags in another order: {' '.join(given)} (pinned: {' '.join(pinned)})"]


def _shown(values: list[str | None]) -> str:
    return ", ".join("(flag)" if v is None else v for v in values)
