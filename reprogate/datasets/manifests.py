"""Manifest files in three forms, and the one digest they share.

- YAML (`.yaml`, the default) and JSON (`.json`): the whole manifest as one document, one shard
  per line. Fine for thousands of shards; a reader holds all of it in memory.
- JSON Lines (`.jsonl`), for datasets of up to millions of shards: line 1 is a JSON object holding
  every field but `shards` (its `digest` included), and each following line is one shard object,
  in code-point order of shard names. Written and read a line at a time, so memory does not grow
  with the shard count, and the sorted order lets verify find extra files by merging two sorted
  streams instead of holding a set of names. Blank lines are not allowed; every line ends with a
  newline (the last may omit it).

The digest a record pins is canonical-v1 over the manifest as data (every field but `digest`),
whatever the form: `ManifestDigest` computes it incrementally, feeding shards one at a time
between the fields that sort before and after "shards", so the bytes hashed are exactly those
canonical_bytes would produce for the whole manifest.
"""

from __future__ import annotations

import functools
import hashlib
import json
import json.scanner
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, final

from reprogate.core.canonical import (
    CANONICAL_PREFIX,
    CanonicalError,
    canonical_bytes,
    canonical_digest,
)
from reprogate.core.diagnostics import Diagnostic, ExitCode, Location
from reprogate.core.documents import (
    DEFAULT_MAX_BYTES,
    Document,
    DocumentError,
    load_document,
)
from reprogate.core.fileio import atomic_writer
from reprogate.core.yamlout import FlowMap, dump_yaml, flow_item

STREAM_SUFFIXES = (".jsonl",)
MAX_LINE = 16 * 1024 * 1024  # a longer line is damage, not a shard
PIECE_BLOCK = 256 * 1024  # how much of a JSON Lines manifest is read at a time
PIECE_SPAN = 1024 * 1024  # the most bytes of lines in one piece (a longer line comes alone)
RAW_PIECE_LINES = 256
_PLACEHOLDER = CANONICAL_PREFIX + "0" * 64
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def is_stream(path: str | Path) -> bool:
    """Whether `path` names a JSON Lines manifest (by its suffix, as .json and .yaml are)."""
    return str(path).lower().endswith(STREAM_SUFFIXES)


# digest ------------------------------------------------------------------------------------------


class ManifestDigest:
    """canonical-v1 digest of a manifest whose shards arrive one at a time.

    canonical-v1 writes object keys in code-point order, so the canonical text of a manifest is
    the fields before "shards", then the shards array, then the fields after it. The fields are
    known up front (a build knows them before hashing; a JSON Lines file has them on line 1).
    """

    def __init__(self, fields: dict[str, Any]) -> None:
        keys = sorted(k for k in fields if k != "digest")
        if "shards" in keys:
            raise ValueError("the fields of a streamed manifest exclude its shards")

        def member(key: str) -> str:
            return json.dumps(key, ensure_ascii=False) + ":" + canonical_bytes(fields[key]).decode("utf-8")

        before = "".join(member(k) + "," for k in keys if k < "shards")
        after = "".join("," + member(k) for k in keys if k > "shards")
        self._hash = hashlib.sha256(("{" + before + '"shards":[').encode("utf-8"))
        self._suffix = ("]" + after + "}").encode("utf-8")
        self._empty = True

    def add_canonical(self, shard: bytes) -> None:
        """Feed one shard already in canonical form (sorted keys, no spaces, UTF-8), or several
        joined by commas."""
        if self._empty:
            self._empty = False
        else:
            self._hash.update(b",")
        self._hash.update(shard)

    def add(self, shard: Any) -> None:
        try:
            text = _CANONICAL.encode(shard)
        except (TypeError, ValueError) as exc:
            raise CanonicalError(f"a shard has no canonical form: {exc}") from None
        if isinstance(shard, dict) and not all(isinstance(k, str) for k in shard):
            raise CanonicalError("a shard has a key that is not a string")
        self.add_canonical(text.encode("utf-8"))

    def value(self) -> str:
        final = self._hash.copy()
        final.update(self._suffix)
        return CANONICAL_PREFIX + final.hexdigest()


def streamed_digest(fields: dict[str, Any], shards: Iterable[Any]) -> str:
    digest = ManifestDigest(fields)
    for shard in shards:
        digest.add(shard)
    return digest.value()


# reading JSON Lines --------------------------------------------------------------------------------


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
_SCANNERS = {True: json.scanner.make_scanner(_STRICT), False: json.scanner.make_scanner(_FAST)}  # type: ignore[attr-defined]
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


