"""Lock and requirement files: one parser module per format, one registry.

Each module exposes PATTERNS (file-name globs it recognises; a glob with a "/" is matched against
the whole path, so `requirements/*.txt` claims a folder of requirement files), FORMAT (the name
written in records) and parse(text) -> list[Locked]. Adding a format is one module and one line in FORMATS below. capture
uses the parsed pins to find what was installed at job start that no lock file pins; detect uses
them to report per-package changes between two revisions.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from pathlib import Path

from reprogate.lockfiles import conda_env, conda_lock, pipfile, poetry, requirements, uv
from reprogate.lockfiles.base import Locked, LockFileError, LockFormat, load_toml, load_yaml, normalize, shaped

__all__ = ["FORMATS", "LockFileError", "LockFormat", "Locked", "all_patterns", "format_for", "load_toml", "load_yaml", "normalize", "parse_file", "shaped"]


# Every format, by the name records give it; the order is the order files are matched in.
FORMATS: dict[str, LockFormat] = {module.FORMAT: module for module in (requirements, uv, poetry, pipfile, conda_env, conda_lock)}


def _formats() -> list[LockFormat]:
    return list(FORMATS.values())


@functools.lru_cache(maxsize=1)
def _matchers() -> tuple[list[LockFormat], re.Pattern[str], re.Pattern[str]]:
    """Every format's name globs in one expression and its path globs in another, one named
    group per format: detect asks about every changed file, so 50,000 paths must not mean
    50,000 x globs fnmatch calls."""
    modules = _formats()

    def compiled(by_path: bool) -> re.Pattern[str]:
        groups = []
        for i, module in enumerate(modules):
            globs = [g.lower() for g in module.PATTERNS if ("/" in g) == by_path]
            if globs:
                groups.append(f"(?P<m{i}>" + "|".join(fnmatch.translate(g) for g in globs) + ")")
        return re.compile("|".join(groups) or "(?!)")

    return modules, compiled(False), compiled(True)


@functools.lru_cache(maxsize=65536)
def format_for(path: str | Path) -> LockFormat | None:
    """The parser module for a file (matched case-insensitively on its name, or on its path for
    globs that name a folder), or None if no format claims it."""
    text = str(path).replace("\\", "/").lower()
    modules, by_name, by_path = _matchers()
    match = by_name.match(text.rsplit("/", 1)[-1]) or by_path.match(text)
    return modules[int(match.lastgroup[1:])] if match and match.lastgroup else None


def all_patterns() -> list[str]:
    return [pattern for module in _formats() for pattern in module.PATTERNS]


def parse_file(path: str | Path, text: str | None = None) -> list[Locked]:
    module = format_for(path)
    if module is None:
        raise LockFileError(f"{path}: not a known lock or requirements file")
    return module.parse(Path(path).read_text(encoding="utf-8") if text is None else text)
