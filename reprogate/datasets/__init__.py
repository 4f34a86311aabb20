"""Dataset manifests: their digest (what a record pins), building, verifying and importing them.

The digest covers every field of the manifest except its own `digest` field, in canonical-v1
form, so a manifest can carry its digest and a record can pin the same value. It is the same for
a manifest written as YAML, JSON or JSON Lines (see digest.py).
"""

from __future__ import annotations

from typing import Any

from reprogate.core.canonical import canonical_digest
from reprogate.datasets.manifests import digest_of


def manifest_digest(manifest: dict[str, Any]) -> str:
    """canonical-v1 digest of a dataset manifest, excluding its own `digest` field.

    A JSON Lines manifest loaded with manifests.load_manifest has its shards read lazily; they are
    streamed through the digest rather than loaded.
    """
    if type(manifest.get("shards")) not in (list, type(None)):
        return digest_of(manifest)
    return canonical_digest({k: v for k, v in manifest.items() if k != "digest"})
