"""Verifying the shard lines of a JSON Lines manifest in the hashing workers themselves.

Per shard, the Python work of verify is parsing its line, checking it against the schema and its
name for safety, and comparing results: as much as opening and hashing a small file. Done by the
calling process it would leave the workers waiting, so the caller only reads raw lines and hands
out chunks of them; each worker parses, checks, stats and hashes a chunk and sends back what is
wrong plus the names in it (for the order check across chunks and the search for extra files).
A chunk whose lines are all as `dataset manifest` writes a plain file shard is read with one
regular-expression match over the chunk instead of a JSON parse and a schema test per line.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from os import SEEK_END
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Location
from reprogate.core.pool import ordered_map, use_processes, worker_count
from reprogate.datasets.hashing import (
    FOLDER_FLAGS,
    MISSING,
    OPEN_FLAGS,
    PROCESS_MIN_FILES,
    SIZE,
    SMALL_FILE,
    UNREADABLE,
    UNSAFE,
    Control,
    FileReader,
)
from reprogate.datasets.manifest_lines import (
    MAX_LINE,
    ManifestLineError,
    ShardLines,
    parse_line,
    scan_lenient,
)
from reprogate.datasets.names import PLAIN_NAME, RootGuard, UnsafeName, is_url, plain_shape
from reprogate.datasets.shard_checker import shard_checker

NAME_HINT = "shard names are relative POSIX paths inside the dataset root"
ORDER_HINT = "rebuild it with `reprogate dataset manifest`, or sort the shard lines by name (code-point order)"
CHUNK_LINES = 512
CHUNK_BYTES = 8 * 1024 * 1024
FIRST_CHUNK_LINES = 8  # until sizes are known, a few lines at a time (large shards spread out)


@dataclass
class LinesResult:
    """What a worker found in a chunk of shard lines."""

    names: list[str] = field(default_factory=list)  # of the lines read, in order
    first_name_line: int = 0  # the line of names[0]
    sizes: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index, name, kind, message): wrong before hashing
    checksums: list[tuple[int, str, str, str]] = field(default_factory=list)  # wrong after hashing (dropped if a size is)
    invalid: list[Diagnostic] = field(default_factory=list)  # lines the manifest cannot have: exit 2
    deferred: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # URL and DVC-folder shards, for the caller
    damaged: list[Diagnostic] = field(default_factory=list)  # a line that is not a JSON object: stop here
    bytes: int = 0
    passed: int = 0  # shards whose size matched


def order_problem(display: str, line: int, name: str, previous: str) -> Diagnostic:
    what = "is listed twice" if name == previous else f"is out of order (it sorts before {previous!r}, the shard above it)"
    message = f"line {line}: shard {name!r} {what}; a JSON Lines manifest lists each shard once, sorted by name"
    return Diagnostic(display, message, "manifest-order", location=Location(line, 1), field=f"shards[{line - 2}].name", hint=ORDER_HINT)


_GUARDS: dict[str, RootGuard] = {}

# The line `dataset manifest` writes for a plain file shard, whole: exactly name, bytes and
# checksum in that order and spacing, a name of the plain shape (no escapes: its JSON text is the
# name), a size in JSON's integer form and a checksum of the manifest's algorithm. A line of this
# shape parses to a shard the schema accepts (names.PLAIN_NAME is safe but for `..`), so a piece of
# such lines needs neither a JSON parse nor a schema test per line; anything else, a byte apart,
# is not matched and goes the general way (_plain_lines_of compiles it).
_HEX_DIGITS = {"sha256": 64, "blake3": 64, "md5": 32}


@functools.cache
def _plain_lines_of(algorithm: str) -> Callable[[str], list[tuple[str, str, str]]] | None:
    """findall of the plain shard line of `algorithm` (compiled when first needed: the compile is
    a visible share of the command's start-up, and check_shard_lines does it before forking)."""
    digits = _HEX_DIGITS.get(algorithm)
    if digits is None:
        return None
    pattern = rf'^\{{"name": "({PLAIN_NAME})", "bytes": (0|[1-9][0-9]{{0,17}}), "checksum": "({algorithm}:[0-9a-f]{{{digits}}})"\}}$'
    return re.compile(pattern, re.MULTILINE | re.ASCII).findall


def plain_lines(piece: bytes, algorithm: str) -> list[tuple[str, str, str]] | None:
    """(name, bytes as text, checksum) of every line of `piece` when every one is a plain file
    shard as `dataset manifest` writes it (the comment above), else None: one match over the whole
    piece instead of a parse per line. A piece as long as a line may be is never taken here, so
    the general way still says which line is too long."""
    findall = _plain_lines_of(algorithm)
    if findall is None or len(piece) >= MAX_LINE or not piece.isascii():
        return None
    rows: list[tuple[str, str, str]] = findall(piece.decode("ascii"))
    # one match per line or fewer: a match cannot span a newline, nor two start on one line
    return rows if len(rows) == piece.count(b"\n") + (not piece.endswith(b"\n")) else None


def check_lines(piece: bytes, first_line: int, display: str, algorithm: str, root: str, read: bool) -> LinesResult:
    """Parse, check and (when `read`) hash a piece of whole shard lines starting at `first_line`.

    The common shard (a plain name, its size and checksum; a small regular file whose size is
    the manifest's) is handled inline with one open, fstat, read and close and no call of ours:
    this loop runs once per shard of a million-shard dataset. A piece of lines all as `dataset
    manifest` writes them (plain_lines) is not parsed line by line at all. Anything else takes the
    general path (the JSON parse, the schema, RootGuard, FileReader.check), which says exactly what
    is wrong."""
    result = LinesResult()
    folder_fd = -1
    try:
        folder_fd = _check_lines(result, piece, first_line, display, algorithm, root, read)
    finally:
        if folder_fd >= 0:
            os.close(folder_fd)
    return result


def _check_lines(result: LinesResult, piece: bytes, first_line: int, display: str, algorithm: str, root: str, read: bool) -> int:
    """check_lines' loop; returns the folder descriptor it holds open at the end (or -1)."""
    checker = shard_checker()
    valid, checksum_form = checker.valid, checker.checksum_form
    guard = _GUARDS.get(root) or _GUARDS.setdefault(root, RootGuard(root))
    reader = FileReader(algorithm, guard.real_root)
    check, folder_checked, scan = reader.check, guard.folder_checked, scan_lenient
    new, os_open, seek, pread, close, plain = reader.new, os.open, os.lseek, os.pread, os.close, plain_shape
    root_prefix, small, flags = guard.prefix, SMALL_FILE, OPEN_FLAGS
    prefix = algorithm + ":"
    previous = ""
    # The folder of the last name RootGuard checked (inside the root), and a descriptor of it: the
    # names of one folder come together (sorted), and each of its files is opened relative to it,
    # one path component for the kernel to look up instead of the whole path.
    checked_folder: str | None = None
    folder_fd = -1
    names = result.names
    passed = hashed = 0
    fast = plain_lines(piece, algorithm)
    parts: list[Any] = fast or []
    unterminated = -1
    if fast is None:
        parts = piece.split(b"\n")
        last = parts.pop()  # b"" when the piece ends with a newline; else the file's unterminated last line
        if last:
            parts.append(last)
        unterminated = first_line + len(parts) - 1 if last else -1
    # Typed, not checked again: a line's JSON is anything (Any) until the validity test below (the
    # inline one of the common shape, else the schema, which requires all three) has passed, and
    # only then are these used as the str, int and str they are: no cast or isinstance per shard.
    shard: Any
    name: str
    expected: int
    checksum: str
    raw: Any  # a line's bytes, or its plain_lines row
    common: object  # whether the shard has the common shape (a truthy test's value)
    for line, raw in enumerate(parts, first_line):
        if fast is not None:  # a plain file shard, known valid (plain_lines)
            name, size_text, checksum = raw
            expected = int(size_text)
            common = True
        else:
            shard = None
            if len(raw) < MAX_LINE:  # parse_line's fast path, inline: one object, nothing after it
                try:
                    text = raw.decode("utf-8")
                    shard, end = scan(text, 0)
                    if type(shard) is not dict or end != len(text):
                        shard = None
                except (StopIteration, ValueError, RecursionError):
                    shard = None
            if shard is None:  # anything else, said exactly (or a line parse_line still accepts)
                try:
                    text, shard = parse_line(raw, display, line, strict=False, terminated=line != unterminated)
                except ManifestLineError as exc:
                    result.damaged = exc.diagnostics
                    break
            name, expected, checksum = shard.get("name"), shard.get("bytes"), shard.get("checksum")
            # ShardChecker.valid's own test of the shape every plain shard has, inline
            common = (
                len(shard) == 3 and type(name) is str and name and type(expected) is int and expected >= 0 and type(checksum) is str and checksum_form(checksum)
            )
            if not common and not valid(shard):
                result.invalid.extend(checker.explain(display, line - 2, line, text, shard))
                continue
        if name <= previous:
            result.invalid.append(order_problem(display, line, name, previous))
            break
        previous = name
        if not names:
            result.first_name_line = line
        names.append(name)
        index = line - 2
        if fast is None and (("://" in name and is_url(name)) or (not common and shard.get("kind", "file") != "file")):
            result.deferred.append((index, shard))
            continue
        folder, _, base = name.rpartition("/")
        if not ((fast is not None or (common and plain(name))) and ".." not in name and folder == checked_folder):
            try:
                folder_checked(name)
            except UnsafeName as exc:
                result.sizes.append((index, name, UNSAFE, f"refused, never read ({exc})"))
                continue
            if folder_fd >= 0:
                close(folder_fd)
                folder_fd = -1
            checked_folder = folder
            try:
                folder_fd = os_open(root_prefix + folder if folder else root_prefix, FOLDER_FLAGS)
            except OSError:
                folder_fd = -1  # no such folder: each of its files says so through the general path
        digest = None
        if read and 0 < expected < small and folder_fd >= 0:
            try:
                fd = os_open(base, flags, dir_fd=folder_fd)
            except OSError:
                fd = -1  # a symlink, or nothing there: the general path says which
            if fd >= 0:
                try:
                    # the end offset, not an fstat (a stat structure per file is a tenth of the
                    # shard's cost): a regular file's is its size; a FIFO or terminal refuses to
                    # seek, a character device says 0 and a folder refuses the read, so each
                    # goes to the general path, which names it
                    if seek(fd, 0, SEEK_END) == expected:
                        data = pread(fd, expected + 1, 0)
                        if len(data) == expected:
                            digest = new(data).digest()
                except OSError:
                    digest = None
                finally:
                    close(fd)
        if digest is not None:  # read whole, at the manifest's size
            passed += 1
            hashed += expected
            if prefix + digest.hex() == checksum:
                continue
            message = f"checksum differs: manifest {checksum[:24]}..., file {(prefix + digest.hex())[:24]}..."
            result.checksums.append((index, name, "corrupt", message))
            continue
        path = root_prefix + name
        size, digest, problem, detail = check(path, expected, read)
        if not problem:
            passed += 1
            hashed += size
            if digest is not None and prefix + digest.hex() != checksum:
                message = f"checksum differs: manifest {checksum[:24]}..., file {(prefix + digest.hex())[:24]}..."
                result.checksums.append((index, name, "corrupt", message))
        elif problem == UNREADABLE:
            passed += 1
            result.checksums.append((index, name, "missing", f"cannot read: {detail}"))
        elif problem == SIZE:
            kind = "truncated" if size < expected else "corrupt"
            result.sizes.append((index, name, kind, f"{size:,} bytes, the manifest says {expected:,}"))
        elif problem == UNSAFE:
            result.sizes.append((index, name, UNSAFE, f"refused, never read ({name!r}: resolves through a symlink to {detail}, outside the dataset root)"))
        else:
            assert problem == MISSING
            result.sizes.append((index, name, MISSING, f"no file at {path}" + (f" ({detail})" if "regular" in detail else "")))
    result.passed, result.bytes = passed, hashed
    return folder_fd


def chunks(lines: ShardLines, learned: list[int]) -> Iterator[tuple[int, bytes]]:
    """(first line, piece of whole lines) of about CHUNK_BYTES of shards (by the mean shard size
    seen so far in `learned` = [bytes, shards]) or CHUNK_LINES lines; FIRST_CHUNK_LINES until
    sizes are known, so large shards spread over the workers from the start."""

    def wanted() -> int:
        bytes_seen, shards_seen = learned
        if not shards_seen:
            return FIRST_CHUNK_LINES
        return min(CHUNK_LINES, max(1, CHUNK_BYTES // (bytes_seen // shards_seen + 4096)))

    for first, piece, _ in lines.pieces(wanted):
        yield first, piece


def check_shard_lines(lines: ShardLines, display: str, root: str, algorithm: str, jobs: int | None, control: Control) -> Generator[LinesResult, None, None]:
    """LinesResult of each chunk of `lines`, in order, checked by worker processes (many lines),
    threads, or here. A chunk is read only while `control.read` is on; after that, checked only."""
    jobs = worker_count(jobs)
    _plain_lines_of(algorithm)  # compiled once here, not in every worker
    learned = [0, 0]
    stream = chunks(lines, learned)
    head = list(islice(stream, 1 + PROCESS_MIN_FILES // FIRST_CHUNK_LINES))
    processes = use_processes(jobs, sum(c.count(b"\n") for _, c in head), PROCESS_MIN_FILES)

    def tasks() -> Iterator[tuple[tuple[Any, ...], None]]:
        for first, chunk in chain(head, stream):
            yield (chunk, first, display, algorithm, root, control.read), None

    for _, result in ordered_map(check_lines, tasks(), jobs, processes):
        learned[0] += result.bytes
        learned[1] += result.passed
        yield result
