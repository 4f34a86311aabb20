"""Writing files so that nothing is ever half-written.

A manifest or record is written to a temporary file in the same folder, flushed to disk, then
renamed over the target: the rename is atomic on POSIX, so a reader (or an interrupted build)
sees the old file or the new one, never a truncated mix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import BinaryIO


def atomic_write(path: str | Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def open_input(path: str | Path) -> BinaryIO:
    """Open a file given as input for reading, never waiting on it.

    A FIFO nobody writes to makes a plain open() wait forever. Opening without blocking and then
    switching back makes a writerless FIFO read as empty (the caller says so), while a pipe that
    has a writer (`<(...)` process substitution) is read as usual. A folder is refused with the
    error open() would give a file reader (IsADirectoryError). Where the system has no
    non-blocking open or no fcntl (Windows), it has no FIFOs in the file system either, and the
    file is opened plainly."""
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    fcntl = _fcntl()
    if not nonblocking or fcntl is None:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
        return open(path, "rb")
    fd = os.open(path, os.O_RDONLY | nonblocking | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~nonblocking)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _fcntl() -> ModuleType | None:
    """The fcntl module where the system has one (POSIX); None elsewhere (Windows)."""
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl


def read_written_by_code(path: str | Path, limit: int) -> bytes | None:
    """At most `limit` bytes of a file the code under test wrote (a rank's trace or events), None
    when it holds more. Training code could have left a symbolic link (to a file of the runner's)
    or a FIFO (a read that never ends) there: only a regular file is read, and a link is never
    followed (OSError otherwise)."""

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def read_input(path: str | Path, limit: int) -> bytes | None:
    """At most `limit` bytes of an input file (None when it holds more), read in chunks so a small
    file does not allocate `limit` bytes up front; never waits on a FIFO without a writer."""
    chunks, total = [], 0
    with open_input(path) as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def atomic_writer(path: str | Path, buffering: int = 1024 * 1024) -> Iterator[BinaryIO]:
    """A binary file to write `path` through, for output too large to hold as one string.

    Same promise as atomic_write: the content appears at `path` only when the block ends without
    an exception; an interrupted or failed write leaves the old file (or none) and no temporary.
    The file is seekable, so a writer may go back and fill in a field it learns at the end.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w+b", buffering=buffering) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, target)
    except OSError as exc:  # a full disk names the file it could not write; a named error keeps its name
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(target)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
