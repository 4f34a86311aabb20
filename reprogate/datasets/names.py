"""Shard names are data from a manifest, so they are checked before any file is touched.

A manifest must never make reprogate read or hash a file outside the dataset root: no absolute
names, no `..` segments, no backslashes (a Windows separator would hide a `..`), and no symlink
that resolves out of the root.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class UnsafeName(Exception):
    """A shard name that would reach outside the dataset root."""


def is_url(name: str) -> bool:
    return bool(_URL.match(name))


# Names of this shape pass every check below (no `:`, `\\` or NUL, not absolute, no `..`): the
# common case costs one regular-expression match.
PLAIN_NAME = r"[A-Za-z0-9_][A-Za-z0-9_./+=@,-]*"  # also verify_lines' pattern of a whole plain shard line
_PLAIN = re.compile(PLAIN_NAME)
# Whether a name has that shape (a match object or None); with no `..` in it, it is safe as it is.
plain_shape = _PLAIN.fullmatch


def check_name(name: str) -> None:
    """Raise UnsafeName unless `name` is a plain relative POSIX path (or an http(s) URL)."""
    if _PLAIN.fullmatch(name) and ".." not in name:
        return
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \ud800 can spell: no file has such a name
        raise UnsafeName(f"{name!r}: not valid Unicode (a lone surrogate); shard names are UTF-8 paths") from None
    if "://" in name and is_url(name):
        if not name.lower().startswith(("http://", "https://")):
            raise UnsafeName(f"{name!r}: only http(s) URLs may name a shard directly")
        return
    if not name or "\x00" in name:
        raise UnsafeName(f"{name!r}: empty or contains a NUL byte")
    if "\\" in name:
        raise UnsafeName(f"{name!r}: contains a backslash; shard names are POSIX paths")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        raise UnsafeName(f"{name!r}: absolute path; shard names are relative to the dataset root")
    if ".." in name.split("/"):
        raise UnsafeName(f"{name!r}: contains a `..` segment")


class RootGuard:
    """Resolves shard names under one root, refusing any that leave it.

    Checking each name with Path.resolve() costs a dozen system calls per shard; here each
    folder's real path is resolved once and cached, and a shard costs one lstat (plus a full
    resolution only when the shard itself is a symlink).
    """

    def __init__(self, root: Path | str) -> None:
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(root)
        self._prefix = self.root.rstrip("/") + "/"
        self._folders: dict[str, str] = {}  # folder -> its real path, "" when inside the root

    def _inside(self, real: str) -> bool:
        return real == self.real_root or real.startswith(self.real_root.rstrip("/") + "/")

    def path(self, name: str) -> str:
        """The local path of `name`; raises UnsafeName if it would reach outside the root."""
        return self.stat(name)[0]

    @property
    def prefix(self) -> str:
        """The root with a trailing `/`: a checked name's path is this plus the name."""
        return self._prefix

    def folder_checked(self, name: str) -> str:
        """The local path of `name` once the name and its folder are checked: the file itself may
        still be a symlink (hashing.digest_files checks those as it opens them); raises UnsafeName."""
        check_name(name)
        full = self._prefix + name
        folder = full.rpartition("/")[0]
        outside = self._folders.get(folder)
        if outside is None:
            real_folder = os.path.realpath(folder)
            outside = self._folders[folder] = "" if self._inside(real_folder) else real_folder
        if outside:
            raise UnsafeName(f"{name!r}: its folder resolves through a symlink to {outside}, outside the dataset root")
        return full

    def stat(self, name: str) -> tuple[str, os.stat_result | None]:
        """(local path, stat of what it names or None if nothing is there); raises UnsafeName."""
        full = self.folder_checked(name)
        try:
            info = os.lstat(full)
        except OSError:
            return full, None  # missing: the caller reports it
        if stat.S_ISLNK(info.st_mode):
            real = os.path.realpath(full)
            if not self._inside(real):
                raise UnsafeName(f"{name!r}: resolves through a symlink to {real}, outside the dataset root")
            try:
                info = os.stat(full)
            except OSError:
                return full, None
        return full, info


def local_path(root: Path, name: str) -> Path:
    """The file `name` names under `root`, refusing names and symlinks that leave the root."""
    return Path(RootGuard(root).path(name))
