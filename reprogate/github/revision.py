"""Reading a repository at a revision, from git objects: what the gate trusts and what it judges.

The gate's own settings (.reprogate.yaml: labels, workflow, ref, reference records) must come from
the base revision, which only people with write access changed; a pull request that edits them
must not decide its own verdict with the edit. Everything here reads objects (`git show`,
`git ls-tree`, `git cat-file`), so nothing from the pull request is executed, and a
fork's commit can be judged in a privileged job that never checks it out. The configuration at a
revision (`config_location`, `config_at`) is read in `detect.git`, since `detect` judges a diff
by the base's configuration too; it is named here as well, with the rest the gate reads.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import IO

from reprogate.core.errors import UsageError
from reprogate.core.git import open_git
from reprogate.detect.git import DetectError, config_at, config_location, files_at, git_output

MAX_TREE_BYTES = 2 * 1024 * 1024 * 1024  # a head tree larger than this is not materialized


def has_commit(repo: Path, sha: str) -> bool:
    try:
        git_output(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except DetectError:
        return False
    return True


def merge_base(top: Path, base: str, head: str) -> str:
    """Where the head branched off: the diff then holds the pull request's changes only, not
    changes made on the base branch since."""
    try:
        return git_output(top, "merge-base", base, head).decode().strip() or base
    except DetectError:  # unrelated histories or a shallow clone: compare with the base itself
        return base


def materialize(top: Path, rev: str, dest: Path, limit: int = MAX_TREE_BYTES) -> Path:
    """Write the tree of `rev` into `dest` as git stores it, for checks that read files on disk.

    Read from the objects themselves (`ls-tree` for names, modes and sizes, then one streaming
    `cat-file --batch`), never through `git archive`: that applies the revision's own
    `.gitattributes`, so a pull request could hide files from the check (`export-ignore`) or
    rewrite them (`export-subst`). The sizes are added up before anything is read, so a tree over
    `limit` costs nothing. Links that would leave `dest` and submodules are left out (checks then
    report the file missing); no hook, filter or checkout runs."""
    entries = []
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
        for mode, oid, path in entries:
            git.stdin.write(oid.encode() + b"\n")
            git.stdin.flush()
            header = git.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise DetectError(f"git cat-file: {oid} of {path} is not a blob")
            _write_entry(root, path, mode, git.stdout, int(header[2]))
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


__all__ = ["config_at", "config_location", "files_at", "has_commit", "materialize"]
