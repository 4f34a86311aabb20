"""The code that runs: commit, dirty state with digests, lock files, and unpinned installs."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reprogate.capture.base import CaptureContext, absent
from reprogate.capture.packages import unpinned_installs
from reprogate.core.canonical import file_digest
from reprogate.core.git import GitError, GitResult, run_git
from reprogate.core.redact import strip_credentials
from reprogate.lockfiles import all_patterns, format_for

SECTION = "source"
GIT_TIMEOUT = 30.0


def _git(top: Path, *args: str, sink: Callable[[bytes], object] | None = None) -> GitResult:
    """What git answered, exit status included (a remote that is not set is an answer too); a
    git that is missing or too slow raises GitError, so the layer says so instead of recording
    a clean tree it never saw."""
    return run_git(top, "-c", "core.quotepath=off", *args, timeout=GIT_TIMEOUT, sink=sink, check=False)


def _untracked_digest(top: Path, names: list[str]) -> str:
    """sha256 over (path, NUL, sha256 of content) of each untracked file, in name order."""
    h = hashlib.sha256()
    for name in sorted(names):
        path = top / name
        if path.is_symlink():
            content = f"symlink:{path.readlink()}"
        elif path.is_file():
            content = file_digest(path)
        else:
            content = "unreadable"
        h.update(name.encode() + b"\0" + content.encode() + b"\n")
    return "sha256:" + h.hexdigest()


def capture(ctx: CaptureContext) -> dict[str, Any]:
    try:
        code, out, err = _git(ctx.root, "rev-parse", "--show-toplevel")
    except GitError as exc:
        return absent(exc.message if exc.failure == "missing" else f"not a git repository ({exc.message[:120]})")
    if code != 0:
        return absent(f"not a git repository ({err.strip()[:120]})")
    top = Path(out.decode().strip())
    code, out, err = _git(top, "rev-parse", "HEAD")
    if code != 0:
        return absent("the repository has no commit yet")
    section: dict[str, Any] = {}
    code, remote, _ = _git(top, "remote", "get-url", "origin")
    if code == 0 and remote.strip():
        section["repository"] = strip_credentials(remote.decode().strip())
    section["commit"] = out.decode().strip()
    relative = ctx.root.resolve().relative_to(top.resolve()).as_posix()
    if relative not in ("", "."):
        section["path"] = relative
        code, tree, _ = _git(top, "rev-parse", f"HEAD:{relative}")
        if code == 0:
            section["tree"] = tree.decode().strip()
    left_out = _left_out(top, ctx.exclude)
    _, status, _ = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".", *left_out)
    entries = _status_entries(status.decode("utf-8", "replace"))
    tracked_changes = any(not e.startswith("??") for e in entries)
    untracked = [e[3:] for e in entries if e.startswith("??")]
    section["dirty"] = bool(entries)
    if tracked_changes:
        diff = hashlib.sha256()  # streamed: a dirty tree's binary diff can be larger than memory
        _git(top, "diff", "HEAD", "--binary", "--no-ext-diff", "--no-color", "--", ".", *left_out, sink=diff.update)
        section["diff_digest"] = "sha256:" + diff.hexdigest()
    if untracked:
        section["untracked_digest"] = _untracked_digest(top, untracked)
    lock_files = _lock_files(top, ctx)
    section["lock_files"] = lock_files
    unreadable: list[tuple[Path, str]] = []
    section["job_start_installs"] = unpinned_installs([top / lf["path"] for lf in lock_files], unreadable)
    for path, why in unreadable:  # the section stays: its commit, tree and checksums do not depend on the parse
        ctx.notes.append(f"source: lock file {path.relative_to(top).as_posix()} cannot be parsed ({why}); its pins are not counted in job_start_installs")
    return section


def _left_out(top: Path, exclude: list[Path]) -> list[str]:
    """Pathspecs for the files capture must not count as changes: the record being filled is
    written by capture itself (and by a person), so it would make every capture --into dirty."""
    specs = []
    for path in exclude:
        try:
            rel = path.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            continue  # outside the repository: git never saw it
        specs.append(f":(exclude,literal){rel}")
    return specs


def _status_entries(text: str) -> list[str]:
    """`git status --porcelain=v1 -z` entries; a rename's second (original) path is not an entry."""
    parts = [p for p in text.split("\0") if p]
    entries, skip = [], False
    for part in parts:
        if skip:
            skip = False
            continue
        entries.append(part)
        skip = part[:1] in ("R", "C") or part[1:2] in ("R", "C")
    return entries


# A resolver's input (pip-tools' and uv's requirements.in) names what to resolve, not what gets
# installed: the lock made from it is what a rebuild realizes, so only the lock is pinned.
RESOLVER_INPUTS = (".in",)


def _lock_files(top: Path, ctx: CaptureContext) -> list[dict[str, Any]]:

    _, listing, _ = _git(top, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    patterns = [*all_patterns(), *ctx.lock_globs]
    found = []
    for name in sorted(n for n in listing.decode("utf-8", "replace").split("\0") if n):
        base = name.rsplit("/", 1)[-1]
        if not any(fnmatch.fnmatch(base, p) or fnmatch.fnmatch(name, p) for p in patterns):
            continue
        if base.endswith(RESOLVER_INPUTS):  # watched (a change may call for a re-lock), but what installs is its lock
            continue
        path = top / name
        if not path.is_file():
            continue
        module = format_for(name)
        entry: dict[str, Any] = {"path": name, "checksum": file_digest(path)}
        entry["format"] = module.FORMAT if module else "other"
        found.append(entry)
    return found
