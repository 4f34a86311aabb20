"""The git calls detect makes, a fixed number whatever the size of the diff."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from reprogate.core.errors import UsageError
from reprogate.core.git import TIMEOUT, GitError, run_git


class DetectError(UsageError):
    """A revision that does not exist, or a folder that is not a repository; says what to do (exit 2)."""


class FileChange(NamedTuple):  # a tuple: 50,000 of them are made in a large diff
    status: str  # A, M, D, R, C, T
    path: str
    old_path: str | None = None
    old_blob: str | None = None  # object ids from the diff itself: reading by id skips a tree walk per file
    new_blob: str | None = None


def git_output(repo: Path, *args: str, stdin: bytes | None = None, timeout: float = TIMEOUT) -> bytes:
    """stdout of core.git's run_git; any failure is a DetectError (exit 2): what detect and the
    gate ask git is a revision or a repository the user named, so a git that cannot answer it
    is the user's to fix."""
    try:
        return run_git(repo, *args, input=stdin, timeout=timeout).stdout
    except GitError as exc:
        raise DetectError(exc.message) from None


def toplevel(repo: Path) -> Path:
    try:
        return Path(git_output(repo, "rev-parse", "--show-toplevel").decode().strip())
    except DetectError:
        raise DetectError(f"{repo} is not inside a git repository; pass --repo, or --files-from with a pull request's file list") from None


def resolve(repo: Path, ref: str) -> str:
    try:
        return git_output(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except DetectError:
        shallow = (repo / ".git" / "shallow").exists()
        hint = (
            "this is a shallow clone: check out with `fetch-depth: 0`, or `git fetch origin <base>` first"
            if shallow
            else f"fetch it first (git fetch origin {ref})"
        )
        raise DetectError(f"revision {ref!r} does not exist in {repo}; {hint}") from None


_RAW = re.compile(r":\d+ \d+ ([0-9a-f]+) ([0-9a-f]+) (?:([RC])\d*\0([^\0]*)\0([^\0]*)|([A-Z])\d*\0([^\0]*))\0")


def changed_files(repo: Path, base: str, head: str) -> list[FileChange]:
    """Every file that differs between the revisions, renames detected, with the blob ids of
    both sides (one `git diff --raw` call)."""
    out = git_output(repo, "diff", "--raw", "-z", "-M", "--no-abbrev", "--no-color", base, head).decode("utf-8", "replace")
    changes = []
    for old_blob, new_blob, moved, old_path, moved_to, status, path in _RAW.findall(out):
        old_blob = None if old_blob.count("0") == len(old_blob) else old_blob
        new_blob = None if new_blob.count("0") == len(new_blob) else new_blob
        if moved:
            changes.append(FileChange(moved, moved_to, old_path, old_blob, new_blob))
        else:
            changes.append(FileChange(status, path, None, old_blob, new_blob))
    return changes


def files_at(repo: Path, rev: str) -> list[str]:
    """Every file path in the tree of `rev` (one `git ls-tree`)."""
    out = git_output(repo, "ls-tree", "-r", "-z", "--name-only", rev)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def read_blobs(repo: Path, blobs: list[str]) -> dict[str, bytes | None]:
    """Contents of blobs by object id (None where missing), in one `git cat-file --batch`."""
    if not blobs:
        return {}
    out = git_output(repo, "cat-file", "--batch", "--buffer", stdin=("\n".join(blobs) + "\n").encode())
    found: dict[str, bytes | None] = {}
    pos = 0
    for blob in blobs:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode(errors="replace").split()
        pos = end + 1
        if len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
            found[blob] = None
            continue
        size = int(header[2])
        found[blob] = out[pos : pos + size]
        pos += size + 1
    return found
