"""The git calls detect makes, a fixed number whatever the size of the diff, and the configuration
as a revision has it (detect and the gate judge a diff by the base's `.reprogate.yaml`)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import IO, NamedTuple

from reprogate.core.config import CONFIG_NAME, Config, from_data
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_text
from reprogate.core.errors import UsageError
from reprogate.core.git import TIMEOUT, GitError, open_git, run_git
from reprogate.core.schema_check import schema_diagnostics


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
    # surrogateescape: a file name that is not UTF-8 keeps its bytes (os.fsencode gives them back), not U+FFFD
    out = git_output(repo, "diff", "--raw", "-z", "-M", "--no-abbrev", "--no-color", base, head).decode("utf-8", "surrogateescape")
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
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


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


def config_location(repo: Path, config_path: Path | None) -> tuple[Path, str]:
    """(repository top, path of the configuration relative to it): the given file, or
    `.reprogate.yaml` in the --repo folder. The path is what is read at the base revision."""
    top = toplevel(repo)
    wanted = (config_path if config_path is not None else repo / CONFIG_NAME).resolve()
    try:
        rel = wanted.relative_to(top.resolve()).as_posix()
    except ValueError:
        raise UsageError(f"{wanted}: the configuration must be inside the repository {top}") from None
    return top, rel


def config_at(top: Path, rev: str, rel: str, folder: Path | None = None) -> Config:
    """The configuration as committed at `rev` (every default when the file does not exist there).
    `folder` is where its relative globs start on disk (default: the file's folder in `top`)."""
    where = folder if folder is not None else (top / rel).parent
    blob = read_blobs(top, [f"{rev}:{rel}"]).get(f"{rev}:{rel}")
    if blob is None:
        return Config(folder=where)
    display = f"{rel} at {rev[:12]}"
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{display}: not UTF-8") from None
    doc = load_text(text, display)

    problems = schema_diagnostics(doc, "Config")
    if problems:
        raise DocumentError(problems, ExitCode.FAILED)
    if not isinstance(doc.data, dict):
        raise UsageError(f"{display}: the configuration must be a mapping")
    return from_data(doc.data, where / CONFIG_NAME)


MAX_TREE_BYTES = 2 * 1024 * 1024 * 1024  # a tree larger than this is not materialized


def materialize(top: Path, rev: str, dest: Path, limit: int = MAX_TREE_BYTES) -> Path:
    """Write the tree of `rev` into `dest` as git stores it, for checks that read files on disk.

    Read from the objects themselves (`ls-tree` for names, modes and sizes, then one streaming
    `cat-file --batch`), never through `git archive`: that applies the revision's own
    `.gitattributes`, so a pull request could hide files from the check (`export-ignore`) or
    rewrite them (`export-subst`). The sizes are added up before anything is read, so a tree over
    `limit` costs nothing. Links that would leave `dest` and submodules are left out (checks then
    report the file missing); no hook, filter or checkout runs. `rev` may name a tree (a record's
    `source.tree`): the rebuild writes the base's project tree this way (rebuild/code_origin.py)."""
    entries: list[tuple[str, str, str]] = []
    total = 0
    for line in git_output(top, "ls-tree", "-r", "-z", "-l", "--full-tree", rev, timeout=600).split(b"\0"):
        if not line:
            continue
        meta, _, name = line.partition(b"\t")
        mode, kind, oid, size = meta.split()
        if kind != b"blob":
            continue  # a submodule (commit): nothing of it is in this repository
        path = name.decode("utf-8", "surrogateescape")
        total += int(size)
        if total > limit:
            raise UsageError(f"the tree of {rev[:12]} is larger than {limit:,} bytes; not materialized")
        entries.append((mode.decode(), oid.decode(), path))
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with open_git(top, "cat-file", "--batch", stdin=subprocess.PIPE) as git:
        assert git.stdin is not None and git.stdout is not None
        for file_mode, blob, path in entries:
            git.stdin.write(blob.encode() + b"\n")
            git.stdin.flush()
            header = git.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise DetectError(f"git cat-file: {blob} of {path} is not a blob")
            _write_entry(root, path, file_mode, git.stdout, int(header[2]))
            git.stdout.read(1)  # the newline after each object
        git.stdin.close()
    return dest


def _write_entry(root: Path, path: str, mode: str, stream: IO[bytes], size: int) -> None:
    target = root / path
    inside = root in target.parents and ".." not in Path(path).parts
    if inside:
        target.parent.mkdir(parents=True, exist_ok=True)
    if mode == "120000":  # a symbolic link: its blob is the target
        link = stream.read(size).decode("utf-8", "surrogateescape")
        if inside and root in (target.parent / link).resolve().parents:
            target.symlink_to(link)
        return
    with open(target if inside else os.devnull, "wb") as fh:
        left = size
        while left:
            chunk = stream.read(min(left, 1 << 20))
            if not chunk:
                raise DetectError(f"git cat-file ended inside {path}")
            fh.write(chunk)
            left -= len(chunk)
    if inside and mode == "100755":
        target.chmod(0o755)
