"""Hash many files fast, in memory that grows neither with file size nor with file count.

Measured here: hashlib's sha256 runs at the per-core limit (about 1.7 GB/s with SHA-NI) and
releases the GIL on updates over 2 KiB, so threads scale with cores for large shards. Small files
are another matter: each costs four system calls (open, fstat, read, close; several microseconds
apiece in a container) and any Python work per file on top holds the GIL. So files travel in
batches of up to a few hundred; one worker opens, checks and hashes a whole batch with raw
`os.open`/`os.readv` into one reused buffer, and sends back one bytes object of concatenated
digests rather than an object per file. With many files the workers are processes (forked on
Linux), with few (or on other systems) threads: core.pool, the pool validate uses too. The
calling process only walks or reads the manifest and writes results, so it is not the bottleneck.

`hash_stream` takes and yields iterators, in order, with a bounded number of batches in flight:
a million shards are hashed without ever holding a million of anything.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, islice
from os import SEEK_END
from pathlib import Path
from typing import Any, TypeVar

from reprogate.core.errors import UsageError
from reprogate.core.pool import ordered_map, use_processes, worker_count

CHUNK = 256 * 1024  # read size: large enough to amortise a system call, small enough for L2
BATCH_FILES = 512
BATCH_BYTES = 8 * 1024 * 1024
LARGE_FILE = 8 * 1024 * 1024  # a file this big is a batch of its own
SMALL_FILE = 64 * 1024  # a file this small is read in one call into a fresh bytes (a reused buffer costs more calls)
PER_FILE_WEIGHT = 4096  # a file costs about as much as this many bytes of hashing, whatever its size
UNKNOWN_SIZE = 1024 * 1024  # assumed for files of unknown size until finished batches tell better
PROCESS_MIN_FILES = 1000  # fewer files than this: forking workers costs more than it saves

ALGORITHMS = ("sha256", "blake3", "md5")

# What went wrong with one file, as a worker reports it (the caller words the finding).
MISSING = "missing"  # no such file, or not a regular file
SIZE = "size"  # its size is not the expected one (not hashed)
UNSAFE = "unsafe"  # a symlink that resolves outside the allowed root (not read)
UNREADABLE = "unreadable"  # it exists but cannot be read

Payload = TypeVar("Payload")


class AlgorithmUnavailable(UsageError):
    """The algorithm needs an optional package that is not installed."""


def hasher_factory(algorithm: str) -> Callable[..., Any]:
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

# NONBLOCK: a FIFO never hangs us (Windows has neither FIFOs nor the flag)
_OPEN = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
OPEN_FLAGS = _OPEN | _NOFOLLOW  # how a shard is opened first: a final symlink is then ELOOP, checked before it is followed
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)  # a folder its files are opened beside


class FileReader:
    """Opens, checks and hashes files one after another through one buffer (one per worker).

    A file is opened without following a final symlink; one that is a symlink is followed only if
    it resolves inside `real_root` (when given). Then fstat: not a regular file is MISSING, a size
    other than `expected` (when >= 0) is SIZE and the file is not read. A small file is read with
    one call for one byte more than fstat's size; a larger one streams through the buffer, and
    reading stops when fstat's size is reached by a short read, saving the read that would return 0.
    """

    def __init__(self, algorithm: str, real_root: str | None = None) -> None:
        self.new = hasher_factory(algorithm)
        self.buffer = bytearray(CHUNK)
        self.view = memoryview(self.buffer)
        self.real_root = real_root
        self.inside = real_root.rstrip("/") + "/" if real_root else None

    def check(self, path: str, expected: int, read: bool = True, on_bytes: Callable[[int], None] | None = None) -> tuple[int, bytes | None, str, str]:
        """(size, raw digest or None when not read, problem or "", detail)."""
        try:
            try:
                fd = os.open(path, OPEN_FLAGS)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                real = os.path.realpath(path)
                if self.inside is not None and real != self.real_root and not real.startswith(self.inside):
                    return -1, None, UNSAFE, real
                fd = os.open(path, _OPEN)
            try:
                info = os.fstat(fd)
                size = info.st_size
                if not stat.S_ISREG(info.st_mode):
                    return size, None, MISSING, "not a regular file"
                if 0 <= expected != size:
                    return size, None, SIZE, ""
                if not read:
                    return size, None, "", ""
                h, done = None, 0
                if size < SMALL_FILE:  # one read of size + 1 bytes: the whole file, and proof that it ends there
                    data = os.read(fd, size + 1)
                    if on_bytes is not None and data:
                        on_bytes(len(data))
                    if len(data) == size:
                        return size, self.new(data).digest(), "", ""
                    h, done = self.new(data), len(data)  # it changed since fstat: read on as for a large file
                if h is None:
                    h = self.new()
                view, buffers, readv = self.view, (self.buffer,), os.readv
                while n := readv(fd, buffers):
                    h.update(view[:n])
                    done += n
                    if on_bytes is not None:
                        on_bytes(n)
                    if done == size and n < CHUNK:
                        break
                return done, h.digest(), "", ""
            finally:
                os.close(fd)
        except OSError as exc:
            return -1, None, MISSING if exc.errno in (errno.ENOENT, errno.ENOTDIR) else UNREADABLE, exc.strerror or str(exc)


def digest_files(
    paths: Sequence[str],
    algorithm: str,
    expected: Sequence[int],
    real_root: str | None = None,
    read: bool = True,
    on_bytes: Callable[[int], None] | None = None,
) -> BatchResult:
    """Check and hash a batch of files (see FileReader): the hot loop, run in a worker. It sends
    back one bytes object of digests, not an object per file; a file with a problem (or not
    read) leaves a zero digest in its slot."""
    reader = FileReader(algorithm, real_root)
    check = reader.check
    blank = bytes(reader.new().digest_size)
    digests: list[bytes] = []
    sizes: list[int] = []
    problems: dict[int, tuple[str, str]] = {}
    for i, path in enumerate(paths):
        size, digest, problem, detail = check(path, expected[i], read, on_bytes)
        if problem:
            problems[i] = (problem, detail)
        digests.append(digest or blank)
        sizes.append(size)
    return b"".join(digests), sizes, problems


def digest_named(root: str, names: Sequence[str], algorithm: str) -> BatchResult:
    """digest_files for a build's batch: files named relative to `root` (a folder path ending in
    `/`), their sizes unknown. A small regular file costs one open beside its folder's descriptor,
    the end offset for its size (no stat structure) and one read, with no call of ours; anything
    else (a symlink, a large or empty file, a file that changes as it is read) goes through
    FileReader.check by its whole path."""
    reader = FileReader(algorithm)
    check, new = reader.check, reader.new
    os_open, seek, pread, close = os.open, os.lseek, os.pread, os.close
    blank = bytes(new().digest_size)
    digests: list[bytes] = []
    sizes: list[int] = []
    problems: dict[int, tuple[str, str]] = {}
    current: str | None = None
    folder_fd = -1
    try:
        for i, name in enumerate(names):
            folder, _, base = name.rpartition("/")
            if folder != current:
                if folder_fd >= 0:
                    close(folder_fd)
                current = folder
                try:
                    folder_fd = os_open(root + folder if folder else root, FOLDER_FLAGS)
                except OSError:
                    folder_fd = -1
            digest = None
            if folder_fd >= 0:
                try:
                    fd = os_open(base, OPEN_FLAGS, dir_fd=folder_fd)
                except OSError:
                    fd = -1  # a symlink (the walk let it in: it stays inside the root), or gone
                if fd >= 0:
                    try:
                        # a regular file's end offset is its size; a FIFO refuses to seek, a
                        # device says 0: those, and empty files, go to FileReader.check
                        size = seek(fd, 0, SEEK_END)
                        if 0 < size < SMALL_FILE:
                            data = pread(fd, size + 1, 0)
                            if len(data) == size:
                                digest = new(data).digest()
                    except OSError:
                        digest = None
                    finally:
                        close(fd)
            if digest is not None:
                digests.append(digest)
                sizes.append(size)
                continue
            size, digest, problem, detail = check(root + name, -1)
            if problem:
                problems[i] = (problem, detail)
            digests.append(digest or blank)
            sizes.append(size)
    finally:
        if folder_fd >= 0:
            close(folder_fd)
    return b"".join(digests), sizes, problems


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


@dataclass
class HashedBatch:
    """One batch back from the workers: its items, in order, with what was found for each."""

    items: list[tuple[str, int, Any]]
    sizes: list[int]  # as read (or stat'ed), -1 when the file could not be opened
    checksums: list[str]  # "<algorithm>:<hex>", or "" for a file with a problem or not read
    problems: dict[int, tuple[str, str]]  # index -> (MISSING | SIZE | UNSAFE | UNREADABLE, detail)


def _bytes_only(on_progress: Callable[[int, int], None]) -> Callable[[int], None]:
    """A large file's progress as it is read: bytes, no file finished yet."""
    return lambda n: on_progress(n, 0)


