"""The digests a person writes into a record, computed the same way validate checks them."""

from __future__ import annotations

from pathlib import Path

from reprogate.core.canonical import CanonicalError, canonical_digest, file_digest
from reprogate.datasets import manifest_digest
from reprogate.core.documents import DocumentError, load_document
from reprogate.datasets.manifests import load_manifest


def digest_for(path: Path, canonical: bool = False, manifest: bool = False) -> tuple[str, str]:
    """(digest, "") on success, ("", problem) when the file cannot be digested that way."""
    if not canonical:
        try:
            return file_digest(path), ""
        except OSError as exc:
            return "", f"cannot read: {exc.strerror}"
    try:
        data = load_manifest(path).data if manifest else load_document(path).data
        if manifest:
            if not isinstance(data, dict):
                return "", "a dataset manifest is a mapping"
            return manifest_digest(data), ""  # a JSON Lines manifest is streamed, a line at a time
        return canonical_digest(data), ""
    except DocumentError as exc:
        first = exc.diagnostics[0]
        return "", f"line {first.location.line}, col {first.location.col}: {first.message}"
    except CanonicalError as exc:
        return "", str(exc)
