"""TOML reading on every supported Python (tomllib from 3.11, tomli before)."""

from __future__ import annotations

import sys
from typing import Any

from reprogate.lockfiles.base import LockFileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def load(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LockFileError(f"TOML: {exc}") from None
