"""Hash many files fast, in memory that does not grow with file size.

Measured here (see ../shared/reference/tech.md §6): hashlib's sha256 runs at the per-core limit
(about 1.7 GB/s with SHA-NI) and releases the GIL on updates over 2 KiB, so a thread pool scales
with cores for large shards. Each worker reads into one reused 1 MiB buffer, so memory is
jobs x 1 MiB whatever the shard size. Small files are dominated by per-file Python overhead, so
they are hashed in batches per task to keep the pool's bookkeeping off the hot path.
"""

from __future__ import annotations

import hashlib
import os
from reprogate.core.errors import UsageError
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

CHUNK = 1024 * 1024
SMALL_FILE = 256 * 1024  # below this, a file is read at once and hashed in a batch of work
BATCH_BYTES = 4 * 1024 * 1024

ALGORITHMS = ("sha256", "blake3", "md5")


class AlgorithmUnavailable(UsageError):
    """The algorithm needs an optional package that is not installed."""


def new_hasher(algorithm: str) -> Any:
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "md5":
        return hashlib.md5(usedforsecurity=False)
    if algorithm == "blake3":
        try:
            from blake3 import blake3
        except ImportError:
            raise AlgorithmUnavailable("--algorithm blake3 needs the blake3 package: pip install 'reprogate[blake3]'") from None
        return blake3(max_threads=1)
    raise AlgorithmUnavailable(f"unknown hash algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")



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


def _hash_small(path: str, algorithm: str) -> tuple[int, str, str]:
    """(size, checksum, error) of a file small enough to read at once; no buffer juggling."""
    try:
        with open(path, "rb", buffering=0) as fh:
            data = fh.read()
    except OSError as exc:
        return 0, "", exc.strerror or str(exc)
    h = new_hasher(algorithm)
    h.update(data)
    return len(data), f"{algorithm}:{h.hexdigest()}", ""


def _hash_small_batch(paths: list[str], algorithm: str) -> list[tuple[int, str, str]]:
    return [_hash_small(p, algorithm) for p in paths]


def _batches(sizes: Sequence[int]) -> Iterator[list[int]]:
    """Indices of small files grouped so each task carries about BATCH_BYTES."""
    batch: list[int] = []
    weight = 0
    for i, size in enumerate(sizes):
        batch.append(i)
        weight += size + 4096  # per-file cost counts as well as bytes
        if weight >= BATCH_BYTES:
            yield batch
            batch, weight = [], 0
    if batch:
        yield batch


def _process_pool(jobs: int) -> Any:
    """A fork-based process pool, or None where fork is not the safe default (macOS, Windows).

    Hashing a small file is mostly per-file Python work that holds the GIL, so threads do not
    scale there; processes do. Large files stay on threads (hashlib releases the GIL).
    """
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    if not sys.platform.startswith("linux"):
        return None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"))


def hash_files(
    paths: Sequence[Path],
    algorithm: str,
    jobs: int | None = None,
    sizes: Sequence[int] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[FileDigest]:
    """Digests of `paths`, in the same order, computed by `jobs` workers.

    Large files go to a thread pool, streamed through one buffer per thread; small files go in
    batches to a process pool when there are many. `sizes` (from a stat already made) routes and
    balances the work; `on_progress(bytes, files)` is called as work completes.
    """
    new_hasher(algorithm)  # fail before starting workers if the algorithm is unavailable
    jobs = max(1, jobs or os.cpu_count() or 1)
    if sizes is None:
        sizes = [p.stat().st_size if p.exists() else 0 for p in paths]
    results: list[FileDigest | None] = [None] * len(paths)
    large = [i for i, size in enumerate(sizes) if size >= SMALL_FILE]
    small = [i for i, size in enumerate(sizes) if size < SMALL_FILE]
    small_batches = [[small[j] for j in batch] for batch in _batches([sizes[i] for i in small])]

    def store_small(batch: list[int], found: list[tuple[int, str, str]]) -> None:
        for i, (size, checksum, error) in zip(batch, found):
            results[i] = FileDigest(paths[i], size, checksum, error)
        if on_progress:
            on_progress(sum(r[0] for r in found), len(batch))

    def work_large(i: int) -> None:
        report = (lambda n: on_progress(n, 0)) if on_progress else None
        results[i] = hash_file(paths[i], algorithm, bytearray(CHUNK), report)
        if on_progress:
            on_progress(0, 1)

    processes = _process_pool(jobs) if jobs > 1 and len(small) >= 2000 else None
    try:
        pending = []
        if processes is not None:
            pending = [(batch, processes.submit(_hash_small_batch, [str(paths[i]) for i in batch], algorithm)) for batch in small_batches]
        elif jobs == 1:
            for batch in small_batches:
                store_small(batch, _hash_small_batch([str(paths[i]) for i in batch], algorithm))
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="reprogate-hash") as threads:
            futures = [threads.submit(work_large, i) for i in large]
            if processes is None and jobs > 1:
                futures += [threads.submit(lambda b=batch: store_small(b, _hash_small_batch([str(paths[i]) for i in b], algorithm))) for batch in small_batches]
            for batch, future in pending:
                store_small(batch, future.result())
            for future in futures:
                future.result()
    finally:
        if processes is not None:
            processes.shutdown()
    assert all(r is not None for r in results)
    return results  # type: ignore[return-value]
