"""The one worker pool: many independent tasks, a bounded number in flight, results in order.

`validate` (chunks of records: parsing, schema, rules) and `dataset verify`/`build` (batches of
files to hash, chunks of shard lines to check) fan CPU work out the same way. Python work per
task holds the GIL, so many tasks go to forked processes (Linux; the parent's compiled schemas
and rules are inherited, not rebuilt); few, or other systems, go to threads or run here.

concurrent.futures' process pool moves each task through a feeder thread, a manager thread and a
future; for tasks as small as a batch of small files that bookkeeping cost the parent more than a
microsecond per file, so forked workers are fed through socket pairs by the calling thread. A
worker holds at most PER_WORKER tasks and always takes what is sent, so neither side can block the
other whatever the size of a task or a reply. Tasks are pulled only as workers free up (their
arguments may depend on results already seen), and results come back in the order tasks were
given. A worker's exception is raised in the caller as itself, with the worker's traceback as its
cause; a worker that stops without answering (killed: out of memory, a signal) is WorkerDied.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

IN_FLIGHT_PER_JOB = 4  # tasks queued per thread


class WorkerDied(RuntimeError):
    """A forked worker stopped before it answered (killed by a signal, or out of memory)."""


class RemoteTraceback(Exception):
    """Where in a worker process an exception raised in the caller happened (its cause)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def worker_count(jobs: int | None) -> int:
    """The workers to use: `jobs` when given (--jobs), else one per usable CPU; at least one."""
    return max(1, jobs or usable_cpus())


def use_processes(jobs: int, count: int, minimum: int) -> bool:
    """Whether `count` units of Python work are worth forked workers: `minimum` is where forking
    starts to cost less than it saves, for the caller's kind of unit."""
    return jobs > 1 and count >= minimum and sys.platform.startswith("linux")


def _failure(exc: BaseException) -> tuple[BaseException | None, str]:
    """(the exception, if it survives pickling both ways, else None; the worker's traceback).
    The pipe to the parent pickles whatever it carries anyway, and both of its ends are this
    process and its own forks: nothing unpickled here came from outside."""
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - an exception that cannot travel goes as its text alone
        return None, text
    return exc, text


def _serve(function: Callable[..., Any], conn: Any, others: list[Any], initializer: Callable[[], None] | None) -> None:
    """A forked worker: run `function` on each argument tuple received on `conn` until it closes.

    A thread of its own receives, at once and always, so the parent's send never waits on this
    worker. Without it the two could wait on each other: a reply larger than the socket buffer
    (a batch of long shard names) waits for the parent to read, while the parent waits to send
    the next task into this worker's full buffer — a hang, seen with 3,000-byte names."""

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    for other in others:  # so that only the parent holds the other end: its exit ends our recv
        other.close()
    if initializer is not None:
        initializer()
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def receive() -> None:
        while True:
            try:
                args = conn.recv()
            except (EOFError, OSError):
                args = None
            inbox.put(args)
            if args is None:
                return

    threading.Thread(target=receive, name="reprogate-worker-inbox", daemon=True).start()
    while (args := inbox.get()) is not None:
        try:
            reply: tuple[str, Any] = ("ok", function(*args))
        except Exception as exc:  # noqa: BLE001 - sent back and raised in the parent
            reply = ("error", _failure(exc))
        try:
            conn.send(reply)
        except OSError:  # the parent is gone
            return


class _Forked:
    """Worker processes fed through socket pairs by the calling thread (see the module docstring);
    tasks go to the least busy worker and come back in the order they were sent."""

    PER_WORKER = 2

    def __init__(self, jobs: int, function: Callable[..., Any], initializer: Callable[[], None] | None) -> None:

        context = multiprocessing.get_context("fork")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for _ in range(jobs):
            parent, child = context.Pipe(duplex=True)
            process = context.Process(target=_serve, args=(function, child, [*self.conns, parent], initializer), daemon=True, name="reprogate-worker")
            process.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(process)
        self.busy = [0] * jobs

    @property
    def capacity(self) -> int:
        return len(self.conns) * self.PER_WORKER

    def _died(self, worker: int) -> WorkerDied:
        process = self.procs[worker]
        process.join(timeout=1)  # reap it, so its exit code can be named
        return WorkerDied(f"worker process {process.pid} stopped (exit code {process.exitcode})")

    def submit(self, args: tuple[Any, ...]) -> int:
        worker = min(range(len(self.busy)), key=self.busy.__getitem__)
        try:
            self.conns[worker].send(args)
        except OSError:  # its end of the pipe is closed: the worker is gone
            raise self._died(worker) from None
        self.busy[worker] += 1
        return worker

    def result(self, worker: int) -> Any:
        try:
            status, value = self.conns[worker].recv()
        except (EOFError, OSError):
            raise self._died(worker) from None
        self.busy[worker] -= 1
        if status != "ok":
            exc, text = value
            if exc is None:
                raise RuntimeError(f"worker process failed: {text.strip().splitlines()[-1]}") from RemoteTraceback(text)
            raise exc from RemoteTraceback(text)
        return value

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except OSError:
                pass
            conn.close()
        for process in self.procs:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()


def ordered_map(
    function: Callable[..., Any],
    tasks: Iterable[tuple[tuple[Any, ...], Any]],
    jobs: int,
    processes: bool,
    initializer: Callable[[], None] | None = None,
) -> Iterator[tuple[Any, Any]]:
    """(tag, function(*args)) for each (args, tag) of `tasks`, in order, computed by `jobs`
    forked processes (`processes`; each runs `initializer` first), threads, or here when jobs is
    1. At most a few tasks per worker are in flight, so memory does not grow with the task count."""
    forked = _Forked(jobs, function, initializer) if processes else None
    threads = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="reprogate-worker") if forked is None and jobs > 1 else None
    limit = forked.capacity if forked is not None else jobs * IN_FLIGHT_PER_JOB
    pending: deque[tuple[Any, Any]] = deque()

    def finish(tag: Any, handle: Any) -> tuple[Any, Any]:
        if forked is not None:
            return tag, forked.result(handle)
        return tag, handle.result() if isinstance(handle, Future) else handle

    try:
        for args, tag in tasks:
            handle: Any  # a forked task's number, a thread's Future, or the value computed here
            if forked is not None:
                handle = forked.submit(args)
            elif threads is not None:
                handle = threads.submit(function, *args)
            else:
                handle = function(*args)
            pending.append((tag, handle))
            while len(pending) >= limit or (pending and forked is None and threads is None):
                yield finish(*pending.popleft())
        while pending:
            yield finish(*pending.popleft())
    finally:
        if forked is not None:
            forked.close()
        if threads is not None:
            threads.shutdown(wait=True, cancel_futures=True)
