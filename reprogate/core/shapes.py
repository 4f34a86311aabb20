"""Reading a table out of a parsed document whose shape is not yet checked.

A record, a verdict or a cluster file is a tree of dicts from YAML or JSON; a reader that takes
`data["contract"]["envelope"]` must not crash (exit 4) when the file holds a list or a string
there. `table` is the one way to say "the mapping at this key, or an empty one": the type checker
then knows the result is a dict, which `x.get(k) if isinstance(x.get(k), dict) else {}` (two
lookups) never told it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def table(parent: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The dict at `key` (the same object, so a caller may change it), or a new empty one when
    the key is absent or holds anything else."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def rows(parent: Mapping[str, Any], key: str) -> list[Any]:
    """The list at `key` (the same object), or a new empty one when absent or anything else."""
    value = parent.get(key)
    return value if isinstance(value, list) else []
