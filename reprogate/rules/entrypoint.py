"""The entrypoint agrees with what the record says of it: its arguments with the configuration
pinned from them (job.config hash_of: argv), a torchrun command with the world size.

A script configured on its command line (`python train.py --lr 3e-4`) has its arguments pinned
as `job.config.argv`; an entrypoint whose arguments no longer are those has changed the
configuration, and the finding names each flag that changed. A torchrun entrypoint starts
nproc-per-node x nnodes ranks; a record that says another world size would be rebuilt with
another number of ranks than the command states.
"""

from __future__ import annotations

from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext
from reprogate.runtime.entry_command import EntryCommand, EntryCommandError, arguments_digest, flag_changes, read_entry


def _command(ctx: RuleContext) -> EntryCommand | None:
    job = ctx.record.job
    if job is None:
        return None  # the schema says so
    try:
        return read_entry(list(job.entrypoint))
    except EntryCommandError:
        return None  # reported by entrypoint_is_readable


def entrypoint_is_readable(ctx: RuleContext) -> Iterator[Diagnostic]:
    job = ctx.record.job
    if job is None:
        return
    try:
        read_entry(list(job.entrypoint))
    except EntryCommandError as exc:
        yield ctx.finding(("job", "entrypoint"), str(exc), "entrypoint-unreadable", "torchrun's options come before the script, each with its value")


def arguments_match_configuration(ctx: RuleContext) -> Iterator[Diagnostic]:
    config = ctx.record.job.config if ctx.record.job is not None else None
    if config is None or config.hash_of != "argv" or config.argv is None:
        return  # the schema says so
    argv = list(config.argv)
    digest = arguments_digest(argv)
    if config.hash != digest:
        yield ctx.finding(
            ("job", "config", "hash"),
            f"the configuration's hash is not the digest of job.config.argv: pinned {config.hash}, the arguments' is {digest}",
            "canonical-mismatch",
            f"if job.config.argv is what the reference ran with, the hash is {digest}",
        )
    command = _command(ctx)
    if command is None:
        return
    if command.launcher == "other" or command.no_python:
        yield ctx.finding(
            ("job", "config", "hash_of"),
            "the configuration is pinned as the entrypoint's arguments (hash_of: argv), but the entrypoint is not a `python SCRIPT` or torchrun "
            "command whose script arguments can be told",
            "argv-without-script",
            "pin a configuration file instead (job.config.path with its hash)",
        )
        return
    changes = flag_changes(argv, command.arguments)
    if changes:
        yield ctx.finding(
            ("job", "entrypoint"),
            f"the entrypoint's arguments are not the configuration the record pins (job.config.argv): {'; '.join(changes)}",
            "configuration-changed",
            "a changed flag is a changed configuration: make it a new reference (`reprogate init --force`), or restore the flag",
        )


def torchrun_matches_world_size(ctx: RuleContext) -> Iterator[Diagnostic]:
    command = _command(ctx)
    world = ctx.record.execution.world_size if ctx.record.execution is not None else None
    if command is None or command.launcher != "torchrun" or world is None:
        return
    if command.world_size is None:
        yield ctx.finding(
            ("job", "entrypoint"),
            "torchrun's --nproc-per-node or --nnodes is not one number: a rebuild cannot tell how many ranks the reference ran",
            "torchrun-shape",
            "write the counts the reference ran with, e.g. --nproc-per-node 2 --nnodes 1",
        )
    elif command.world_size != world:
        yield ctx.finding(
            ("job", "entrypoint"),
            f"torchrun starts {command.world_size} rank(s) (--nproc-per-node {command.nproc_per_node} x --nnodes {command.nnodes}), "
            f"the record says execution.world_size {world}",
            "torchrun-shape",
            "the rebuild starts execution.world_size ranks and runs the script on each as torchrun's worker: make the two agree",
        )
