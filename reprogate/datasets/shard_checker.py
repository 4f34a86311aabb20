"""Checking shard objects against the manifest schema one at a time (JSON Lines shards, which are
never loaded as one document), with findings located on the shard's own line.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Location
from reprogate.core.schema_check import explain as _explain
from reprogate.core.schema_fastpath import compile_schema
from reprogate.core.schemas import load_schema, validator

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

        schema = load_schema("DatasetManifest")
        self._ref = {"$ref": schema["$id"] + SHARD_SCHEMA}
        self._compiled = compile_schema(self._ref, schema)
        self.checksum_form = re.compile(schema["$defs"]["checksum"]["pattern"]).search  # the schema's pattern of a checksum

    def valid(self, shard: dict[str, Any]) -> bool:
        name, size, checksum = shard.get("name"), shard.get("bytes"), shard.get("checksum")
        if len(shard) == 3 and type(name) is str and name and type(size) is int and size >= 0 and type(checksum) is str and self.checksum_form(checksum):
            return True
        return bool(self._compiled(shard))

    def explain(self, display: str, index: int, line: int, text: str, shard: Any) -> list[Diagnostic]:
        """Findings for a shard `valid` refused, located on its line, fields named shards[index]."""

        doc = _LineDoc(display, line, text)
        found: list[Diagnostic] = []
        for error in validator("DatasetManifest").evolve(schema=self._ref).iter_errors(shard):
            for finding in _explain(doc, error):
                finding.field = f"shards[{index}]" + (f".{finding.field}" if finding.field else "")
                found.append(finding)
        return found


@functools.lru_cache(maxsize=1)
def shard_checker() -> ShardChecker:
    """The one ShardChecker a process needs (compiling the schema takes milliseconds)."""
    return ShardChecker()
