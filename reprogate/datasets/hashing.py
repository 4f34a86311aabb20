"""Hash many files fast, in memory that grows neither with file size nor with file count.

Measured here: hashlib's sha256 runs at the per-core limit (about 1.7 GB/s with SHA-NI) and
releases the GIL on updates over 2 KiB, so threads scale with cores for large shards. Small files
are another matter: each costs four system calls (open, fstat, read, close; several microseconds
apiece in a container) and any Python work per file on top holds the GIL. So files travel in
batches of up to a few hundred; one worker opens, checks and hashes a whole batch with raw
`os.open`/`os.readv` into one reused buffer, and sends back one bytes object of concatenated
digests rather than an object per file. With many files the workers are processes (forked on
Linux), with few (or on other systems) threads. The calling process only walks or reads the
manifest and writes results, so it is not the bottleneck.

`hash_stream` takes and yields iterators, in order, with a bounded number of batches in flight:
a million shards are hashed without ever holding a million of anything.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from collections import deque
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

CHUNK = 256 * 1024  # read size: large enough to amortise a system call, small enough for L2
BATCH_FILES = 512
BATCH_BYTES = 8 * 1024 * 1024
LARGE_FILE = 8 * 1024 * 1024  # a file this big is a batch of its own
PER_FILE_WEIGHT = 4096  # a file costs about as much as this many bytes of hashing, whatever its size
UNKNOWN_SIZE = 1024 * 1024  # assumed for files of unknown size until finished batches tell better
PROCESS_MIN_FILES = 1000  # fewer files than this: forking workers costs more than it saves
IN_FLIGHT_PER_JOB = 4

ALGORITHMS = ("sha256", "blake3", "md5")

# What went wrong with one file, as a worker reports it (the caller words the finding).
MISSING = "missing"  # no such file, or not a regular file
SIZE = "size"  # its size is not the expected one (not hashed)
UNSAFE = "unsafe"  # a symlink that resolves outside the allowed root (not read)
UNREADABLE = "unreadable"  # it exists but cannot be read

Payload = TypeVar("Payload")


class AlgorithmUnavailable(Exception):
    """The algorithm needs an optional package that is not installed."""


def hasher_factory(algorithm: str) -> Callable[[], Any]:
    """A function returning a fresh hasher; raises AlgorithmUnavailable for unknown or missing ones."""
    if algorithm == "sha256":
        return hashlib.sha256
    if algorithm == "md5":
        return partial(hashlib.md5, usedforsecurity=False)
    if algorithm == "blake3":
        try:
            from blake3 import blake3
        except ImportError:
            raise AlgorithmUnavailable("--algorithm blake3 needs the blake3 package: pip install 'reprogate[blake3]'") from None
        return partial(blake3, max_threads=1)
    raise AlgorithmUnavailable(f"unknown hash algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")


def new_hasher(algorithm: str) -> Any:
    return hasher_factory(algorithm)()


@dataclass
class FileDigest:
    path: Path
    size: int
    checksum: str  # "<algorithm>:<hex>"
    error: str = ""  # why the file could not be read, if it could not


def hash_file(path: Path, algorithm: str, buffer: bytearray | None = None, on_bytes: Callable[[int], None] | None = None) -> FileDigest:
    """Digest of one file, streamed through `buffer`."""
    h = new_hasher(algorithm)
    size = 0
    try:
        with open(path, "rb", buffering=0) as fh:
            if buffer is None:
                buffer = bytearray(CHUNK)
            view = memoryview(buffer)
            while True:
                n = fh.readinto(buffer)
                if not n:
                    break
                h.update(view[:n])
                size += n
                if on_bytes is not None:
                    on_bytes(n)
    except OSError as exc:
        return FileDigest(path, size, "", exc.strerror or str(exc))
    return FileDigest(path, size, f"{algorithm}:{h.hexdigest()}")


# (concatenated raw digests, sizes, {index: (what went wrong, detail)})
BatchResult = tuple[bytes, list[int], dict[int, tuple[str, str]]]

_OPEN = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)  # NONBLOCK: a FIFO never hangs us
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def digest_files(
    paths: Sequence[str],
    algorithm: str,
    expected: Sequence[int],
    real_root: str | None = None,
    read: bool = True,
    on_bytes: Callable[[int], None] | None = None,
) -> BatchResult:
    """Check and hash a batch of files: the hot loop, run in a worker.

    Each file is opened without following a final symlink; one that is a symlink is followed
    only if it resolves inside `real_root` (when given). Then fstat: not a regular file is
    MISSING; a size other than `expected` (when >= 0) is SIZE and the file is not read. Reading
    stops when fstat's size is reached by a short read, saving the read that would return 0.
    `read=False` only checks. A file with a problem leaves a zero digest in its slot.
    """
    new = hasher_factory(algorithm)
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    buffers = (buffer,)
    readv, close, fstat, is_regular = os.readv, os.close, os.fstat, stat.S_ISREG
    blank = bytes(new().digest_size)
    inside = real_root.rstrip("/") + "/" if real_root else None
    digests: list[bytes] = []
    sizes: list[int] = []
    problems: dict[int, tuple[str, str]] = {}
    for i, path in enumerate(paths):
        try:
            try:
                fd = os.open(path, _OPEN | _NOFOLLOW)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                real = os.path.realpath(path)
                if inside is not None and real != real_root and not real.startswith(inside):
                    problems[i] = (UNSAFE, real)
                    digests.append(blank)
                    sizes.append(-1)
                    continue
                fd = os.open(path, _OPEN)
            try:
                info = fstat(fd)
                size = info.st_size
                if not is_regular(info.st_mode):
                    problems[i] = (MISSING, "not a regular file")
                elif 0 <= expected[i] != size:
                    problems[i] = (SIZE, "")
                elif read:
                    h = new()
                    done = 0
                    while n := readv(fd, buffers):
                        h.update(view[:n])
                        done += n
                        if on_bytes is not None:
                            on_bytes(n)
                        if done == size and n < CHUNK:
                            break
                    size = done
                    digests.append(h.digest())
                    sizes.append(size)
                    continue
            finally:
                close(fd)
        except OSError as exc:
            kind = MISSING if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREADABLE
            problems[i] = (kind, exc.strerror or str(exc))
            size = -1
        digests.append(blank)
        sizes.append(size)
    return b"".join(digests), sizes, problems


def _fork_pool(jobs: int) -> Executor | None:
    """A fork-based process pool, or None where fork is not the safe default (macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))


