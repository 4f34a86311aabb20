"""The JSON Lines form of a manifest, read a line at a time.

Line 1 is a JSON object holding every field but `shards` (its `digest` included), and each
following line is one shard object, in code-point order of shard names. Read a line (or a piece
of lines) at a time, so memory does not grow with the shard count, and the sorted order lets
verify find extra files by merging two sorted streams instead of holding a set of names. Blank
lines are not allowed; every line ends with a newline (the last may omit it). A damaged line is
a ManifestLineError naming its line.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import Diagnostic, ExitCode, Location
from reprogate.core.documents import DEFAULT_MAX_BYTES, DocumentError

STREAM_SUFFIXES = (".jsonl",)
MAX_LINE = 16 * 1024 * 1024  # a longer line is damage, not a shard
PIECE_BLOCK = 256 * 1024  # how much of a JSON Lines manifest is read at a time
PIECE_SPAN = 1024 * 1024  # the most bytes of lines in one piece (a longer line comes alone)
RAW_PIECE_LINES = 256


def is_stream(path: str | Path) -> bool:
    """Whether `path` names a JSON Lines manifest (by its suffix, as .json and .yaml are)."""
    return str(path).lower().endswith(STREAM_SUFFIXES)


class ManifestLineError(DocumentError):
    """A line of a JSON Lines manifest that cannot be read: exit 2, with its line number."""

    def __init__(self, display: str, line: int, message: str, hint: str = "") -> None:
        super().__init__([Diagnostic(display, f"line {line}: {message}", "manifest-line", location=Location(line, 1), hint=hint)], ExitCode.USAGE)
        self.line = line


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        keys = [k for k, _ in pairs]
        again = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise ValueError(f"duplicate key {again!r}: JSON readers keep only one of them")
    return out


_STRICT = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
# Without the duplicate-key hook the C scanner builds each object with no Python call: about half
# the cost per line. `validate` reads strictly; verify and the digest read fast (a line with a
# duplicate key then means what JSON.parse says it means: the last one wins).
_FAST = json.JSONDecoder(parse_constant=_no_constant)
_SCANNERS = {True: json.scanner.make_scanner(_STRICT), False: json.scanner.make_scanner(_FAST)}  # type: ignore[arg-type]  # typeshed types make_scanner's argument as the scanner class; a JSONDecoder is what it takes
# (value, end) of the JSON value at the start of a str: parse_line's lenient fast path, for loops
# that run it inline on a million lines (a Python call per line is a measurable share of verify)
scan_lenient = _SCANNERS[False]


def parse_line(raw: bytes, display: str, line: int, strict: bool = True, terminated: bool | None = None) -> tuple[str, dict[str, Any]]:
    """(text, object) of one line; ManifestLineError when it is not one JSON object. `terminated`
    says whether a line split off without its newline had one (None: raw keeps its newline)."""
    if len(raw) + bool(terminated) <= MAX_LINE:
        try:
            text = raw.decode("utf-8")
            value, end = _SCANNERS[strict](text, 0)
            if type(value) is dict and (end == len(text) or text[end:].isspace()):
                return text, value
        except (StopIteration, ValueError, RecursionError):
            pass
    return _diagnose(raw + b"\n" if terminated else raw, display, line, strict)


def _diagnose(raw: bytes, display: str, line: int, strict: bool) -> tuple[str, dict[str, Any]]:
    """The slow path of parse_line: say exactly what is wrong, or accept a line with leading space."""
    if len(raw) > MAX_LINE:
        raise ManifestLineError(display, line, f"longer than {MAX_LINE:,} bytes; the file is damaged")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestLineError(display, line, f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1} is not valid UTF-8") from None
    if not text.strip():
        raise ManifestLineError(display, line, "empty line; a JSON Lines manifest has one JSON object on every line")
    decoder = _STRICT if strict else _FAST
    try:
        value, end = decoder.raw_decode(text, len(text) - len(text.lstrip()))
    except json.JSONDecodeError as exc:
        cut = "" if raw.endswith(b"\n") else " (the file ends here without a newline: was it cut short?)"
        raise ManifestLineError(display, line, f"JSON syntax error at column {exc.colno}: {exc.msg}{cut}") from None
    except (ValueError, RecursionError) as exc:
        raise ManifestLineError(display, line, f"JSON error: {exc}") from None
    if text[end:].strip():
        raise ManifestLineError(display, line, f"more than one JSON value (extra text at column {end + 1})")
    if not isinstance(value, dict):
        raise ManifestLineError(display, line, "not a JSON object; every line of a JSON Lines manifest is one")
    return text, value


class ShardLines:
    """The shards of a JSON Lines manifest, read from the file each time they are iterated.

    Iterating yields shard objects; `numbered()` also gives each one's line and text, for
    findings. A damaged line raises ManifestLineError when it is reached.
    """

    def __init__(self, path: Path, display: str) -> None:
        self.path, self.display = path, display

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for _, _, shard in self.numbered():
            yield shard

    def numbered(self, strict: bool = False) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """(line, text, shard) for each shard; `strict` also refuses duplicate keys in a line."""
        display = self.display
        for line, raw in self.raw():
            text, shard = parse_line(raw, display, line, strict)
            yield line, text, shard

    def raw(self) -> Iterator[tuple[int, bytes]]:
        """(line, bytes) of each shard line, unparsed (see parse_line), with its newline (the last
        line of the file may have none). A line longer than MAX_LINE comes back cut at MAX_LINE + 1
        bytes, and nothing after it: what follows is not a line boundary."""
        for first, piece, _ in self.pieces(lambda: RAW_PIECE_LINES):
            parts = piece.split(b"\n")
            last = parts.pop()  # b"" when the piece ends with its newline
            for line, part in enumerate(parts, first):
                yield line, part + b"\n"
            if last:
                yield first + len(parts), last

    def pieces(self, lines_wanted: Callable[[], int]) -> Iterator[tuple[int, bytes, int]]:
        """(first line, bytes of whole shard lines, how many) in pieces of about `lines_wanted()`
        lines, asked before each piece: how workers get shard lines without this process touching
        each line (a piece is cut at a newline found with rfind and its lines counted with count,
        both in C). The last line of the file may have no newline; a line longer than MAX_LINE
        comes as a piece of its own, cut at MAX_LINE + 1 bytes, and ends the pieces. A piece holds
        at most PIECE_SPAN bytes, or one line, so memory holds a few read blocks and at most one
        line of MAX_LINE bytes, whatever the lines' length."""
        try:
            with open(self.path, "rb", buffering=0) as fh:
                header = fh.readline(MAX_LINE + 1)  # the header, read by read_header
                data, at, line, eof = b"", 0, 2, not header
                consumed, lines_seen = 0, 0  # for the mean line length, which sizes the pieces
                while True:
                    mean = consumed // lines_seen if lines_seen else 256
                    span = min(PIECE_SPAN, max(1, lines_wanted()) * (mean + 1))
                    while not eof and len(data) - at < span + 1:
                        block = fh.read(max(PIECE_BLOCK, span - (len(data) - at) + 1))
                        eof = not block
                        data, at = data[at:] + block, 0
                    end = data.rfind(b"\n", at, at + span)
                    if end < 0:  # a line longer than the span: up to its newline, if there is one
                        end = data.find(b"\n", at, at + MAX_LINE + 1)
                        while end < 0 and not eof and len(data) - at <= MAX_LINE:
                            block = fh.read(max(PIECE_BLOCK, len(data) - at))  # doubling: a long line is copied a few times, not once a block
                            eof = not block
                            data, at = data[at:] + block, 0
                            end = data.find(b"\n", at, at + MAX_LINE + 1)
                    if end < 0:  # no newline: the file's last line, or damage
                        rest = data[at : at + MAX_LINE + 1]
                        if rest:
                            yield line, rest, 1
                        return
                    piece = data[at : end + 1]
                    if len(piece) > MAX_LINE:  # only a piece this large can hold a line that is too long
                        parts = piece.split(b"\n")
                        long = next((i for i, part in enumerate(parts) if len(part) >= MAX_LINE), None)
                        if long is not None:
                            if long:
                                yield line, b"\n".join(parts[:long]) + b"\n", long
                            yield line + long, parts[long][: MAX_LINE + 1] + (b"\n" if len(parts[long]) == MAX_LINE else b""), 1
                            return
                    count = piece.count(b"\n")
                    yield line, piece, count
                    line += count
                    consumed += len(piece)
                    lines_seen += count
                    at = end + 1
                    if eof and at >= len(data):
                        return
        except OSError as exc:
            raise DocumentError([Diagnostic(self.display, f"cannot read file: {exc.strerror or exc}", "unreadable")], ExitCode.USAGE) from None


def read_header(path: Path, display: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, dict[str, Any]]:
    """(text, fields) of line 1 of a JSON Lines manifest."""
    try:
        with open(path, "rb") as fh:
            raw = fh.readline(max_bytes + 1)
    except OSError as exc:
        raise DocumentError([Diagnostic(display, f"cannot read file: {exc.strerror or exc}", "unreadable")], ExitCode.USAGE) from None
    if not raw:
        raise DocumentError([Diagnostic(display, "file is empty", "empty", hint="line 1 of a JSON Lines manifest holds its fields")], ExitCode.USAGE)
    if len(raw) > max_bytes:
        raise ManifestLineError(display, 1, f"the header line is over the {max_bytes:,}-byte limit")
    text, header = parse_line(raw.removeprefix(b"\xef\xbb\xbf"), display, 1)
    if "shards" in header:
        raise ManifestLineError(display, 1, "the header holds `shards`; in a JSON Lines manifest each shard is a line of its own after the header")
    return text, header
