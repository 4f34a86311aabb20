"""Loading a manifest in any of its three forms.

- YAML (`.yaml`, the default) and JSON (`.json`): the whole manifest as one document, one shard
  per line. Fine for thousands of shards; a reader holds all of it in memory.
- JSON Lines (`.jsonl`), for datasets of up to millions of shards (manifest_lines): the header is
  read at load, the shards each time they are iterated, so memory does not grow with the count.

The other concerns of a manifest have modules of their own: the digest all forms share
(datasets/digest.py), writing a manifest (manifest_writer) and checking its shards against the
schema one at a time (shard_checker).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprogate.core.canonical import canonical_digest
from reprogate.core.diagnostics import Location
from reprogate.core.documents import DEFAULT_MAX_BYTES, Document, load_document
from reprogate.datasets.digest import streamed_digest
from reprogate.datasets.manifest_lines import ShardLines, is_stream, read_header


class StreamedManifest(dict[str, Any]):
    """A JSON Lines manifest as data: the header's fields, and `shards` read lazily (ShardLines).

    It is a dict so code that reads fields (`id`, `namespace`, `retention`) works unchanged;
    manifest_digest() and anything iterating `shards` stream the file instead of holding it.
    """


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
