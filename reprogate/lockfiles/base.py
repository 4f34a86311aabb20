"""What every lock-file format shares: the Locked pin, the format protocol, errors, and the YAML and TOML readers."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

from reprogate.core.documents import DocumentError, load_text


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
    """A lock file that cannot be parsed, or one of the wrong shape; the message says where
    (a line, or the field: `package[3].name`)."""


_KINDS: dict[type, str] = {dict: "a table", list: "a list", str: "a string"}


def _found(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return _KINDS.get(type(value), type(value).__name__)


def shaped(value: object, kind: type, where: str) -> Any:
    """`value` if it is a `kind` (dict, list or str), else LockFileError naming the field: a
    well-formed TOML, JSON or YAML file of the wrong shape is a bad lock file, never a KeyError."""
    if not isinstance(value, kind) or isinstance(value, bool):
        raise LockFileError(f"{where}: expected {_KINDS[kind]}, found {_found(value)}")
    return value


def member(table: dict[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    """`table[key]` checked to be a `kind`; `default` when the key is absent (None: required)."""
    if key not in table:
        if default is None:
            raise LockFileError(f"{where}{'.' if where else ''}{key}: missing")
        return default
    return shaped(table[key], kind, f"{where}{'.' if where else ''}{key}")


def tables(value: object, where: str) -> list[dict[str, Any]]:
    """A list of tables (`[[package]]`), each checked."""
    return [shaped(item, dict, f"{where}[{i}]") for i, item in enumerate(shaped(value, list, where))]


def strings(value: object, where: str) -> list[str]:
    """A list of strings (hashes, groups), each checked."""
    return [shaped(item, str, f"{where}[{i}]") for i, item in enumerate(shaped(value, list, where))]


_SEPARATORS = re.compile(r"[-_.]+")


def normalize(name: str) -> str:
    """PEP 503 name normalisation: `Foo.Bar_baz` and `foo-bar-baz` are one package."""
    return _SEPARATORS.sub("-", name).lower()


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
    from 3.11, tomli before; errors become LockFileError. Imported here, where TOML is read: a
    command that reads none (detect of a requirements file) does not pay for its import."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise LockFileError(f"TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise LockFileError("TOML: arrays or inline tables nested too deeply") from None
