"""Which files under a dataset root are shards: a deterministic walk with include/exclude globs.

A glob with a `/` matches the whole relative path (`train/**/*.bin`); one without matches the
file name at any depth (`*.tmp`), as in .gitignore. The walk follows symlinked folders that stay
inside the root, never around a loop, and reports links that leave the root instead of following
them, so a manifest never names bytes that verify would refuse to read.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reprogate.core.globs import glob_to_regex

DEFAULT_EXCLUDES = (".git/**", "*.tmp")  # a leftover temporary (a killed download, an atomic write) is never a shard


def _matcher(patterns: list[str]) -> list[tuple[bool, re.Pattern[str]]]:
    return [("/" in p, glob_to_regex(p)) for p in patterns]


def _matches(rel: str, matchers: list[tuple[bool, re.Pattern[str]]]) -> bool:
    if not matchers:
        return False
    name = rel.rsplit("/", 1)[-1]
    return any(rx.match(rel if whole else name) for whole, rx in matchers)


def _is_literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[")


class Walk:
    """Files under `root` chosen by the globs, as (name, size, path) in code-point order of names.

    The order is produced while walking, never by sorting the whole list: each folder's entries
    are sorted with a folder's name taken as `name/`, which puts every file below it exactly where
    a sort of full paths would. So a dataset of a million files is walked holding one folder's
    names at a time. `outside` and `loops` fill in as the walk goes. `size` is -1 when sizes are
    not asked for (no stat per file) or the file vanished before it could be stat'ed.
    """

    def __init__(
        self, root: Path, include: list[str], exclude: list[str], skip: set[Path] | None = None, sizes: bool = True, temporaries_of: Path | None = None
    ) -> None:
        self.root = str(root).rstrip("/") or "/"
        # the output's own atomic-write temporaries (`.NAME.*.tmp` beside it: this run's, and any a
        # killed run left) are never data
        self.temporaries = (os.path.realpath(temporaries_of.parent), f".{temporaries_of.name}.") if temporaries_of is not None else None
        self.sizes = sizes
        excludes = [*DEFAULT_EXCLUDES, *exclude]
        # A folder matched by the part of an exclude before a final `/**` holds only excluded
        # files: it is not entered. When that part is a plain path, nothing else can match the
        # pattern, so files are not tested against it at all (`.git/**`, the default).
        folders = [p[:-3] for p in excludes if p.endswith("/**") and len(p) > 3]
        self.pruned = [glob_to_regex(p) for p in folders]
        self.include = _matcher(include)
        self.exclude_all = _matcher(excludes)
        tested = [p for p in excludes if not (p.endswith("/**") and len(p) > 3 and _is_literal(p[:-3]))]
        # An exclude without `/` is of file names (`*.tmp`, the default): one pattern of them all,
        # applied to a folder's listing at once, so that a folder with no other glob to test stays
        # on the fast path that takes its files as they are.
        names = [p for p in tested if "/" not in p]
        self.name_exclude = re.compile("|".join(f"(?:{glob_to_regex(p).pattern})" for p in names)) if names else None
        self.exclude = _matcher([p for p in tested if "/" in p])
        self.real_root = os.path.realpath(root)
        self.inside = self.real_root.rstrip("/") + "/"
        self.skip_ids: set[tuple[int, int]] = set()
        for path in skip or set():
            try:
                info = os.stat(path)
                self.skip_ids.add((info.st_dev, info.st_ino))
            except OSError:
                pass
        self.skip_inodes = {ino for _, ino in self.skip_ids}
        self.outside: list[str] = []
        self.loops: list[str] = []

    def __iter__(self) -> Iterator[tuple[str, int, str]]:
        for run in self.runs():
            yield from run

    def runs(self) -> Iterator[list[tuple[str, int, str]]]:
        """The same files in runs: each run the consecutive files of one folder (between its
        subfolders), so a consumer can take a folder's files with C-level list operations."""
        return self._visit(self.root, "", frozenset({self.real_root}), False)

    def name_runs(self) -> Iterator[list[str]]:
        """runs() as names only (what a comparison with a manifest's names needs)."""
        return self._visit(self.root, "", frozenset({self.real_root}), True)

    def _skipped(self, entry: os.DirEntry[str]) -> bool:
        try:
            info = entry.stat()
        except OSError:
            return False
        return (info.st_dev, info.st_ino) in self.skip_ids

    def _list(self, folder: str) -> tuple[list[str], set[str]]:
        """(keys, links) of a folder: file names, folder names with a trailing `/`, and which of
        them are symlinks. Most entries are plain files, told apart by the type the listing
        carries: those are taken by list comprehensions, the rest one by one."""
        with os.scandir(folder) as it:
            entries = list(it)
        skip = self.skip_inodes
        try:
            files = [entry for entry in entries if entry.is_file(follow_symlinks=False)]
        except OSError:  # the type was not in the listing and the entry vanished: one by one
            files = []
        if skip and not skip.isdisjoint(entry.inode() for entry in files):
            files = [entry for entry in files if not self._skipped(entry)]
        keys = [entry.name for entry in files]
        links: set[str] = set()
        if len(files) != len(entries):
            taken = {entry.name for entry in files}
            for entry in entries:
                if entry.name in taken:
                    continue
                try:
                    if entry.is_file(follow_symlinks=False):
                        if not (skip and entry.inode() in skip and self._skipped(entry)):
                            keys.append(entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        keys.append(entry.name + "/")
                    elif entry.is_symlink():
                        links.add(entry.name)
                        keys.append(entry.name + "/" if entry.is_dir() else entry.name)
                except OSError:
                    continue
        if self.name_exclude is not None:
            excluded = self.name_exclude.match
            keys = [key for key in keys if key[-1] == "/" or not excluded(key)]
        if self.temporaries is not None and os.path.realpath(folder) == self.temporaries[0]:
            prefix = self.temporaries[1]
            keys = [key for key in keys if not (key.startswith(prefix) and key.endswith(".tmp"))]
        keys.sort()
        return keys, links

    def _visit(self, folder: str, rel: str, ancestors: frozenset[str], names_only: bool) -> Iterator[list[Any]]:
        keys, links = self._list(folder)
        plain = not (self.exclude or self.include or self.sizes or links)  # every file here is chosen as it is
        prefix = folder + "/"
        run: list[Any] = []
        start = 0  # plain: the files keys[start:i] are the current run
        for i, key in enumerate(keys):
            if key[-1] != "/":
                if not plain:
                    file = self._file(key, prefix, rel, links)
                    if file is not None:
                        run.append(file[0] if names_only else file)
                continue
            if plain:
                run = [rel + k for k in keys[start:i]] if names_only else [(rel + k, -1, prefix + k) for k in keys[start:i]]
                start = i + 1
            if run:
                yield run
                run = []
            name = key[:-1]
            path = prefix + name
            relname = rel + name
            if (name in links and self._leaves(relname, path)) or any(rx.match(relname) for rx in self.pruned):
                continue
            real_dir = os.path.realpath(path)
            if real_dir in ancestors:
                self.loops.append(relname)
                continue
            yield from self._visit(path, relname + "/", ancestors | {real_dir}, names_only)
        if plain:
            run = [rel + k for k in keys[start:]] if names_only else [(rel + k, -1, prefix + k) for k in keys[start:]]
        if run:
            yield run

    def _file(self, key: str, prefix: str, rel: str, links: set[str]) -> tuple[str, int, str] | None:
        """(name, size, path) of a file the globs choose, or None."""
        relname = rel + key
        exclude, include = self.exclude, self.include
        if (exclude and _matches(relname, exclude)) or (include and not _matches(relname, include)):
            return None
        path = prefix + key
        size = -1
        if key in links:
            if self._leaves(relname, path):
                return None
            try:
                info = os.stat(path)
            except OSError:
                return None  # a link to nothing
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in self.skip_ids:
                return None
            size = info.st_size if self.sizes else -1
        elif self.sizes:
            try:
                size = os.stat(path).st_size
            except OSError:
                return None  # vanished since the folder was listed
        return relname, size, path

    def _leaves(self, relname: str, path: str) -> bool:
        """Whether a symlink resolves outside the root (then noted in `outside`, unless excluded)."""
        real = os.path.realpath(path)
        if real == self.real_root or real.startswith(self.inside):
            return False
        if not _matches(relname, self.exclude_all):
            self.outside.append(relname)
        return True
