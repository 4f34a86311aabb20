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

from pathlib import Path

from reprogate.detect.git import MAX_TREE_BYTES, DetectError, config_at, config_location, files_at, git_output, materialize


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


__all__ = ["MAX_TREE_BYTES", "config_at", "config_location", "files_at", "has_commit", "materialize"]
