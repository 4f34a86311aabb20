"""Verifying the shard lines of a JSON Lines manifest in the hashing workers themselves.

Per shard, the Python work of verify is parsing its line, checking it against the schema and its
name for safety, and comparing results: as much as opening and hashing a small file. Done by the
calling process it would leave the workers waiting, so the caller only reads raw lines and hands
out chunks of them; each worker parses, checks, stats and hashes a chunk and sends back what is
wrong plus the names in it (for the order check across chunks and the search for extra files).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Location
from reprogate.core.pool import ordered_map, use_processes, worker_count
from reprogate.datasets.hashing import (
    MISSING,
    PROCESS_MIN_FILES,
    SIZE,
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
from reprogate.datasets.names import RootGuard, UnsafeName, is_url
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


def check_lines(piece: bytes, first_line: int, display: str, algorithm: str, root: str, read: bool) -> LinesResult:
    """Parse, check and (when `read`) hash a piece of whole shard lines starting at `first_line`."""
    result = LinesResult()
    checker = shard_checker()
    valid = checker.valid
    guard = _GUARDS.get(root) or _GUARDS.setdefault(root, RootGuard(root))
    reader = FileReader(algorithm, guard.real_root)
    check, folder_checked, scan = reader.check, guard.folder_checked, scan_lenient
    prefix = algorithm + ":"
    previous = ""
    names = result.names
    parts = piece.split(b"\n")
    last = parts.pop()  # b"" when the piece ends with a newline; else the file's unterminated last line
    if last:
        parts.append(last)
    unterminated = first_line + len(parts) - 1 if last else -1
    for line, raw in enumerate(parts, first_line):
        index = line - 2
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
                return result
        if not valid(shard):
            result.invalid.extend(checker.explain(display, index, line, text, shard))
            continue
        name = shard["name"]
        if name <= previous:
            result.invalid.append(order_problem(display, line, name, previous))
            return result
        previous = name
        if not names:
            result.first_name_line = line
        names.append(name)
        if shard.get("kind", "file") != "file" or ("://" in name and is_url(name)):
            result.deferred.append((index, shard))
            continue
        try:
            path = folder_checked(name)
        except UnsafeName as exc:
            result.sizes.append((index, name, UNSAFE, f"refused, never read ({exc})"))
            continue
        expected = shard["bytes"]
        size, digest, problem, detail = check(path, expected, read)
        if not problem:
            result.passed += 1
            result.bytes += size
            if digest is not None and prefix + digest.hex() != shard["checksum"]:
                message = f"checksum differs: manifest {shard['checksum'][:24]}..., file {(prefix + digest.hex())[:24]}..."
                result.checksums.append((index, name, "corrupt", message))
        elif problem == UNREADABLE:
            result.passed += 1
            result.checksums.append((index, name, "missing", f"cannot read: {detail}"))
        elif problem == SIZE:
            kind = "truncated" if size < expected else "corrupt"
            result.sizes.append((index, name, kind, f"{size:,} bytes, the manifest says {expected:,}"))
        elif problem == UNSAFE:
            result.sizes.append((index, name, UNSAFE, f"refused, never read ({name!r}: resolves through a symlink to {detail}, outside the dataset root)"))
        else:
            assert problem == MISSING
            result.sizes.append((index, name, MISSING, f"no file at {path}" + (f" ({detail})" if "regular" in detail else "")))
    return result


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


def check_shard_lines(lines: ShardLines, display: str, root: str, algorithm: str, jobs: int | None, control: Control) -> Iterator[LinesResult]:
    """LinesResult of each chunk of `lines`, in order, checked by worker processes (many lines),
    threads, or here. A chunk is read only while `control.read` is on; after that, checked only."""
    jobs = worker_count(jobs)
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
