"""The two git calls detect makes, whatever the size of the diff."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from reprogate.core.errors import UsageError


class DetectError(UsageError):
    """A revision that does not exist, or a folder that is not a repository; says what to do (exit 2)."""


@dataclass(frozen=True)
class FileChange:
    status: str  # A, M, D, R, C, T
    path: str
    old_path: str | None = None


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise DetectError("git is not installed") from None
    if done.returncode != 0:
        raise DetectError(done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return done.stdout


def toplevel(repo: Path) -> Path:
    try:
        return Path(_git(repo, "rev-parse", "--show-toplevel").decode().strip())
    except DetectError:
        raise DetectError(f"{repo} is not inside a git repository; pass --repo, or --files-from with a pull request's file list") from None


def resolve(repo: Path, ref: str) -> str:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except DetectError:
        shallow = (repo / ".git" / "shallow").exists()
        hint = "this is a shallow clone: check out with `fetch-depth: 0`, or `git fetch origin <base>` first" if shallow else f"fetch it first (git fetch origin {ref})"
        raise DetectError(f"revision {ref!r} does not exist in {repo}; {hint}") from None


def changed_files(repo: Path, base: str, head: str) -> list[FileChange]:
    """Every file that differs between the revisions, renames detected (one git call)."""
    out = _git(repo, "diff", "--name-status", "-z", "-M", "--no-color", base, head).decode("utf-8", "replace")
    fields = out.split("\0")
    changes, i = [], 0
    while i < len(fields) - 1:
        status = fields[i]
        if not status:
            i += 1
            continue
        if status[0] in "RC":
            changes.append(FileChange(status[0], fields[i + 2], fields[i + 1]))
            i += 3
        else:
            changes.append(FileChange(status[0], fields[i + 1]))
            i += 2
    return changes


def read_blobs(repo: Path, specs: list[str]) -> dict[str, bytes | None]:
    """Contents of `rev:path` specs (None where missing), in one `git cat-file --batch`."""
    if not specs:
        return {}
    out = _git(repo, "cat-file", "--batch", stdin=("\n".join(specs) + "\n").encode())
    found: dict[str, bytes | None] = {}
    pos = 0
    for spec in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode(errors="replace").split()
        pos = end + 1
        if len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
            found[spec] = None
            continue
        size = int(header[2])
        found[spec] = out[pos : pos + size]
        pos += size + 1
    return found
