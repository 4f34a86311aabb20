"""Read YAML and JSON files into plain data, remembering where every field came from.

Why not `yaml.safe_load`: it forgets line numbers, keeps the last of two duplicate keys without a
word, expands aliases without bound ("billion laughs"), and resolves scalars with YAML 1.1 rules
(`no` becomes False, `2026-01-01` a datetime) that differ between PyYAML versions. Records are
hashed, so the same bytes must always give the same data. This module composes the node graph with
libyaml (fast), then builds the data itself:

- scalars are resolved with the YAML 1.2 core schema (what JSON and most tools agree on), so
  `yes` stays a string and dates stay strings; only the standard tags are accepted, never a
  Python object tag;
- duplicate keys are reported with both lines;
- the expanded size of the graph is computed before any value is built, so an alias bomb is
  rejected in time proportional to the file, and a recursive alias is an error;
- every key and value gets its line and column for error messages.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from reprogate.core.diagnostics import Diagnostic, ExitCode, Location, field_path
from reprogate.core.errors import ReprogateError
from reprogate.core.fileio import read_input

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# Aliases may add at most this many nodes beyond those written out in the file.
MAX_ALIAS_EXPANSION = 100_000

JsonPath = tuple[Any, ...]

_PLAIN = "tag:reprogate:plain"  # a plain scalar whose type we resolve ourselves
_STR, _INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Deferred:
    """PyYAML, imported when the first node is composed or looked at: a command that reads no YAML
    or JSON document (detect of a requirements file, which every lock-file reader's import reaches)
    does not pay for its import. After the first use its names are this object's own, read as
    fast as a module's."""

    def __getattr__(self, name: str) -> Any:
        module = _import_yaml()
        self.__dict__.update(vars(module))
        return getattr(module, name)


def _import_yaml() -> ModuleType:
    import yaml

    return yaml


yaml: Any = _Deferred()

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


@functools.lru_cache(maxsize=1)
def plain_loader() -> Any:
    """The loader class, made when the first document is composed (it derives from PyYAML's)."""

    class PlainLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # the base is picked at run time (libyaml where built)
        """libyaml's composer with implicit typing switched off: we type plain scalars ourselves."""

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            if kind is yaml.ScalarNode:
                return _PLAIN if implicit[0] else _STR
            return _SEQ if kind is yaml.SequenceNode else _MAP

        # Path resolvers are a PyYAML feature we never use; skipping their bookkeeping saves ~10%.
        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

    return PlainLoader


class DocumentError(ReprogateError):
    """A file that could not be turned into data (exit 2), or a document that broke its schema
    where a command needs it valid (exit 1); carries the findings with their positions."""

    def __init__(self, diagnostics: list[Diagnostic], exit_code: ExitCode) -> None:
        super().__init__(diagnostics[0].message if diagnostics else "unreadable document", exit_code=exit_code, diagnostics=diagnostics)


@dataclass
class Document:
    """Parsed data of one file, plus the composed node graph it came from.

    Positions are looked up in the node graph only when a finding needs one, so loading a valid
    record pays nothing for them.
    """

    path: str
    data: Any
    syntax: str
    root: Any = field(default=None, repr=False)
    text: str | None = field(default=None, repr=False)  # JSON: composed only if a position is asked
    _keys: dict[int, dict[str, tuple[Any, Any]]] = field(default_factory=dict, repr=False)  # mapping node -> its keys

    def locate(self, path: JsonPath) -> Location:
        """Where to point for a finding about `path`: its key if it has one, else its value, else
        the nearest ancestor found (a missing field points at its parent's key).

        Each mapping's keys are indexed the first time a finding reaches it, so a document with
        20,000 findings costs one pass over each mapping, not one pass per finding."""
        if self.root is None and self.text is not None:
            self.root, self.text = _compose_json_positions(self.text), None
        node = self.root
        if node is None:
            return Location(1, 1)
        best = _mark(node.start_mark)
        for part in path:
            found = _child(node, part, self._keys)
            if found is None:
                break
            key_node, node = found
            best = _mark((key_node or node).start_mark)
        return best


def _is_merge(key_node: Any) -> bool:
    return isinstance(key_node, yaml.ScalarNode) and key_node.value == "<<" and not key_node.style


_MERGES = "\0merges"  # index entry holding a mapping's merge sources (no YAML key can be this)


def _child(node: Any, part: Any, index: dict[int, dict[str, tuple[Any, Any]]]) -> tuple[Any, Any] | None:
    """(key node or None, value node) of `part` inside `node`, following merge keys; `index`
    caches each mapping's keys by node identity."""
    if isinstance(node, yaml.SequenceNode):
        if isinstance(part, int) and 0 <= part < len(node.value):
            return None, node.value[part]
        return None
    if not isinstance(node, yaml.MappingNode) or not isinstance(part, str):
        return None
    keys = index.get(id(node))
    if keys is None:
        keys, merges = {}, []
        for key_node, value_node in node.value:
            if _is_merge(key_node):
                merges.append(value_node)
            elif isinstance(key_node, yaml.ScalarNode):
                keys.setdefault(key_node.value, (key_node, value_node))
        keys[_MERGES] = (None, merges)
        index[id(node)] = keys
    found = keys.get(part)
    if found is not None and part != _MERGES:
        return found
    for source in keys[_MERGES][1]:
        for mapping in source.value if isinstance(source, yaml.SequenceNode) else [source]:
            found = _child(mapping, part, index)
            if found is not None:
                return found
    return None


def _mark(mark: Any) -> Location:
    return Location(mark.line + 1, mark.column + 1)


def _error(path: str, code: str, message: str, loc: Location | None = None, hint: str = "", exit_code: ExitCode = ExitCode.USAGE) -> DocumentError:
    return DocumentError([Diagnostic(path, message, code, location=loc or Location(), hint=hint)], exit_code)


def read_text(path: Path, display: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Read a file as UTF-8 with a size cap, turning every failure into a located error."""
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise _error(display, "unreadable", f"cannot read file: {getattr(exc, 'strerror', None) or exc}") from None
    if size > max_bytes:
        raise _error(
            display,
            "too-large",
            f"file is {size:,} bytes, over the {max_bytes:,}-byte limit",
            hint="raise the limit with --max-bytes if this file is meant to be this large",
        )
    try:
        raw = read_input(path, max_bytes)
    except OSError as exc:
        raise _error(display, "unreadable", f"cannot read file: {exc.strerror or exc}") from None
    if raw is None:  # grew while we read, or a pipe whose size stat cannot tell
        raise _error(display, "too-large", f"file is over the {max_bytes:,}-byte limit", hint="raise the limit with --max-bytes")
    return decode_text(raw, display)


def load_bytes(raw: bytes, display: str, syntax: str = "yaml") -> Document:
    """Load a YAML or JSON file already read (once, by a reader that chose how: a file the code
    under test could have swapped is read without following a link), with load_document's checks."""
    text = decode_text(raw, display)
    return _load_json(text, display) if syntax == "json" else _load_yaml(text, display)


def decode_text(raw: bytes, display: str) -> str:
    """A file's bytes as UTF-8 text (a byte-order mark dropped), or a located error."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise _error(
            display,
            "not-utf8",
            f"byte 0x{raw[exc.start]:02x} at offset {exc.start} is not valid UTF-8",
            Location(line, col),
            hint="records must be UTF-8; re-save the file as UTF-8 (iconv -t UTF-8)",
        ) from None
    if not text.strip():
        raise _error(display, "empty", "file is empty (or a pipe nobody writes to)", hint="a record needs at least apiVersion and kind")
    return text


def load_document(path: Path, display: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Load one YAML or JSON file; raise DocumentError with located findings on any failure."""
    display = display if display is not None else str(path)
    text = read_text(path, display, max_bytes)
    if path.suffix.lower() == ".json":
        return _load_json(text, display)
    return _load_yaml(text, display)


def load_text(text: str, display: str, syntax: str = "yaml") -> Document:
    """Load data already in memory (tests, stdin, files read at another revision)."""
    if not text.strip():
        raise _error(display, "empty", "document is empty")
    return _load_json(text, display) if syntax == "json" else _load_yaml(text, display)


def _compose(text: str, display: str) -> Any:
    loader = plain_loader()(text)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        if "expected a single document" in str(exc):
            problem = "file holds more than one YAML document; a record is one document"
        raise _error(display, "yaml-syntax", f"YAML syntax error: {problem}", _mark(mark) if mark else None) from None
    except yaml.YAMLError as exc:  # reader errors (control characters) carry a position only
        pos = getattr(exc, "position", None)
        loc = _offset_location(text, pos) if isinstance(pos, int) else None
        raise _error(display, "yaml-syntax", f"YAML error: {getattr(exc, 'reason', exc)}", loc) from None
    finally:
        loader.dispose()


def _offset_location(text: str, offset: int) -> Location:
    before = text[:offset]
    return Location(before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)


def _load_yaml(text: str, display: str) -> Document:
    node = _compose(text, display)
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _PLAIN and _NULL_RE.match(node.value)):
        raise _error(display, "empty", "file holds no YAML document", hint="a record needs at least apiVersion and kind")
    builder = _Builder(display)
    if "*" in text:  # without an alias indicator there are no aliases to bound
        builder.check_size(node)
    data = builder.build(node, ())
    if builder.duplicates:
        raise DocumentError(builder.duplicates, ExitCode.USAGE)  # unreadable as written: exit 2, as non-UTF-8 is
    return Document(display, data, "yaml", node)


def _load_json(text: str, display: str) -> Document:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    data = parse_json(text, display, pairs)
    if duplicates:  # compose now, only to say on which lines
        builder = _Builder(display)
        node = _compose_json_positions(text)
        if node is not None:
            builder.build(node, ())
        if builder.duplicates:
            raise DocumentError(builder.duplicates, ExitCode.USAGE)  # unreadable as written: exit 2, as non-UTF-8 is
        raise _error(display, "duplicate-key", f"duplicate key {duplicates[0]!r}: JSON readers keep only one of them", exit_code=ExitCode.USAGE)
    return Document(display, data, "json", text=text)


MAX_INT_DIGITS = 4300  # Python's own limit on converting digit strings (sys.get_int_max_str_digits)


def parse_json(text: str, display: str, pairs: Any = None) -> Any:
    """JSON text as data, refusing what would break later: NaN and Infinity, integers too long to
    convert, and strings holding an unpaired UTF-16 surrogate (`"\\ud800"` decodes, but can never
    be written as UTF-8, hashed or printed). Every refusal is a located DocumentError (exit 2)."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not valid JSON")

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise ValueError(f"an integer of {len(digits.lstrip('-')):,} digits is longer than the {MAX_INT_DIGITS:,} digits reprogate reads")
        return int(digits)

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=no_constant, parse_int=integer)
    except json.JSONDecodeError as exc:
        raise _error(display, "json-syntax", f"JSON syntax error: {exc.msg}", Location(exc.lineno, exc.colno)) from None
    except (ValueError, RecursionError) as exc:
        raise _error(display, "json-syntax", f"JSON error: {exc}") from None
    if _SURROGATE_ESCAPE.search(text):
        where = _surrogate_path(data, ())
        if where is not None:
            message = f"{field_path(where) or 'a value'} holds an unpaired UTF-16 surrogate escape: not valid Unicode"
            raise _error(display, "not-unicode", message, hint="write the character itself, or a complete surrogate pair")
    return data


def _surrogate_path(data: Any, path: JsonPath) -> JsonPath | None:
    """The field path of the first key or string holding a lone surrogate, or None."""
    stack: list[tuple[Any, JsonPath]] = [(data, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if _has_surrogate(node):
                return where
        elif isinstance(node, dict):
            for key, value in node.items():
                if _has_surrogate(key):
                    return (*where, key)
                stack.append((value, (*where, key)))
        elif isinstance(node, list):
            stack.extend((value, (*where, i)) for i, value in enumerate(node))
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _compose_json_positions(text: str) -> Any:
    """The node graph of JSON text, for positions only; None where libyaml cannot read it.

    JSON is YAML 1.2, so libyaml composes nearly all of it. It refuses escaped surrogate pairs (an
    emoji written as \\ud83d\\ude00), so those are swapped for a same-length escape first.
    """
    try:
        return plain_loader()(_SURROGATE_ESCAPE.sub(r"\\u0058", text)).get_single_node()
    except (yaml.YAMLError, RecursionError):
        return None


class _Builder:
    """Turns a composed node graph into plain dicts, lists and scalars (the hot path of loading)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.duplicates: list[Diagnostic] = []

    def check_size(self, root: Any) -> None:
        """Reject alias bombs and recursive aliases before building anything.

        The expanded size of each node is memoised by identity, so this walks each distinct node
        once however often aliases repeat it: time and memory follow the file, not the expansion.
        """
        sizes: dict[int, int] = {}
        visiting: set[int] = set()
        distinct = 0

        def size(node: Any) -> int:
            nonlocal distinct
            key = id(node)
            if key in sizes:
                return sizes[key]
            if key in visiting:
                raise _error(self.display, "recursive-alias", "an alias refers to a node that contains it (recursive alias)", _mark(node.start_mark))
            visiting.add(key)
            distinct += 1
            total = 1
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    total += size(k) + size(v)
            elif isinstance(node, yaml.SequenceNode):
                for item in node.value:
                    total += size(item)
            visiting.discard(key)
            sizes[key] = total
            return total

        try:
            expanded = size(root)
        except RecursionError:
            raise _error(self.display, "too-deep", "document nests too deeply") from None
        if expanded - distinct > MAX_ALIAS_EXPANSION:
            raise _error(
                self.display,
                "alias-expansion",
                f"aliases expand this document to {expanded:,} nodes from {distinct:,} written (limit: {MAX_ALIAS_EXPANSION:,} added by aliases)",
                hint="write the repeated parts out, or use fewer nested aliases",
            )

    def build(self, node: Any, path: JsonPath) -> Any:
        cls, scalar = type(node), yaml.ScalarNode
        if cls is scalar:
            return self._scalar(node)
        if cls is yaml.SequenceNode:
            self._require_tag(node, _SEQ)
            return [self._plain(item) if type(item) is scalar and item.tag == _PLAIN else self.build(item, path + (i,)) for i, item in enumerate(node.value)]
        self._require_tag(node, _MAP)
        out: dict[str, Any] = {}
        seen: dict[str, Any] = {}
        merged: list[dict[str, Any]] = []
        for key_node, value_node in node.value:
            if type(key_node) is not scalar:
                raise _error(self.display, "complex-key", "mapping keys must be plain strings", _mark(key_node.start_mark))
            key = key_node.value
            if key == "<<" and not key_node.style:
                merged.extend(self._merge_sources(value_node, path))
                continue
            if key in seen:
                self._duplicate(path + (key,), seen[key], key_node)
                continue
            seen[key] = key_node
            out[key] = self._plain(value_node) if type(value_node) is scalar and value_node.tag == _PLAIN else self.build(value_node, path + (key,))
        for source in merged:  # keys written in the mapping win over merged ones
            for key, value in source.items():
                out.setdefault(key, value)
        return out

    def _duplicate(self, path: JsonPath, first_node: Any, again_node: Any) -> None:
        first, again = _mark(first_node.start_mark), _mark(again_node.start_mark)
        self.duplicates.append(
            Diagnostic(
                self.display,
                f"duplicate key {path[-1]!r} (first at line {first.line}, again at line {again.line}); YAML keeps only the last one",
                "duplicate-key",
                location=again,
                field=field_path(path),
                hint=f"remove one of the two entries (lines {first.line} and {again.line})",
            )
        )

    def _merge_sources(self, node: Any, path: JsonPath) -> list[dict[str, Any]]:
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        sources = []
        for item in nodes:
            if not isinstance(item, yaml.MappingNode):
                raise _error(self.display, "bad-merge", "a merge key (<<) must refer to a mapping", _mark(item.start_mark))
            sources.append(self.build(item, path))
        return sources

    def _require_tag(self, node: Any, expected: str) -> None:
        if node.tag != expected:
            raise _error(self.display, "unsupported-tag", f"tag {node.tag!r} is not supported; records use plain YAML", _mark(node.start_mark))

    def _plain(self, node: Any) -> Any:
        """A plain (unquoted, untagged) scalar's value: most values are, so build() resolves them
        here without a call per node or a path; numbers go through _scalar's length guard."""
        value = node.value
        if value and value[0] not in _NUMBER_START and value not in _WORDS:
            return value
        return self._scalar(node)

    def _scalar(self, node: Any) -> Any:
        try:
            value = self._convert(node)
        except ValueError:  # Python refuses to convert integers of more than 4,300 digits
            message = f"an integer of {len(node.value):,} digits is longer than the {MAX_INT_DIGITS:,} digits reprogate reads"
            raise _error(self.display, "bad-scalar", message, _mark(node.start_mark)) from None
        if isinstance(value, float) and not math.isfinite(value):  # as JSON refuses NaN and Infinity: no α, bound or tolerance is one
            raise _error(self.display, "bad-scalar", f"{node.value!r} is not a finite number", _mark(node.start_mark))
        return value

    def _convert(self, node: Any) -> Any:
        tag, value = node.tag, node.value
        if tag == _PLAIN:
            return resolve_plain(value)
        if tag == _STR:
            return value
        if tag not in _EXPLICIT:
            raise _error(self.display, "unsupported-tag", f"tag {tag!r} is not supported; records use plain YAML", _mark(node.start_mark))
        pattern, convert = _EXPLICIT[tag]
        if not pattern.match(value):
            raise _error(self.display, "bad-scalar", f"{value!r} is not a valid {tag.rsplit(':', 1)[-1]}", _mark(node.start_mark))
        return convert(value)


_WORDS: dict[str, Any] = {w: None for w in ("", "~", "null", "Null", "NULL")}
_WORDS.update({w: True for w in ("true", "True", "TRUE")})
_WORDS.update({w: False for w in ("false", "False", "FALSE")})
_NUMBER_START = frozenset("0123456789+-.")


def resolve_plain(value: str) -> Any:
    """YAML 1.2 core schema: the same answer from every parser and every PyYAML version."""
    if value in _WORDS:
        return _WORDS[value]
    if value[0] not in _NUMBER_START:
        return value
    if _INT_RE.match(value):
        return _to_int(value)
    if _FLOAT_RE.match(value):
        return _to_float(value)
    return value


def _to_int(value: str) -> int:
    if value.startswith("0o"):
        return int(value[2:], 8)
    if value.startswith("0x"):
        return int(value[2:], 16)
    return int(value, 10)


def _to_float(value: str) -> float:
    lowered = value.lower()
    if lowered.endswith(".inf"):
        return float("-inf") if lowered.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    return float(value)


_NUMBER_RE = re.compile(f"(?:{_INT_RE.pattern})|(?:{_FLOAT_RE.pattern})")
_EXPLICIT: dict[str, tuple[re.Pattern[str], Any]] = {
    _INT: (_INT_RE, _to_int),
    _FLOAT: (_NUMBER_RE, lambda v: _to_float(v) if _FLOAT_RE.match(v) else float(_to_int(v))),
    _BOOL: (_BOOL_RE, lambda v: v.lower() == "true"),
    _NULL: (_NULL_RE, lambda v: None),
}


def display_path(path: Path) -> str:
    """A path as a person typed it: relative to the working folder where possible."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)
