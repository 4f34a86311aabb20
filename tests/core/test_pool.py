"""The one worker pool: results in task order whatever runs them, a worker's exception raised as
itself in the caller, a killed worker named as such, and each forked worker initialised once."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from reprogate.core.pool import RemoteTraceback, WorkerDied, ordered_map, use_processes, worker_count

FORKS = sys.platform.startswith("linux")
_started: list[int] = []


def _square_with_pid(n: int) -> tuple[int, int, int]:
    return n * n, os.getpid(), len(_started)


def _fail_at(n: int, bad: int) -> int:
    if n == bad:
        raise KeyError(f"task {n}")
    return n


def _die(n: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return n


def _start() -> None:
    _started.append(os.getpid())


@pytest.mark.parametrize(("jobs", "processes"), [(1, False), (3, False), *([(3, True)] if FORKS else [])])
def test_results_come_in_task_order(jobs: int, processes: bool) -> None:
    tasks = (((n,), f"tag{n}") for n in range(50))
    found = list(ordered_map(_square_with_pid, tasks, jobs, processes, initializer=_start if processes else None))
    assert [tag for tag, _ in found] == [f"tag{n}" for n in range(50)]
    assert [value[0] for _, value in found] == [n * n for n in range(50)]
    if processes:
        assert {pid for _, (_, pid, _) in found} - {os.getpid()} and all(started == 1 for _, (_, _, started) in found)


@pytest.mark.parametrize("processes", [False, *([True] if FORKS else [])])
def test_a_worker_exception_is_raised_as_itself(processes: bool) -> None:
    with pytest.raises(KeyError, match="task 7") as caught:
        list(ordered_map(_fail_at, (((n, 7), n) for n in range(20)), 2, processes))
    if processes:
        assert isinstance(caught.value.__cause__, RemoteTraceback) and "_fail_at" in str(caught.value.__cause__)


@pytest.mark.skipif(not FORKS, reason="forked workers are Linux only")
def test_a_killed_worker_is_worker_died() -> None:
    with pytest.raises(WorkerDied, match="stopped"):
        list(ordered_map(_die, (((n,), n) for n in range(8)), 2, True))


def test_worker_count_and_process_policy() -> None:
    assert worker_count(3) == 3 and worker_count(None) >= 1 and worker_count(0) >= 1
    assert not use_processes(1, 10**6, 10) and not use_processes(4, 9, 10)
    assert use_processes(4, 10, 10) == FORKS
