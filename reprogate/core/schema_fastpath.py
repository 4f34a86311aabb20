"""A compiled yes/no check for our schemas, so valid documents skip jsonschema's slow walk.

jsonschema interprets the schema on every call (about 4 ms per run record here); a gate that
validates a thousand records would spend most of its time there. This module compiles a schema
once into nested closures that answer only "valid or not", about ten times faster. Only when the
answer is "not valid" does schema_check.py run jsonschema to explain why, so every message still
comes from the reference implementation.

Safety: the compiler knows a fixed set of keywords. A schema using any other keyword raises
Unsupported at compile time and the caller falls back to jsonschema for every document, so a
constraint can never be skipped silently. tests/test_schema_fastpath.py checks the two agree on
thousands of mutated records.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Keywords that never constrain a value (annotations and containers).
_ANNOTATIONS = {"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not implement."""


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: true is not 1, 1 equals 1.0, containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _is_date(value: str) -> bool:
    try:
        datetime.date.fromisoformat(value)
        return True
    except ValueError:
        return False


def _is_date_time(value: str) -> bool:
    text = value.replace("t", "T").replace(" ", "T")
    text = text[:-1] + "+00:00" if text[-1:] in "zZ" else text
    try:
        return datetime.datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


_FORMATS: dict[str, Callable[[str], bool]] = {"date": _is_date, "date-time": _is_date_time}


_OBJECT_KEYWORDS = ("required", "properties", "patternProperties", "additionalProperties")


def _all_of(checks: list[Check]) -> Check:
    """One function that passes when every check passes (unrolled for the common short lists)."""
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks
        return lambda v: a(v) and b(v)
    if len(checks) == 3:
        a, b, c = checks
        return lambda v: a(v) and b(v) and c(v)

    def every(v: Any) -> bool:
        for check in checks:
            if not check(v):
                return False
        return True

    return every


