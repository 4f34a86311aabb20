"""Reading a repository at a revision, from git objects: what the gate trusts and what it judges.

The gate's own settings (.reprogate.yaml: labels, workflow, ref, reference records) must come from
the base revision, which only people with write access changed; a pull request that edits them
must not decide its own verdict with the edit. Everything here reads objects (`git show`,
`git ls-tree`, `git cat-file`, `git archive`), so nothing from the pull request is executed, and a
fork's commit can be judged in a privileged job that never checks it out.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from reprogate.core.config import CONFIG_NAME, Config, from_data
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_text
from reprogate.core.errors import UsageError
from reprogate.detect.git import DetectError, read_blobs, toplevel

MAX_TREE_BYTES = 2 * 1024 * 1024 * 1024  # a head tree larger than this is not materialized


def _git(repo: Path, *args: str, timeout: float = 120) -> bytes:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], check=False, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        raise UsageError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        raise DetectError(done.stderr.decode(errors="replace").strip()[:500] or f"git {args[0]} failed")
    return done.stdout


def has_commit(repo: Path, sha: str) -> bool:
    try:
        _git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except DetectError:
        return False
    return True


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
    from reprogate.core.schema_check import schema_diagnostics

    problems = schema_diagnostics(doc, "Config")
    if problems:
        raise DocumentError(problems, ExitCode.FAILED)
    if not isinstance(doc.data, dict):
        raise UsageError(f"{display}: the configuration must be a mapping")
    return from_data(doc.data, where / CONFIG_NAME)


def files_at(top: Path, rev: str) -> list[str]:
    """Every file path in the tree of `rev`."""
    out = _git(top, "ls-tree", "-r", "-z", "--name-only", rev)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def materialize(top: Path, rev: str, dest: Path) -> Path:
    """Write the tree of `rev` into `dest` (files only: no hooks, no filters, no checkout), for
    checks that read files on disk. Links and special files that would leave `dest` are refused
    by the tar data filter."""
    archive = _git(top, "archive", "--format=tar", rev, timeout=600)
    if len(archive) > MAX_TREE_BYTES:
        raise UsageError(f"the tree of {rev[:12]} is larger than {MAX_TREE_BYTES:,} bytes")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            try:
                safe = tarfile.data_filter(member, str(dest))
            except tarfile.FilterError:
                continue  # an absolute or escaping link is left out; checks then report the file missing
            tar.extract(safe, dest, set_attrs=False, filter="fully_trusted")
    return dest


__all__ = ["config_at", "config_location", "files_at", "has_commit", "materialize"]
