"""Ending child processes for good. Preflight ranks and rebuild ranks run in their own process
groups (start_new_session), so killing the group ends what stayed in it; code under test that left
the group (setsid, a double fork) is found as a descendant of this process, which is its
subreaper while the rebuild runs, and killed before any verdict is written."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import time
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


def end_tree(proc: subprocess.Popen[bytes], wait: float = 5.0) -> None:
    """SIGKILL a child, its process group and every process below it, then wait (up to `wait`
    seconds) until all of them are gone. A sandboxed rank's inner processes run in a session of
    their own (bwrap --new-session) and die only after bwrap does: what a rank host still holds
    when it is stopped is the rank's own, ended here, not something that escaped it."""
    members = descendants(root=proc.pid) if proc.poll() is None else set()
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in members:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    proc.wait()
    ends = time.monotonic() + wait
    while members and time.monotonic() < ends:
        members = {pid for pid in members if not _reaped(pid)}
        if members:
            time.sleep(0.01)


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper(on: bool = True) -> bool:
    """Make this process (or, with on=False, no longer) the subreaper of everything it starts (Linux): a descendant that escapes
    its process group (setsid, a double fork) is re-parented to us when its parent exits, not to
    init, so `end_escaped` can still find it. False where the kernel or libc does not offer it."""

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process this one can see (from /proc/*/stat)."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # after the command name, which may hold spaces and ')'
        if len(fields) > 1:
            found[int(name)] = int(fields[1])
    return found


def descendants(spared: frozenset[int] = frozenset(), root: int | None = None) -> set[int]:
    """Processes below this one (or below `root`), leaving out `spared` and everything below a spared process."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [p for p in children.get(os.getpid() if root is None else root, []) if p not in spared]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo += [c for c in children.get(pid, []) if c not in spared]
    return found


def end_escaped(spared: frozenset[int], rounds: int = 50) -> int:
    """SIGKILL every descendant that is not `spared` (what this process had running before it
    started the code under test, and what those started), until none is left; returns how many.
    Killing top-down makes the loop converge: a killed process cannot fork again, and its
    children come to us as orphans, to be found in the next round."""
    killed: set[int] = set()
    for _ in range(rounds):
        found = descendants(spared)
        dead = {pid for pid in found - killed if _zombie(pid)}  # ended already, re-parented to us: collected, not counted
        for pid in dead:
            _reaped(pid)
        alive = found - killed - dead
        stragglers = {pid for pid in found if pid in killed and not _reaped(pid)}
        if not alive and not stragglers:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.add(pid)
        time.sleep(0.02)
    for pid in killed:
        _reaped(pid)
    return len(killed)


def _reaped(pid: int) -> bool:
    """Collect `pid` if it is our child and has died; True when it is gone for good."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return _zombie(pid)  # another's child: gone once it has died
    return done == pid


def _zombie(pid: int) -> bool:
    """Whether `pid` has ended (a zombie waiting to be collected, or gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X")
