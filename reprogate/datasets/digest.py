"""The one digest a manifest's three forms share, computed with its shards arriving one at a time.

The digest a record pins is canonical-v1 over the manifest as data (every field but `digest`),
whatever the form: `ManifestDigest` computes it incrementally, feeding shards one at a time
between the fields that sort before and after "shards", so the bytes hashed are exactly those
canonical_bytes would produce for the whole manifest, and a build or a JSON Lines manifest of a
million shards never holds them all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from reprogate.core.canonical import CANONICAL_PREFIX, CanonicalError, canonical_bytes

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


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