def hash_batches(
    items: Iterable[tuple[str, int, Payload]],
    algorithm: str,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    control: Control | None = None,
) -> Iterator[HashedBatch]:
    """Hash (path, expected size, payload) items by batches, yielded in order.

    `expected` -1 means unknown; otherwise a file of another size is a SIZE problem and is not
    read. A batch submitted while `control.read` is off is only checked. `on_progress(bytes,
    files)` is called as work completes, possibly from another thread. Callers that write every
    result (a build) take whole batches, which saves a Python step per file; hash_stream gives
    one result at a time.
    """
    hex_size = hasher_factory(algorithm)().digest_size * 2  # fails before any worker starts if unavailable
    control = control or Control()
    jobs = worker_count(jobs)
    stream = iter(items)
    head = list(islice(stream, PROCESS_MIN_FILES))
    processes = use_processes(jobs, len(head), PROCESS_MIN_FILES)
    sizer = _Sizer()
    prefix = algorithm + ":"

    def tasks() -> Iterator[tuple[tuple[Any, ...], tuple[list[tuple[str, int, Any]], bool, bool]]]:
        for batch in sizer.batches(chain(head, stream)):
            # Threads and inline work report a large file's progress as it is read.
            streams = on_progress is not None and not processes and len(batch) == 1 and control.read
            on_bytes = _bytes_only(on_progress) if streams and on_progress is not None else None
            args = ([item[0] for item in batch], algorithm, [item[1] for item in batch], control.real_root, control.read)
            yield (args if processes else (*args, on_bytes)), (batch, control.read, streams)

    for (batch, read, streamed), (blob, sizes, problems) in ordered_map(digest_files, tasks(), jobs, processes):
        if on_progress is not None:
            on_progress(0 if streamed else sum(s for s in sizes if s > 0), len(batch))
        sizer.learn(sizes)
        if read:
            text = blob.hex()
            checksums = [prefix + text[i : i + hex_size] for i in range(0, len(text), hex_size)]
            for i in problems:
                checksums[i] = ""
        else:
            checksums = [""] * len(batch)
        yield HashedBatch(batch, sizes, checksums, problems)


def hash_stream(
    items: Iterable[tuple[str, int, Payload]],
    algorithm: str,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    control: Control | None = None,
) -> Iterator[tuple[Payload, int, str, str, str]]:
    """(payload, size, "<algorithm>:<hex>", problem, detail) for each (path, expected size, payload),
    in order; see hash_batches. `problem` is "" or MISSING, SIZE, UNSAFE, UNREADABLE."""
    for batch in hash_batches(items, algorithm, jobs, on_progress, control):
        problems = batch.problems
        for i, item in enumerate(batch.items):
            if i in problems:
                yield item[2], batch.sizes[i], "", *problems[i]
            else:
                yield item[2], batch.sizes[i], batch.checksums[i], "", ""


def hash_files(paths: Sequence[Path], algorithm: str, jobs: int | None = None, on_progress: Callable[[int, int], None] | None = None) -> list[FileDigest]:
    """Digests of `paths`, in the same order, computed by `jobs` workers (see hash_stream)."""
    items = ((os.fspath(p), -1, p) for p in paths)
    found = hash_stream(items, algorithm, jobs, on_progress)
    return [FileDigest(path, max(size, 0), checksum, (detail or problem) if problem else "") for path, size, checksum, problem, detail in found]
