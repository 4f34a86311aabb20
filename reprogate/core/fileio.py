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
from collections.abc import Callable, Iterator
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


def _enter_below(within: str | Path, parts: tuple[str, ...], create: bool) -> int:
    """A descriptor of the folder `within`/parts, each part entered (and made, with `create`)
    without following a link."""
    cloexec = getattr(os, "O_CLOEXEC", 0)
    folder = os.open(within, os.O_RDONLY | os.O_DIRECTORY | cloexec)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=folder)
            below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | cloexec, dir_fd=folder)
            os.close(folder)
            folder = below
    except BaseException:
        os.close(folder)
        raise
    return folder


def _parts_below(path: str | Path, within: str | Path) -> tuple[str, ...]:
    parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(within)).parts
    if ".." in parts:
        raise OSError(errno.EINVAL, "not inside the folder it belongs to", str(path))
    return parts


def make_folder_for_code(path: str | Path, within: str | Path) -> None:
    """Make the folder `path` below `within` (a folder reprogate made that code under test has
    written into) without following a link on the way: a folder a rank swapped for a link to
    the runner's home is refused (OSError), never created or written through."""
    os.close(_enter_below(within, _parts_below(path, within), create=True))


def create_for_code(path: str | Path, within: str | Path) -> int:
    """A new, empty file at `path` for the code under test to write into (a rank's log), as a
    descriptor open for writing. Every folder below `within` is entered without following a
    link, and whatever is at `path` (a link a rank left to a file of the runner's) is removed
    first, so the output never lands outside the folder."""
    parts = _parts_below(path, within)
    if not parts:
        raise OSError(errno.EINVAL, "not a file inside the folder it is made in", str(path))
    folder = _enter_below(within, parts[:-1], create=True)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=folder)
        return os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644, dir_fd=folder)
    finally:
        os.close(folder)


def copy_for_code(source: str | Path, target: str | Path, within: str | Path, skip: Callable[[str], bool] = lambda name: False) -> None:
    """Copy `source` (a file or folder of reprogate's own input, the checkout) to `target` below
    `within` (the work folder, which code under test may already have written into: the dataset
    stage copies shards while the preflight's ranks wait). Every folder on the way is entered
    and made without following a link, and whatever is at a file's place (a link a rank left to
    the runner's `~/.bashrc`) is replaced, never written through. A link inside a copied folder
    is copied as a link, as it is; folders named so that `skip(name)` holds are left out."""
    if os.path.isdir(source):
        make_folder_for_code(target, within)
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            if skip(entry.name):
                continue
            below = Path(target) / entry.name
            if entry.is_symlink():
                _link_for_code(os.readlink(entry.path), below, within)
            else:
                copy_for_code(entry.path, below, within, skip)
        return
    src_fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    info = os.fstat(src_fd)
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device in the checkout: a copy that never ends
        os.close(src_fd)
        raise OSError(errno.EINVAL, "not a regular file", str(source))
    with os.fdopen(src_fd, "rb") as src, os.fdopen(create_for_code(target, within), "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
        out.flush()
        os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))
        os.utime(out.fileno(), ns=(info.st_atime_ns, info.st_mtime_ns))


def _link_for_code(points_to: str, path: Path, within: str | Path) -> None:
    parts = _parts_below(path, within)
    folder = _enter_below(within, parts[:-1], create=True)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parts[-1], dir_fd=folder)
        os.symlink(points_to, parts[-1], dir_fd=folder)
    finally:
        os.close(folder)


def _open_written_by_code(path: str | Path, within: str | Path | None) -> int:
    """A descriptor of a regular file the code under test wrote, opened without following a link:
    the last component never, and with `within` (a folder reprogate made and the code under test
    writes into) no component below it either, so a rank that swapped a folder of the work
    folder for a link to the runner's home leads nowhere. `within` itself is trusted."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        if within is None:
            fd = os.open(path, flags)
        else:
            parts = _parts_below(path, within)
            if not parts:
                raise OSError(errno.EINVAL, "not a file inside the folder it was written in", str(path))
            folder = _enter_below(within, parts[:-1], create=False)
            try:
                fd = os.open(parts[-1], flags, dir_fd=folder)
            finally:
                os.close(folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a link (at the end, or where a folder was)
            raise OSError(exc.errno, "a symbolic link where the code under test writes: not followed", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def read_written_by_code(path: str | Path, limit: int, within: str | Path | None = None) -> bytes | None:
    """At most `limit` bytes of a file the code under test wrote (a rank's trace, events, log or
    place file), None when it holds more. Training code could have left a symbolic link (to a
    file of the runner's) or a FIFO (a read that never ends) there: only a regular file is read,
    and a link is never followed (OSError otherwise); `within`: nor a link in a folder below it."""

    fd = _open_written_by_code(path, within)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def tail_written_by_code(path: str | Path, limit: int, within: str | Path | None = None) -> bytes:
    """The last `limit` bytes (at most) of a file the code under test wrote, read as
    read_written_by_code reads: a regular file only, never through a link."""
    fd = _open_written_by_code(path, within)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fd).st_size
        fh.seek(max(0, size - limit))
        return fh.read(limit)


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