@dataclass
class Control:
    """Steering for a running hash_stream: `read` False makes later batches only check files (a
    verify that already found a wrong size stops hashing); `real_root` confines symlinks."""

    read: bool = True
    real_root: str | None = None


class _Sizer:
    """Groups items into batches of about BATCH_BYTES or BATCH_FILES. Items of unknown size (-1,
    a build that did not stat) are weighed by the mean size of the files finished so far."""

    def __init__(self) -> None:
        self.bytes = 0
        self.files = 0

    def learn(self, sizes: list[int]) -> None:
        self.bytes += sum(s for s in sizes if s > 0)
        self.files += len(sizes)

    def batches(self, items: Iterable[tuple[str, int, Payload]]) -> Iterator[list[tuple[str, int, Payload]]]:
        batch: list[tuple[str, int, Payload]] = []
        weight = 0
        for item in items:
            size = item[1]
            if size < 0:
                size = self.bytes // self.files if self.files else UNKNOWN_SIZE
            if size >= LARGE_FILE:
                if batch:
                    yield batch
                    batch, weight = [], 0
                yield [item]
                continue
            batch.append(item)
            weight += size + PER_FILE_WEIGHT
            if len(batch) >= BATCH_FILES or weight >= BATCH_BYTES:
                yield batch
                batch, weight = [], 0
        if batch:
            yield batch


def hash_stream(
    items: Iterable[tuple[str, int, Payload]],
    algorithm: str,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    control: Control | None = None,
) -> Iterator[tuple[Payload, int, str, str, str]]:
    """(payload, size, "<algorithm>:<hex>", problem, detail) for each (path, expected size, payload),
    in order. `problem` is "" or MISSING, SIZE, UNSAFE, UNREADABLE (see digest_files); the checksum
    is "" then, and also when `control.read` was off for the batch. `expected` -1 means unknown.
    `on_progress(bytes, files)` is called as work completes, possibly from another thread.
    """
    hex_size = hasher_factory(algorithm)().digest_size * 2  # fails before any worker starts if unavailable
    control = control or Control()
    jobs = max(1, jobs or os.cpu_count() or 1)
    stream = iter(items)
    head = list(islice(stream, PROCESS_MIN_FILES))
    pool: Executor | None = None
    threads = True
    if jobs > 1 and len(head) >= PROCESS_MIN_FILES:
        pool = _fork_pool(jobs)
        threads = pool is None
    if pool is None and jobs > 1:
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="reprogate-hash")
    sizer = _Sizer()
    pending: deque[tuple[list[tuple[str, int, Payload]], bool, Future[BatchResult] | BatchResult]] = deque()
    limit = jobs * IN_FLIGHT_PER_JOB
    prefix = algorithm + ":"

    def submit(batch: list[tuple[str, int, Payload]]) -> Future[BatchResult] | BatchResult:
        paths = [item[0] for item in batch]
        expected = [item[1] for item in batch]
        stream_bytes = (lambda n: on_progress(n, 0)) if on_progress is not None and len(batch) == 1 and threads and control.read else None
        args = (paths, algorithm, expected, control.real_root, control.read)
        if pool is None:
            result = digest_files(*args, stream_bytes)
            if on_progress is not None:
                on_progress(0 if stream_bytes else sum(s for s in result[1] if s > 0), len(batch))
            return result
        future = pool.submit(digest_files, *args, stream_bytes) if threads else pool.submit(digest_files, *args)
        if on_progress is not None:
            future.add_done_callback(lambda f: f.exception() or on_progress(0 if stream_bytes else sum(s for s in f.result()[1] if s > 0), len(batch)))
        return future

    def unpack(batch: list[tuple[str, int, Payload]], read: bool, done: Future[BatchResult] | BatchResult) -> Iterator[tuple[Payload, int, str, str, str]]:
        blob, sizes, problems = done.result() if isinstance(done, Future) else done
        sizer.learn(sizes)
        text = blob.hex() if read else ""
        for i, item in enumerate(batch):
            if i in problems:
                yield item[2], sizes[i], "", *problems[i]
            elif read:
                yield item[2], sizes[i], prefix + text[i * hex_size : (i + 1) * hex_size], "", ""
            else:
                yield item[2], sizes[i], "", "", ""

    try:
        for batch in sizer.batches(chain(head, stream)):
            pending.append((batch, control.read, submit(batch)))
            while len(pending) > limit or (pending and not isinstance(pending[0][2], Future)):
                yield from unpack(*pending.popleft())
        while pending:
            yield from unpack(*pending.popleft())
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def hash_files(paths: Sequence[Path], algorithm: str, jobs: int | None = None, on_progress: Callable[[int, int], None] | None = None) -> list[FileDigest]:
    """Digests of `paths`, in the same order, computed by `jobs` workers (see hash_stream)."""
    items = ((os.fspath(p), -1, p) for p in paths)
    found = hash_stream(items, algorithm, jobs, on_progress)
    return [FileDigest(path, max(size, 0), checksum, (detail or problem) if problem else "") for path, size, checksum, problem, detail in found]
