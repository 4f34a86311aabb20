"""Turn the paths, folders and globs a user gives into the files to check.

Written by hand rather than with glob.glob: `**` in the standard library follows symlinked folders
without noticing loops (a link to `..` yields paths until the name is too long). This walker tracks
the real path of every folder on the way down, reports a loop once and goes on, and yields each
real file once however many links lead to it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.core.documents import display_path
from reprogate.core.globs import glob_to_regex

DOCUMENT_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")  # .jsonl: large dataset manifests
# Folders no one keeps records in, and that are large: never descended into when walking.
SKIPPED_FOLDERS = {"node_modules", "__pycache__", "venv", "site-packages"}
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass
class Target:
    path: Path
    explicit: bool  # named directly by the user, not found by walking a folder or glob


@dataclass
class Discovery:
    targets: list[Target] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)


def walk_files(top: Path, problems: list[Diagnostic]) -> list[Path]:
    """Every file below `top`, following symlinked folders but never around a loop."""
    found: list[Path] = []

    def visit(folder: Path, ancestors: frozenset[str], seen: set[str]) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Diagnostic(display_path(folder), f"cannot list folder: {exc.strerror}", "unreadable-folder", Severity.WARNING))
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name.startswith(".") or entry.name in SKIPPED_FOLDERS:
                    continue
                real = os.path.realpath(path)
                if real in ancestors:
                    problems.append(
                        Diagnostic(
                            display_path(path),
                            f"symlink loop: {display_path(path)} leads back to {display_path(Path(real))}; not followed",
                            "symlink-loop",
                            Severity.WARNING,
                        )
                    )
                    continue
                if real in seen:
                    continue  # a second link to a folder already walked
                seen.add(real)
                visit(path, ancestors | {real}, seen)
            else:
                try:
                    is_file = entry.is_file()
                except OSError as exc:  # a symlink loop (ELOOP), a name too long to follow
                    problems.append(Diagnostic(display_path(path), f"cannot follow: {exc.strerror}; not checked", "unreadable-file", Severity.WARNING))
                    continue
                if is_file:
                    found.append(path)

    real_top = os.path.realpath(top)
    visit(top, frozenset({real_top}), {real_top})
    return found


def _glob(pattern: str, problems: list[Diagnostic]) -> list[Path]:
    parts = Path(pattern).parts
    literal: list[str] = []
    for part in parts:
        if _GLOB_CHARS.search(part):
            break
        literal.append(part)
    base = Path(*literal) if literal else Path(".")
    rest = "/".join(parts[len(literal) :])
    regex = glob_to_regex(rest)
    if not base.is_dir():
        return []
    # As in the shell, wildcards do not match names that start with a dot unless the pattern does.
    dotted = any(part.startswith(".") for part in Path(rest).parts)
    found = []
    for path in walk_files(base, problems):
        relative = path.relative_to(base).as_posix()
        if regex.match(relative) and (dotted or not any(part.startswith(".") for part in relative.split("/"))):
            found.append(path)
    return found


def discover(args: list[str], base: Path | None = None) -> Discovery:
    """Expand CLI arguments. Missing files and globs matching nothing are errors (exit 2): a
    gate that silently validates nothing would pass forever."""
    result = Discovery()
    seen: set[str] = set()

    real_folders: dict[str, str] = {}

    def real_path(path: Path) -> str:
        """os.path.realpath, resolving each folder once: a walk meets thousands of files in a
        few folders, and a full resolution costs a stat per component of every path."""
        if os.path.islink(path):
            return os.path.realpath(path)
        folder, name = os.path.split(os.fspath(path))
        if folder not in real_folders:
            real_folders[folder] = os.path.realpath(folder or ".")
        return os.path.join(real_folders[folder], name)

    def add(path: Path, explicit: bool) -> None:
        real = real_path(path)
        if real not in seen:
            seen.add(real)
            result.targets.append(Target(path, explicit))

    for arg in args:
        full = str(base / arg) if base is not None and not os.path.isabs(arg) else arg
        path = Path(full)
        if _GLOB_CHARS.search(arg) and not path.exists():
            matches = [p for p in _glob(full, result.problems) if p.name.endswith(DOCUMENT_SUFFIXES)]
            if not matches:
                result.problems.append(Diagnostic(arg, f"no file matches {arg!r}", "no-match", hint="check the glob; ** matches any depth"))
            for match in matches:
                add(match, False)
        elif path.is_dir():
            for found in walk_files(path, result.problems):
                if found.name.endswith(DOCUMENT_SUFFIXES):
                    add(found, False)
        elif path.exists() or path.is_symlink():
            add(path, True)
        else:
            result.problems.append(Diagnostic(arg, "no such file or folder", "not-found"))
    return result