class StreamedManifest(dict):  # type: ignore[type-arg]
    """A JSON Lines manifest as data: the header's fields, and `shards` read lazily (ShardLines).

    It is a dict so code that reads fields (`id`, `namespace`, `retention`) works unchanged;
    manifest_digest() and anything iterating `shards` stream the file instead of holding it.
    """


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


class LineDocument(Document):
    """A JSON Lines manifest as a Document: positions are lines (shard i is on line i + 2)."""

    def locate(self, path: tuple[Any, ...]) -> Location:
        if len(path) >= 2 and path[0] == "shards" and isinstance(path[1], int):
            return Location(path[1] + 2, 1)
        header = self.text or ""
        if path and isinstance(path[0], str):
            at = header.find(json.dumps(path[0], ensure_ascii=False) + ":")
            if at >= 0:
                return Location(1, at + 1)
        return Location(1, 1)


def load_manifest(path: Path, display: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Load a manifest in any form. A JSON Lines manifest's data is a StreamedManifest: its header
    is read now, its shards each time they are iterated."""
    display = display if display is not None else str(path)
    if not is_stream(path):
        return load_document(path, display, max_bytes)
    text, header = read_header(path, display, max_bytes)
    data = StreamedManifest(header)
    data["shards"] = ShardLines(path, display)
    return LineDocument(display, data, "jsonl", text=text)


def digest_of(manifest: dict[str, Any]) -> str:
    """canonical-v1 digest of a manifest (excluding its own `digest`), streaming its shards when
    they are read lazily."""
    shards = manifest.get("shards")
    fields = {k: v for k, v in manifest.items() if k not in ("digest", "shards")}
    if isinstance(shards, ShardLines):
        return streamed_digest(fields, shards)
    return canonical_digest({k: v for k, v in manifest.items() if k != "digest"})


# writing -----------------------------------------------------------------------------------------


@final
class ManifestWriter:
    """Write a manifest shard by shard, in the form its file name asks for, atomically.

    `fields` are every field but shards, side files and the digest, in the order to write them;
    `files` are the side files (known before the shards: a build hashes them first). Shards are
    added in order; leaving the `with` block writes the digest (`value`) and renames the file into
    place, or, by an exception, leaves the previous file, if any, untouched and no temporary.
    """

    def __init__(self, output: Path, fields: dict[str, Any], files: list[dict[str, Any]] | None = None, comment: str = "") -> None:
        self.output, self.fields, self.files, self.comment = output, dict(fields), files or [], comment
        self.form = "jsonl" if is_stream(output) else ("json" if output.suffix.lower() == ".json" else "yaml")
        all_fields = dict(self.fields)
        if self.files:
            all_fields["files"] = self.files
        self.digest = ManifestDigest(all_fields)
        self.count = 0
        self.bytes = 0
        self.value = ""  # the digest, once closed
        self._context: Any = None
        self._fh: Any = None
        self._placeholder_at = -1

    def __enter__(self) -> ManifestWriter:
        self._context = atomic_writer(self.output)
        self._fh = self._context.__enter__()
        self._write_head()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None) -> bool:
        context, self._context = self._context, None
        if kind is None:
            try:
                self._write_tail()
            except BaseException as exc:
                context.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return bool(context.__exit__(kind, value, traceback))

    def _write(self, text: str) -> None:
        self._fh.write(text.encode("utf-8"))

    def _write_head(self) -> None:
        if self.form == "jsonl":
            header = {**self.fields, **({"files": self.files} if self.files else {}), "digest": _PLACEHOLDER}
            raw = (json.dumps(header, ensure_ascii=False) + "\n").encode("utf-8")
            self._placeholder_at = raw.rindex(_PLACEHOLDER.encode("ascii"))
            self._fh.write(raw)
        elif self.form == "json":
            self._write("{\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in self.fields.items()) + '  "shards": [')
        else:
            self._write(dump_yaml(self.fields, self.comment) + "shards:")

    def add_files(self, names: list[str], sizes: list[int], checksums: list[str]) -> None:
        """Add plain file shards (the fast path of a build: a batch at a time, no dict per shard).
        Raises UnicodeEncodeError for a name that is not valid Unicode (undecodable bytes)."""
        if not names:
            return
        quoted = [f'"{n}"' if n.isascii() and n.isprintable() and '"' not in n and "\\" not in n else json.dumps(n, ensure_ascii=False) for n in names]
        canonical = ",".join([f'{{"bytes":{s},"checksum":"{c}","name":{q}}}' for q, s, c in zip(quoted, sizes, checksums, strict=True)])
        self.digest.add_canonical(canonical.encode("utf-8"))
        if self.form == "jsonl":
            self._write("".join([f'{{"name": {q}, "bytes": {s}, "checksum": "{c}"}}\n' for q, s, c in zip(quoted, sizes, checksums, strict=True)]))
        elif self.form == "json":
            lines = ",\n".join([f'    {{"name": {q}, "bytes": {s}, "checksum": "{c}"}}' for q, s, c in zip(quoted, sizes, checksums, strict=True)])
            self._write(("\n" if self.count == 0 else ",\n") + lines)
        else:
            items = "".join([flow_item({"name": n, "bytes": s, "checksum": c}) for n, s, c in zip(names, sizes, checksums, strict=True)])
            self._write(("\n" if self.count == 0 else "") + items)
        self.count += len(names)
        self.bytes += sum(sizes)

    def add(self, shard: dict[str, Any]) -> None:
        """Add a shard of any shape (DVC directories carry `kind` and `files`)."""
        self.digest.add(shard)
        if self.form == "jsonl":
            self._write(json.dumps(shard, ensure_ascii=False) + "\n")
        elif self.form == "json":
            self._write(("\n" if self.count == 0 else ",\n") + "    " + json.dumps(shard, ensure_ascii=False))
        else:
            self._write(("\n" if self.count == 0 else "") + flow_item(shard))
        self.count += 1
        self.bytes += int(shard.get("bytes", 0) or 0)

    def _write_tail(self) -> None:
        value = self.digest.value()
        if self.form == "jsonl":
            self._fh.seek(self._placeholder_at)
            self._fh.write(value.encode("ascii"))
            self._fh.seek(0, 2)
        elif self.form == "json":
            tail = "\n  ]" if self.count else "]"
            if self.files:
                tail += ',\n  "files": [\n' + ",\n".join("    " + json.dumps(f, ensure_ascii=False) for f in self.files) + "\n  ]"
            self._write(tail + f',\n  "digest": {json.dumps(value)}\n}}\n')
        else:
            tail = "" if self.count else " []\n"
            if self.files:
                tail += dump_yaml({"files": [FlowMap(f) for f in self.files]})
            self._write(tail + dump_yaml({"digest": value}))
        self.value = value


# checking shard lines ----------------------------------------------------------------------------

SHARD_SCHEMA = "#/$defs/manifestBody/properties/shards/items"


class _LineDoc:
    """Just enough of a Document for schema_check to locate findings inside one line."""

    def __init__(self, display: str, line: int, text: str) -> None:
        self.path, self.line, self.text = display, line, text

    def locate(self, path: tuple[Any, ...]) -> Location:
        at = self.text.find(json.dumps(path[0], ensure_ascii=False) + ":") if path and isinstance(path[0], str) else -1
        return Location(self.line, at + 1 if at >= 0 else 1)


class ShardChecker:
    """Schema check of one shard object at a time, as the manifest schema defines a shard.

    The common shape (exactly name, bytes and checksum, of the right types and form) is confirmed
    by a few type tests; anything else goes to the compiled schema, and jsonschema explains
    whatever fails, so every message comes from the schema itself.
    """

    def __init__(self) -> None:
        import re

        from reprogate.core.schema_fastpath import compile_schema
        from reprogate.core.schemas import load_schema

        schema = load_schema("DatasetManifest")
        self._ref = {"$ref": schema["$id"] + SHARD_SCHEMA}
        self._compiled = compile_schema(self._ref, schema)
        self._checksum = re.compile(schema["$defs"]["checksum"]["pattern"]).search

    def valid(self, shard: dict[str, Any]) -> bool:
        name, size, checksum = shard.get("name"), shard.get("bytes"), shard.get("checksum")
        if len(shard) == 3 and type(name) is str and name and type(size) is int and size >= 0 and type(checksum) is str and self._checksum(checksum):
            return True
        return bool(self._compiled(shard))

    def explain(self, display: str, index: int, line: int, text: str, shard: Any) -> list[Diagnostic]:
        """Findings for a shard `valid` refused, located on its line, fields named shards[index]."""
        from reprogate.core.schema_check import explain as _explain
        from reprogate.core.schemas import validator

        doc = _LineDoc(display, line, text)
        found: list[Diagnostic] = []
        for error in validator("DatasetManifest").evolve(schema=self._ref).iter_errors(shard):
            for finding in _explain(doc, error):  # type: ignore[arg-type]
                finding.field = f"shards[{index}]" + (f".{finding.field}" if finding.field else "")
                found.append(finding)
        return found


@functools.lru_cache(maxsize=1)
def shard_checker() -> ShardChecker:
    """The one ShardChecker a process needs (compiling the schema takes milliseconds)."""
    return ShardChecker()
