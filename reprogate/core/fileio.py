"""Writing files so that nothing is ever half-written.

A manifest or record is written to a temporary file in the same folder, flushed to disk, then
renamed over the target: the rename is atomic on POSIX, so a reader (or an interrupted build)
sees the old file or the new one, never a truncated mix.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from collections.abc import Iterator
from typing import BinaryIO


def atomic_write(path: str | Path, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, target)
    except OSError as exc:  # a full disk names the file it could not write
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


from collections.abc import Iterator
from typing import BinaryIO
