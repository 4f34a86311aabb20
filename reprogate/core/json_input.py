"""JSON that arrives as a file from elsewhere (a verdict from another job, GitHub's event file, a
trace given on the command line), read the one way such input is read.

The file is read with a size bound and never waited on (a FIFO without a writer reads as empty),
decoded as UTF-8 and parsed by `documents.parse_json` (no NaN, no endless integers, no lone
surrogates, no key twice in one object: JSON readers disagree on which of two keys counts, so a
verdict with `"verdict": "fail"` then `"verdict": "pass"` means one thing to reprogate and another
to jq). Every refusal is a UsageError (exit 2) that names the file (and the line) and says what it
was expected to be, so no caller has to word the same failures again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.documents import DocumentError, load_text, parse_json
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


class _DuplicateKey(Exception):
    """A key twice in one object (raised by the parser's pairs hook, located afterwards)."""


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object, unless a key is in it twice."""
    data = dict(items)
    if len(data) != len(items):
        raise _DuplicateKey
    return data


def parse_json_bytes(raw: bytes, where: str, what: str) -> Any:
    """`raw` as JSON; `where` locates it (a path, or path:line of a JSON Lines file)."""
    try:
        text = raw.decode("utf-8")
        return parse_json(text, where, _pairs)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: {what} is not UTF-8 ({exc.reason})") from None
    except DocumentError as exc:
        raise UsageError(f"{where}: {what} is not JSON ({exc.diagnostics[0].message if exc.diagnostics else exc.message})") from None
    except _DuplicateKey:
        raise _duplicate(text, where, what) from None


def _duplicate(text: str, where: str, what: str) -> UsageError:
    """The refusal of a key given twice, naming the key and its lines (documents' JSON loader
    finds them)."""
    try:
        load_text(text, where, "json")
    except DocumentError as exc:
        found = next((d for d in exc.diagnostics if d.code == "duplicate-key"), None)
        if found is not None:
            lines = found.message.split(";", 1)[0].rpartition(" (")[2].rstrip(")")  # "first at line 2, again at line 3"
            line = f":{found.location.line}" if found.location else ""
            return UsageError(
                f"{where}{line}: {what} holds the key {found.field or '?'!r} twice ({lines}): refused, since readers disagree on which one counts",
                hint="a file reprogate wrote never holds a key twice: this one was edited or made elsewhere",
            )
    return UsageError(f"{where}: {what} holds a key twice in one object: refused, since readers disagree on which one counts")


def read_json_input(path: Path, limit: int, what: str, kind: str) -> Any:
    """The JSON value in the file at `path`: read_bounded, then parse_json_bytes."""
    return parse_json_bytes(read_bounded(path, limit, what, kind), str(path), what)


__all__ = ["parse_json_bytes", "read_bounded", "read_json_input"]
