"""Which files under a dataset root are shards: a deterministic walk with include/exclude globs.

A glob with a `/` matches the whole relative path (`train/**/*.bin`); one without matches the
file name at any depth (`*.tmp`), as in .gitignore. The walk follows symlinked folders that stay
inside the root, never around a loop, and reports links that leave the root instead of following
them, so a manifest never names bytes that verify would refuse to read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from reprogate.validate.discovery import glob_to_regex

DEFAULT_EXCLUDES = (".git/**",)


def _matcher(patterns: list[str]) -> list[tuple[bool, re.Pattern[str]]]:
    return [("/" in p, glob_to_regex(p)) for p in patterns]


def _matches(rel: str, matchers: list[tuple[bool, re.Pattern[str]]]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(rx.match(rel if whole else name) for whole, rx in matchers)


@dataclass
class Selection:
    files: list[str] = field(default_factory=list)  # POSIX names relative to the root, sorted
    sizes: list[int] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # symlinks that leave the root
    loops: list[str] = field(default_factory=list)


def select(root: Path, include: list[str], exclude: list[str], skip: set[Path] | None = None, sizes: bool = True) -> Selection:
    """Files under `root` chosen by the globs, in code-point order of their names."""
    inc, exc = _matcher(include), _matcher([*DEFAULT_EXCLUDES, *exclude])
    real_root = os.path.realpath(root)
    inside = real_root.rstrip("/") + "/"
    skip_ids = set()
    for path in skip or set():
        try:
            info = os.stat(path)
            skip_ids.add((info.st_dev, info.st_ino))
        except OSError:
            pass
    skip_inodes = {ino for _, ino in skip_ids}
    found: list[tuple[str, int]] = []
    sel = Selection()

    def visit(folder: str, rel: str, ancestors: frozenset[str]) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            name = rel + entry.name
            if entry.is_symlink():
                real = os.path.realpath(entry.path)
                if real != real_root and not real.startswith(inside):
                    if not _matches(name, exc):
                        sel.outside.append(name)
                    continue
            if entry.is_dir():
                real_dir = os.path.realpath(entry.path)
                if real_dir in ancestors:
                    sel.loops.append(name)
                    continue
                visit(entry.path, name + "/", ancestors | {real_dir})
            elif entry.is_file():
                if _matches(name, exc) or (inc and not _matches(name, inc)):
                    continue
                if entry.inode() in skip_inodes:
                    info = entry.stat()
                    if (info.st_dev, info.st_ino) in skip_ids:
                        continue
                found.append((name, entry.stat().st_size if sizes else -1))

    visit(str(root), "", frozenset({real_root}))
    found.sort()
    sel.files = [name for name, _ in found]
    sel.sizes = [size for _, size in found]
    return sel
