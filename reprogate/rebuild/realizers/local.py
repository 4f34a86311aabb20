"""Ranks as local processes: what the venv and current realizers share."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path


class LocalProcess:
    """A rank in its own process group, so killing it ends everything it started."""

    def __init__(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def poll(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
