"""Lock and requirement files: one parser module per format, one registry.

Each module exposes PATTERNS (file-name globs it recognises), FORMAT (the name written in records)
and parse(text) -> list[Locked]. Adding a format is one module and one line in FORMATS. capture
uses the parsed pins to find what was installed at job start that no lock file pins; detect uses
them to report per-package changes between two revisions.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Locked:
    """One pinned package as a lock file states it."""

    name: str  # PEP 503-normalised
    version: str | None  # None where the file constrains without pinning
    hashes: frozenset[str] = field(default_factory=frozenset)
    group: str = ""  # dependency group or section (dev, docs, pip-in-conda ...); "" for main
    manager: str = "pip"  # pip or conda


class LockFileError(ValueError):
    """A lock file that cannot be parsed; the message says where."""


def normalize(name: str) -> str:
    """PEP 503 name normalisation: `Foo.Bar_baz` and `foo-bar-baz` are one package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _formats() -> list[ModuleType]:
    from reprogate.lockfiles import conda_env, conda_lock, pipfile, poetry, requirements, uv

    return [requirements, uv, poetry, pipfile, conda_env, conda_lock]


def format_for(path: str | Path) -> ModuleType | None:
    """The parser module for a file name, or None if no format claims it."""
    name = Path(path).name
    for module in _formats():
        if any(fnmatch.fnmatch(name, pattern) for pattern in module.PATTERNS):
            return module
    return None


def all_patterns() -> list[str]:
    return [pattern for module in _formats() for pattern in module.PATTERNS]


def parse_file(path: str | Path, text: str | None = None) -> list[Locked]:
    module = format_for(path)
    if module is None:
        raise LockFileError(f"{path}: not a known lock or requirements file")
    return module.parse(Path(path).read_text(encoding="utf-8") if text is None else text)


def load_yaml(text: str, name: str) -> object:
    """YAML lock files are read with reprogate's safe loader; errors become LockFileError."""
    from reprogate.core.documents import DocumentError, load_text

    try:
        return load_text(text, name).data
    except DocumentError as exc:
        raise LockFileError(exc.diagnostics[0].message) from None
