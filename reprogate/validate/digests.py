"""The digests a person writes into a record, computed the same way validate checks them."""

from __future__ import annotations

import stat
from pathlib import Path

from reprogate.core.canonical import CanonicalError, canonical_digest, file_digest
from reprogate.core.documents import load_document
from reprogate.core.errors import UsageError
from reprogate.datasets import manifest_digest
from reprogate.datasets.manifests import load_manifest


def digest_for(path: Path, canonical: bool = False, manifest: bool = False) -> str:
    """The sha256: digest of the bytes, or the canonical-v1: digest of the parsed document
    (a dataset manifest without its own digest field); UsageError when it cannot be computed.
    Only a regular file is read: a FIFO would wait for a writer and /dev/zero never ends."""
    try:
        info = path.stat()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path}: not a regular file (a FIFO, a device or a folder); digest reads files")
    if not canonical:
        return file_digest(path)
    data = load_manifest(path).data if manifest else load_document(path).data  # a .jsonl manifest streams
    try:
        if manifest:
            if not isinstance(data, dict):
                raise UsageError(f"{path}: a dataset manifest is a mapping")
            return manifest_digest(data)
        return canonical_digest(data)
    except CanonicalError as exc:
        raise UsageError(f"{path}: {exc}") from None
