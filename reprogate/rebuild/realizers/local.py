"""Ranks as local processes: what the venv and current realizers share."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from reprogate.core.processes import end_tree

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox


class LocalProcess:
    """A rank in its own process group, so killing it ends everything it started; inside the
    sandbox (rebuild/sandbox.py) when one is given, which bwrap starts with exactly `env`."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path, sandbox: Sandbox | None = None) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        line = sandbox.wrap(argv, cwd) if sandbox is not None else argv
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(line, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        end_tree(self.proc)
