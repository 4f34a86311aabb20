"""Starting and stopping the real daemons the tests use (Podman's API service, munged, Slurm).

Each daemon runs in the foreground as a child of pytest, with PR_SET_PDEATHSIG so that a pytest
killed without teardown (SIGKILL, a crashed worker) takes its daemons with it instead of leaving
them bound to ports and sockets. Teardown itself goes through `stop`, which escalates from SIGTERM
to SIGKILL after a grace period.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setpgrp()  # its own process group: a Ctrl-C to pytest reaches pytest, which then tears down


def start(argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    """Start `argv` in the foreground (the daemon's own -D/-F flag is the caller's job), stdout and
    stderr appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - prctl has no Popen option; only pytest's main thread starts daemons
        )


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL. Safe to call twice."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(ready: Callable[[], bool], timeout: float, what: str, log: Path | None = None, process: subprocess.Popen[bytes] | None = None) -> None:
    """Poll `ready` until it returns True; raise with `what` (and the log's tail) after `timeout`
    seconds or as soon as `process` has exited."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        if ready():
            return
        exited = process is not None and process.poll() is not None
        if exited or time.monotonic() > deadline:
            reason = f"exited with {process.returncode}" if exited and process is not None else f"not ready after {timeout:.0f} s"
            tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
            raise RuntimeError(f"{what}: {reason}\n{tail}")
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def kill_strays(marker_env: str, folder: Path) -> list[int]:
    """SIGKILL every process that belongs to a test daemon set although it is not our child: its
    environment holds `marker_env` (e.g. ``SLURM_CONF=/tmp/.../slurm.conf``) or its working folder
    lies under `folder`. Slurm's step daemons and the tasks of a job whose node was killed are
    such processes. Returns the pids killed."""
    killed = []
    marker = marker_env.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if marker in environ or Path(cwd).is_relative_to(folder):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except ProcessLookupError:
                pass
    return killed


def unmount_under(folder: Path) -> None:
    """Lazily unmount every mount point at or below `folder` (deepest first), so it can be deleted."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if Path(point).is_relative_to(folder):
            mounts.append(point)
    for point in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
