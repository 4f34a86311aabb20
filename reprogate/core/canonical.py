"""The one canonical form reprogate hashes structured data in, and the digest strings it writes.

A configuration hash must not change when someone re-indents a YAML file, reorders its keys, or
upgrades reprogate or PyYAML. So structured data is hashed in a fixed, versioned serialization:

  canonical-v1 = JSON text of the data (as documents.py builds it: YAML 1.2 core scalars),
                 object keys sorted by Unicode code point, no insignificant whitespace
                 (separators "," and ":"), non-ASCII characters written as themselves, encoded
                 as UTF-8; integers in decimal, floats as Python's shortest round-trip repr,
                 NaN and infinities rejected (JSON has no spelling for them).

A digest of that form is written `canonical-v1:sha256:<64 hex>`, so a later v2 can coexist and
old records keep verifying. Raw file bytes are hashed plainly and written `sha256:<64 hex>`, the
OCI convention. Should the canonical form ever need to change, add v2 here; never edit v1.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from pathlib import Path
from typing import Any

CANONICAL_VERSION = "canonical-v1"
CANONICAL_PREFIX = f"{CANONICAL_VERSION}:sha256:"
BYTES_PREFIX = "sha256:"
_CHUNK = 1024 * 1024


class CanonicalError(ValueError):
    """Data that has no canonical form (NaN, infinities, non-string keys, foreign types)."""


def _check(value: Any, where: str = "$") -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise CanonicalError(f"{where}: {value!r} has no canonical JSON form")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{where}: key {key!r} is not a string")
            _check(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, f"{where}[{i}]")
    elif value is not None and not isinstance(value, (str, int, float, bool)):
        raise CanonicalError(f"{where}: {type(value).__name__} has no canonical JSON form")


def canonical_bytes(data: Any) -> bytes:
    """Serialize `data` in canonical-v1."""
    _check(data)
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def canonical_digest(data: Any) -> str:
    """`canonical-v1:sha256:<hex>` of `data`."""
    return CANONICAL_PREFIX + hashlib.sha256(canonical_bytes(data)).hexdigest()


def stream_digest(stream: io.BufferedIOBase) -> str:
    """`sha256:<hex>` of a stream, read in chunks so memory does not grow with the file."""
    h = hashlib.sha256()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    while True:
        n = stream.readinto(buf)
        if not n:
            break
        h.update(view[:n])
    return BYTES_PREFIX + h.hexdigest()


def file_digest(path: str | Path) -> str:
    """`sha256:<hex>` of a file's bytes."""
    with open(path, "rb") as fh:
        return stream_digest(fh)
