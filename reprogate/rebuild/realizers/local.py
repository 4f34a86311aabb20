"""Ranks as local processes: what the venv and current realizers share.

Unsandboxed, each rank is a process of its own; in the sandbox, all ranks of the node are started
together in one (rebuild/sandbox.py: one network namespace, so they meet over its loopback)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprogate.core.fileio import create_for_code
from reprogate.core.processes import end_tree
from reprogate.rebuild.realizers.base import RankProcess, RankStart
from reprogate.rebuild.sandbox import NodeRank

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox


def start_local_ranks(starts: Sequence[RankStart], cwd: Path, sandbox: Sandbox | None) -> dict[int, RankProcess]:
    """Every rank of `starts` on this machine: in one sandbox when there is one, else each alone."""
    if sandbox is None:
        return {s.rank: LocalProcess(list(s.argv), s.env, cwd, s.log) for s in starts}
    node = sandbox.start_node(starts, cwd)
    return {s.rank: NodeRank(node, s.rank) for s in starts}


class LocalProcess:
    """A rank in its own process group, so killing it ends everything it started; inside the
    sandbox (rebuild/sandbox.py) when one is given, where bwrap sets exactly `env` (bwrap itself
    starts with the sandbox's fixed launcher environment)."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path, sandbox: Sandbox | None = None) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        quiet: dict[str, Any] = {"stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL, "start_new_session": True}
        with os.fdopen(create_for_code(log, log.parent), "wb") as out:  # a link a rank left there is replaced, not followed
            if sandbox is not None:
                self.proc = sandbox.popen(argv, cwd, env, stdout=out, **quiet)
            else:
                self.proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=out, **quiet)

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        end_tree(self.proc)
