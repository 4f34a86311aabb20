"""JSON that arrives as a file from elsewhere (a verdict from another job, GitHub's event file, a
trace given on the command line), read the one way such input is read.

The file is read with a size bound and never waited on (a FIFO without a writer reads as empty),
decoded as UTF-8 and parsed by `documents.parse_json` (no NaN, no endless integers, no lone
surrogates). Every refusal is a UsageError (exit 2) that names the file and says what it was
expected to be, so no caller has to word the same four failures again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.documents import DocumentError, parse_json
from reprogate.core.errors import UsageError
from reprogate.core.fileio import read_input


def read_bounded(path: Path, limit: int, what: str, kind: str) -> bytes:
    """The bytes of `path`, at most `limit` of them. `what` names the file in messages ("the
    verdict"), `kind` what a larger file cannot be ("a reprogate verdict")."""
    try:
        raw = read_input(path, limit)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if raw is None:
        raise UsageError(f"{path}: larger than {limit:,} bytes; not {kind}")
    return raw


def parse_json_bytes(raw: bytes, where: str, what: str) -> Any:
    """`raw` as JSON; `where` locates it (a path, or path:line of a JSON Lines file)."""
    try:
        return parse_json(raw.decode("utf-8"), where)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: {what} is not UTF-8 ({exc.reason})") from None
    except DocumentError as exc:
        raise UsageError(f"{where}: {what} is not JSON ({exc.diagnostics[0].message if exc.diagnostics else exc.message})") from None


def read_json_input(path: Path, limit: int, what: str, kind: str) -> Any:
    """The JSON value in the file at `path`: read_bounded, then parse_json_bytes."""
    return parse_json_bytes(read_bounded(path, limit, what, kind), str(path), what)


__all__ = ["parse_json_bytes", "read_bounded", "read_json_input"]
