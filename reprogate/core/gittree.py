"""The git tree id of a folder, computed from the files themselves.

A record kept in the repository it describes pins its project folder by tree id (a commit would
have to contain the record). This computes the id git would give the folder's current content
(blob = sha1("blob <size>\\0" + bytes); tree entries "<mode> <name>\\0<20-byte id>" sorted with
folders compared as "name/"), so the rebuild can check it in any copy, with or without git and
before anything is committed. Inside a git work tree, files git ignores are left out, as git does.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from reprogate.core.git import GitError, run_git


def _object(kind: bytes, body: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0" + body, usedforsecurity=False).digest()


def _ignored(folder: Path) -> set[str] | None:
    """Paths (relative to `folder`) that git would not track, or None outside a git work tree."""
    try:
        listing = run_git(folder, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", ".", timeout=30).stdout
    except GitError:
        return None
    return {p.rstrip("/") for p in listing.decode("utf-8", "replace").split("\0") if p}


def tree_id(folder: Path) -> str:
    """Hex id of the tree git would record for `folder` (empty folders and ignored files omitted)."""
    ignored = _ignored(folder) or set()

    def build(path: Path, rel: str) -> bytes | None:
        entries: list[tuple[str, bytes]] = []
        for entry in os.scandir(path):
            name = entry.name
            child = f"{rel}{name}"
            if name == ".git" or child in ignored:
                continue
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                entries.append((name, b"120000 " + name.encode() + b"\0" + _object(b"blob", os.readlink(entry.path).encode())))
            elif stat.S_ISDIR(info.st_mode):
                sub = build(Path(entry.path), child + "/")
                if sub is not None:
                    entries.append((name + "/", b"40000 " + name.encode() + b"\0" + sub))
            elif stat.S_ISREG(info.st_mode):
                mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
                entries.append((name, mode + b" " + name.encode() + b"\0" + _object(b"blob", Path(entry.path).read_bytes())))
        if not entries:
            return None
        entries.sort(key=lambda item: item[0].encode())
        return _object(b"tree", b"".join(body for _, body in entries))

    digest = build(folder, "")
    return (digest or _object(b"tree", b"")).hex()


def folder_files(folder: Path) -> dict[str, str]:
    """path (relative, POSIX) -> git blob id, for every file tree_id counts."""
    ignored = _ignored(folder) or set()
    out: dict[str, str] = {}
    for base, dirs, files in os.walk(folder):
        rel_base = os.path.relpath(base, folder)
        prefix = "" if rel_base == "." else rel_base.replace(os.sep, "/") + "/"
        dirs[:] = [d for d in dirs if d != ".git" and f"{prefix}{d}" not in ignored and not os.path.islink(os.path.join(base, d))]
        for name in files + [d for d in os.listdir(base) if os.path.islink(os.path.join(base, d)) and os.path.isdir(os.path.join(base, d))]:
            rel = f"{prefix}{name}"
            if rel in ignored or name == ".git":
                continue
            path = os.path.join(base, name)
            if os.path.islink(path):
                out[rel] = _object(b"blob", os.readlink(path).encode()).hex()
            elif os.path.isfile(path):
                out[rel] = _object(b"blob", Path(path).read_bytes()).hex()
    return out


def recorded_files(repo: Path, tree: str) -> dict[str, str] | None:
    """path -> blob id of a tree object the repository still has (None when git does not)."""
    try:
        # --full-tree: run in a subfolder, ls-tree would list only the part of `tree` under that folder
        listing = run_git(repo, "ls-tree", "-r", "-z", "--full-tree", tree, timeout=60).stdout
    except GitError:
        return None
    out: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3:
            out[path.decode("utf-8", "replace")] = parts[2].decode()
    return out


def changed_paths(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """{"changed": [...], "added": [...], "removed": [...]} between two path -> blob maps."""
    return {
        "changed": sorted(p for p in before.keys() & after.keys() if before[p] != after[p]),
        "added": sorted(after.keys() - before.keys()),
        "removed": sorted(before.keys() - after.keys()),
    }
