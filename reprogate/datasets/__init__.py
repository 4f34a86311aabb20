"""Dataset manifests: their digest (what a record pins), and later building and verifying them.

The digest covers every field of the manifest except its own `digest` field, in canonical-v1
form, so a manifest can carry its digest and a record can pin the same value.
"""

from __future__ import annotations

from typing import Any

from reprogate.core.canonical import canonical_digest


def manifest_digest(manifest: dict[str, Any]) -> str:
    """canonical-v1 digest of a dataset manifest, excluding its own `digest` field."""
    return canonical_digest({k: v for k, v in manifest.items() if k != "digest"})