class _Compiler:
    def __init__(self, resources: dict[str, dict[str, Any]]) -> None:
        self.resources = resources  # $id -> schema document (bundled resources included)
        self.refs: dict[tuple[str, str], Check] = {}

    def compile(self, schema: Any, base: str) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict):
            raise Unsupported(f"schema node {schema!r}")
        base = schema.get("$id", base)
        checks: list[Check] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword in _OBJECT_KEYWORDS or keyword in ("then", "else"):
                continue
            make = getattr(self, "_kw_" + keyword.replace("$", "dollar_"), None)
            if make is None:
                raise Unsupported(keyword)
            checks.append(make(value, schema, base))
        if any(keyword in schema for keyword in _OBJECT_KEYWORDS):
            checks.append(self._object(schema, base))
        return _all_of(checks)

    def _ref(self, ref: str, base: str) -> Check:
        uri, _, pointer = ref.partition("#")
        resource = uri or base
        key = (resource, pointer)
        if key not in self.refs:
            self.refs[key] = lambda v: self.refs[key](v)  # placeholder while compiling: a recursive ref calls through it
            target: Any = self.resources[resource]
            for part in [p for p in pointer.split("/") if p]:
                target = target[part.replace("~1", "/").replace("~0", "~")]
            self.refs[key] = self.compile(target, resource)
        return self.refs[key]  # compiled: called directly; still compiling (recursion): the placeholder

    # keywords -----------------------------------------------------------------------------------

    def _kw_dollar_ref(self, value: str, schema: dict[str, Any], base: str) -> Check:
        return self._ref(value, base)

    def _kw_type(self, value: Any, schema: dict[str, Any], base: str) -> Check:
        names = value if isinstance(value, list) else [value]
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            return tests[0]
        return lambda v: any(t(v) for t in tests)

    def _kw_enum(self, value: list[Any], schema: dict[str, Any], base: str) -> Check:
        if all(isinstance(option, str) for option in value):
            options = frozenset(value)
            return lambda v: isinstance(v, str) and v in options
        return lambda v: any(_json_equal(v, option) for option in value)

    def _kw_const(self, value: Any, schema: dict[str, Any], base: str) -> Check:
        return lambda v: _json_equal(v, value)

    def _object(self, schema: dict[str, Any], base: str) -> Check:
        """required, properties, patternProperties and additionalProperties in one pass over the
        object's own members (a record sets few of the many fields its schema allows)."""
        required = frozenset(schema.get("required", ()))
        props = {name: self.compile(sub, base) for name, sub in schema.get("properties", {}).items()}
        patterns = [(re.compile(p).search, self.compile(sub, base)) for p, sub in schema.get("patternProperties", {}).items()]
        extra_schema = schema.get("additionalProperties", True)
        extra = None if extra_schema is True else self.compile(extra_schema, base)

        def check(v: Any) -> bool:
            if not isinstance(v, dict):
                return True
            if required and not v.keys() >= required:
                return False
            for name, item in v.items():
                sub = props.get(name)
                matched = False
                for search, pattern_sub in patterns:
                    if search(name):
                        matched = True
                        if not pattern_sub(item):
                            return False
                if sub is not None:
                    if not sub(item):
                        return False
                elif not matched and extra is not None and not extra(item):
                    return False
            return True

        return check

    def _kw_items(self, value: Any, schema: dict[str, Any], base: str) -> Check:
        if "prefixItems" in schema:
            raise Unsupported("prefixItems")
        sub = self.compile(value, base)

        def check(v: Any) -> bool:
            if not isinstance(v, list):
                return True
            for item in v:
                if not sub(item):
                    return False
            return True

        return check

    def _kw_minItems(self, value: int, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, list) or len(v) >= value

    def _kw_maxItems(self, value: int, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, list) or len(v) <= value

    def _kw_uniqueItems(self, value: bool, schema: dict[str, Any], base: str) -> Check:
        if not value:
            return lambda v: True
        return lambda v: not isinstance(v, list) or all(not _json_equal(v[i], v[j]) for i in range(len(v)) for j in range(i + 1, len(v)))

    def _kw_minProperties(self, value: int, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, dict) or len(v) >= value

    def _kw_pattern(self, value: str, schema: dict[str, Any], base: str) -> Check:
        search = re.compile(value).search
        return lambda v: not isinstance(v, str) or search(v) is not None

    def _kw_format(self, value: str, schema: dict[str, Any], base: str) -> Check:
        test = _FORMATS.get(value)
        if test is None:
            return lambda v: True  # an annotation only, as in the jsonschema validator we configure
        return lambda v: not isinstance(v, str) or test(v)

    def _kw_minLength(self, value: int, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, str) or len(v) >= value

    def _kw_maxLength(self, value: int, schema: dict[str, Any], base: str) -> Check:
        return lambda v: not isinstance(v, str) or len(v) <= value

    def _number(self, compare: Callable[[Any], bool]) -> Check:
        return lambda v: isinstance(v, bool) or not isinstance(v, (int, float)) or compare(v)

    def _kw_minimum(self, value: float, schema: dict[str, Any], base: str) -> Check:
        return self._number(lambda v: v >= value)

    def _kw_maximum(self, value: float, schema: dict[str, Any], base: str) -> Check:
        return self._number(lambda v: v <= value)

    def _kw_exclusiveMinimum(self, value: float, schema: dict[str, Any], base: str) -> Check:
        return self._number(lambda v: v > value)

    def _kw_exclusiveMaximum(self, value: float, schema: dict[str, Any], base: str) -> Check:
        return self._number(lambda v: v < value)

    def _kw_allOf(self, value: list[Any], schema: dict[str, Any], base: str) -> Check:
        subs = [self.compile(s, base) for s in value]
        return lambda v: all(s(v) for s in subs)

    def _kw_anyOf(self, value: list[Any], schema: dict[str, Any], base: str) -> Check:
        subs = [self.compile(s, base) for s in value]
        return lambda v: any(s(v) for s in subs)

    def _kw_oneOf(self, value: list[Any], schema: dict[str, Any], base: str) -> Check:
        subs = [self.compile(s, base) for s in value]
        return lambda v: sum(1 for s in subs if s(v)) == 1

    def _kw_not(self, value: Any, schema: dict[str, Any], base: str) -> Check:
        sub = self.compile(value, base)
        return lambda v: not sub(v)

    def _kw_if(self, value: Any, schema: dict[str, Any], base: str) -> Check:
        condition = self.compile(value, base)
        then = self.compile(schema.get("then", True), base)
        otherwise = self.compile(schema.get("else", True), base)
        return lambda v: then(v) if condition(v) else otherwise(v)


def _collect_resources(schema: Any, into: dict[str, dict[str, Any]]) -> None:
    if isinstance(schema, dict):
        if isinstance(schema.get("$id"), str):
            into[schema["$id"]] = schema
        for value in schema.values():
            _collect_resources(value, into)
    elif isinstance(schema, list):
        for value in schema:
            _collect_resources(value, into)


def compile_schema(schema: dict[str, Any], *others: dict[str, Any]) -> Check:
    """A function answering whether a value is valid against `schema`; raises Unsupported when
    the schema uses a keyword outside the compiled subset."""
    resources: dict[str, dict[str, Any]] = {}
    for document in (*others, schema):
        _collect_resources(document, resources)
    compiler = _Compiler(resources)
    return compiler.compile(schema, schema.get("$id", ""))
