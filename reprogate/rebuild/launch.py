"""Start a record's entrypoint as W local ranks with torchrun's environment, and wait for it.

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (what
torchrun sets), REPROGATE_TRACE_DIR (where reprogate.runtime.trace writes) and REPROGATE_SEED, plus the
record's behaviour-changing variables. Output of each rank goes to its own log file. When one rank
fails or the time limit passes, the others are killed (process groups), so a run never hangs.

Only examples/tiny/make_reference.py starts ranks this way now; `reprogate rebuild` starts them
through rebuild/launchers and the rank host (examples/tiny/make_reference_2node.py does too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reprogate.core.ports import free_port
from reprogate.core.processes import end_all


@dataclass
class RunResult:
    ok: bool
    seconds: float
    exit_codes: dict[int, int | None] = field(default_factory=dict)
    logs: dict[int, Path] = field(default_factory=dict)
    detail: str = ""

    def log_tail(self, lines: int = 20) -> str:
        """The end of the first failing rank's log (or rank 0's)."""
        failing = next((r for r, c in sorted(self.exit_codes.items()) if c not in (0, None)), 0)
        path = self.logs.get(failing)
        if path is None or not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def resolve_argv(argv: Sequence[str]) -> list[str]:
    """The entrypoint, with a bare `python` meaning this interpreter (the rebuild's environment)."""
    out = list(argv)
    if out and out[0] in ("python", "python3"):
        out[0] = sys.executable
    return out


def launch(argv: Sequence[str], cwd: Path, world_size: int, trace_dir: Path, log_dir: Path, seed: int, env: Mapping[str, str], timeout: float) -> RunResult:
    log_dir.mkdir(parents=True, exist_ok=True)
    trace_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    started = time.monotonic()
    procs: dict[int, subprocess.Popen[bytes]] = {}
    logs: dict[int, Path] = {}
    base = {**os.environ, **env}
    try:
        for rank in range(world_size):
            rank_env = {
                **base,
                "RANK": str(rank),
                "LOCAL_RANK": str(rank),
                "WORLD_SIZE": str(world_size),
                "LOCAL_WORLD_SIZE": str(world_size),
                "GROUP_RANK": "0",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                "REPROGATE_TRACE_DIR": str(trace_dir),
                "REPROGATE_SEED": str(seed),
            }
            logs[rank] = log_dir / f"rank{rank}.log"
            with open(logs[rank], "wb") as log:
                procs[rank] = subprocess.Popen(resolve_argv(argv), cwd=cwd, env=rank_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        codes: dict[int, int | None] = {r: None for r in procs}
        while any(c is None for c in codes.values()):
            for rank, proc in procs.items():
                if codes[rank] is None:
                    codes[rank] = proc.poll()
            failed = [r for r, c in codes.items() if c not in (None, 0)]
            if failed:
                return RunResult(False, time.monotonic() - started, codes, logs, f"rank {failed[0]} exited with code {codes[failed[0]]}")
            if time.monotonic() - started > timeout:
                return RunResult(False, time.monotonic() - started, codes, logs, f"the run did not finish within {timeout:g} s")
            time.sleep(0.05)
        return RunResult(True, time.monotonic() - started, codes, logs)
    except OSError as exc:
        return RunResult(False, time.monotonic() - started, {}, logs, f"cannot start the entrypoint: {exc}")
    finally:
        end_all(procs.values())
