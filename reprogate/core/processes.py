"""Ending child processes for good: preflight ranks and rebuild ranks run in their own process
groups (start_new_session), so killing the group also ends anything they started."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable


def end_all(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """SIGKILL the process group of every child still running, then reap them all."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
