"""JSON-shaped values made immutable, and back: for the open parts of a typed value read from a
file (a verdict's environment facts, a test's stated figures).

A frozen dataclass holding a dict is only frozen on the outside: whoever reads it can still change
what it says. `freeze` turns a JSON-shaped value into one nobody can change (objects into
read-only mappings with string keys, as JSON has them; arrays into tuples), so a value built in
memory and the same value read back from its JSON compare equal; `thaw` gives the JSON back, in
the order it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any


def freeze(value: Any) -> Any:
    """`value` with every mapping read-only (its keys as JSON writes them: strings) and every list a tuple."""
    if isinstance(value, Mapping):
        return MappingProxyType({str(key): freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`value` frozen (an empty mapping for None)."""
    found: Mapping[str, Any] = freeze(value or {})
    return found


def thaw(value: Any) -> Any:
    """The JSON value `freeze` was given (up to its keys, now strings, and its tuples, now lists)."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


__all__ = ["freeze", "frozen_mapping", "thaw"]
