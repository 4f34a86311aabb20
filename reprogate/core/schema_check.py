"""Turn JSON Schema errors into findings a person can act on in seconds.

jsonschema's raw messages name regular expressions and nested `anyOf` branches; a person needs the
line, the field, what is expected in words, and what to do. Every error is reported, not just the
first, each pointing at the key it concerns.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from reprogate.core.diagnostics import Diagnostic, Location, field_path
from reprogate.core.documents import Document
from reprogate.core.redact import redact
from reprogate.core.schema_fastpath import Unsupported, compile_schema
from reprogate.core.schemas import SCHEMA_FILES, load_schema, validator

# Hints for string forms, keyed by the schema `$defs` name the pattern comes from.
_FORM_HINTS = {
    "sha256": "write sha256:<64 lowercase hex>; `reprogate digest FILE` prints it",
    "canonicalDigest": "write canonical-v1:sha256:<64 hex>; `reprogate digest --canonical FILE` prints it",
    "gitCommit": "use the full commit id: git rev-parse HEAD",
    "relativePath": "paths are POSIX, relative to the repository root, without `..`",
    "shardName": "shard names are relative to the dataset root, without `..` and not absolute",
    "gpuUuid": "take UUIDs from `nvidia-smi -L` or `reprogate capture`",
    "date": "write dates as YYYY-MM-DD",
    "dateTime": "write timestamps as RFC 3339, e.g. 2026-11-20T10:00:00Z",
}


class Locating(Protocol):
    """What a finding needs of the document it is about: its name and where a field sits (a
    Document, or one JSON Lines shard's line, datasets/shard_checker.py)."""

    path: str

    def locate(self, path: tuple[Any, ...]) -> Location: ...


@functools.cache
def quick_check(kind: str) -> Callable[[Any], bool] | None:
    """The compiled yes/no check for a kind, or None if its schema needs the full validator."""
    others = [load_schema(k) for k in SCHEMA_FILES if k != kind]
    try:
        return compile_schema(load_schema(kind), *others)
    except Unsupported:
        return None


def schema_diagnostics(doc: Document, kind: str) -> list[Diagnostic]:
    """Every schema violation of `doc` as a located finding, in document order.

    Valid documents (the common case in a gate) are confirmed by the compiled check alone;
    jsonschema runs only to explain a document that failed it.
    """
    quick = quick_check(kind)
    if quick is not None and quick(doc.data):
        return []
    found: list[Diagnostic] = []
    for error in validator(kind).iter_errors(doc.data):
        found.extend(explain(doc, error))
    found.sort(key=lambda d: (d.location.line, d.location.col, d.field))
    return _dedupe(found)


def _dedupe(items: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        key = (item.field, item.message)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _finding(doc: Locating, path: tuple[Any, ...], message: str, hint: str = "", code: str = "schema") -> Diagnostic:
    return Diagnostic(doc.path, message, code, location=doc.locate(path), field=field_path(path), hint=hint)


def explain(doc: Locating, error: Any) -> Iterator[Diagnostic]:
    path = tuple(error.absolute_path)
    kind = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance

    if kind == "required":
        missing = [name for name in error.validator_value if not (isinstance(instance, dict) and name in instance)]
        for name in missing:
            yield _finding(doc, path + (name,), f"required field {name!r} is missing", _missing_hint(path, name, instance), "schema.required")
        return
    if kind in ("additionalProperties", "unevaluatedProperties") and isinstance(instance, dict):
        known = sorted(schema.get("properties", {}))
        patterns = schema.get("patternProperties", {})
        for name in instance:
            if name in schema.get("properties", {}) or any(name.startswith(p.strip("^")) for p in patterns):
                continue
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else (f"known fields: {', '.join(known)}" if known else "")
            yield _finding(doc, path + (name,), f"unknown field {name!r}", hint, "schema.unknown-field")
        return
    if kind in ("oneOf", "anyOf") and _is_choice_of_required(schema):
        options = " or ".join(repr(s["required"][0]) for s in schema[kind])
        what = "exactly one" if kind == "oneOf" else "at least one"
        yield _finding(doc, path, f"needs {what} of {options}", "", "schema.choice")
        return
    if kind in ("oneOf", "anyOf") and error.context:
        from jsonschema.exceptions import best_match

        yield from explain(doc, best_match(error.context))
        return
    if kind == "const":
        yield _finding(doc, path, f"must be {error.validator_value!r}, not {_short(instance)}", "", "schema.const")
        return
    if kind == "enum":
        options = ", ".join(repr(v) for v in error.validator_value)
        close = difflib.get_close_matches(str(instance), [str(v) for v in error.validator_value], n=1)
        hint = f"did you mean {close[0]!r}?" if close else ""
        yield _finding(doc, path, f"{_short(instance)} is not one of {options}", hint, "schema.enum")
        return
    if kind in ("pattern", "format"):
        form = _form_name(error)
        described = schema.get("description", "").rstrip(".")
        message = f"{_short(instance)} is not in the expected form" + (f": {described}" if described else "")
        yield _finding(doc, path, message, _FORM_HINTS.get(form, ""), "schema.form")
        return
    if kind == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        yield _finding(doc, path, f"must be of type {expected}, not {_json_type(instance)} ({_short(instance)})", _type_hint(expected, instance), "schema.type")
        return
    yield _finding(doc, path, redact(error.message), "", f"schema.{kind}")


def _form_name(error: Any) -> str:
    """The `$defs` entry a failing pattern or format comes from (for a targeted hint)."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    return _forms_by_pattern().get(schema.get("pattern") or schema.get("format") or "", "")


@functools.lru_cache(maxsize=1)
def _forms_by_pattern() -> dict[str, str]:
    forms: dict[str, str] = {}
    for kind in SCHEMA_FILES:
        for name, definition in load_schema(kind).get("$defs", {}).items():
            key = definition.get("pattern")
            if name in _FORM_HINTS and key:
                forms[key] = name
    return forms


def _is_choice_of_required(schema: dict[str, Any]) -> bool:
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if options:
            return all(set(o) == {"required"} and len(o["required"]) == 1 for o in options)
    return False


def _missing_hint(path: tuple[Any, ...], name: str, instance: Any) -> str:
    if path == ("container",) and name == "digest":
        if isinstance(instance, dict) and instance.get("tag"):
            ref = f"{instance.get('registry', 'REGISTRY')}/{instance.get('repository', 'REPOSITORY')}:{instance['tag']}"
            return f"a tag can move; pin the manifest digest it points to: skopeo inspect --format '{{{{.Digest}}}}' docker://{ref}"
        return "pin the image by manifest digest (skopeo inspect --format '{{.Digest}}' docker://IMAGE:TAG)"
    if path == ("container",) and name in ("registry", "repository"):
        return "or, for a run without a container, write `used: false` with a `reason`"
    if path == () and name in ("container", "dataset"):
        return f"a run without a {name} says so: `{name}: {{used: false, reason: ...}}`"
    if name == "checksum":
        return "`reprogate digest FILE` prints the sha256: value"
    if name == "hash":
        return "`reprogate digest --canonical FILE` prints the canonical-v1 value"
    return ""


def _type_hint(expected: str, instance: Any) -> str:
    if expected == "boolean" and isinstance(instance, str) and instance.lower() in ("yes", "no", "on", "off", "y", "n"):
        return "records use YAML 1.2: write true or false"
    if expected in ("integer", "number") and isinstance(instance, str):
        return "remove the quotes around the number"
    if expected == "string" and isinstance(instance, (int, float)) and not isinstance(instance, bool):
        return 'quote the value so YAML keeps it as text (e.g. "2.10")'
    return ""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _short(value: Any) -> str:
    """A value as quoted in a message: bounded in length, credentials never shown."""
    text = redact(repr(value))
    return text if len(text) <= 60 else text[:57] + "..."
