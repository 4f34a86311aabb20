"""What every lock-file format shares: the Locked pin, the format protocol, errors, and the YAML and TOML readers."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

from reprogate.core.documents import DocumentError, load_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


@dataclass(frozen=True)
class Locked:
    """One pinned package as a lock file states it."""

    name: str  # PEP 503-normalised
    version: str | None  # None where the file constrains without pinning
    hashes: frozenset[str] = field(default_factory=frozenset)
    group: str = ""  # dependency group or section (dev, docs, pip-in-conda ...); "" for main
    manager: str = "pip"  # pip or conda
    requirement: str = ""  # the whole requirement where the file states one (specifier, extras, marker, URL), normalised


class LockFileError(ValueError):
    """A lock file that cannot be parsed; the message says where."""


def normalize(name: str) -> str:
    """PEP 503 name normalisation: `Foo.Bar_baz` and `foo-bar-baz` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


class LockFormat(Protocol):
    """A lock or requirements file format: the names it claims, its name in records, a parser."""

    PATTERNS: tuple[str, ...] | list[str]
    FORMAT: str

    def parse(self, text: str) -> list[Locked]: ...


def load_yaml(text: str, name: str) -> object:
    """YAML lock files are read with reprogate's safe loader; errors become LockFileError."""

    try:
        return load_text(text, name).data
    except DocumentError as exc:
        raise LockFileError(exc.diagnostics[0].message) from None


def load_toml(text: str) -> dict[str, Any]:
    """TOML lock files (uv.lock, poetry.lock, pyproject.toml) on every supported Python: tomllib
    from 3.11, tomli before; errors become LockFileError."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LockFileError(f"TOML: {exc}") from None
