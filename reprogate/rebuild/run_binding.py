"""What ties a verdict to the run that made it: a fresh output folder and the dispatch's nonce.

A verdict is worth something only if it came out of this rebuild. Two things make that checkable:

- the rebuild writes into a folder it made itself, outside the checked-out tree (default a new
  folder under `$RUNNER_TEMP`, else the system's temporary folder). A folder given with `--out`
  must be empty or absent, so a `verdict.json` committed by a pull request, or left by an earlier
  run that then failed half-way, can never be taken for this run's; nothing in it is removed;
- the verdict carries the nonce of the gate's dispatch and the id of the workflow run, which the
  status job compares with what it was told itself (github/binding.py).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.errors import UsageError
from reprogate.core.git import GitError, run_git

NONCE = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
_RUN_ID = re.compile(r"^[0-9]{1,20}$")
_ATTEMPT = re.compile(r"^[0-9]{1,6}$")


def check_nonce(nonce: str | None, option: str = "--nonce") -> str | None:
    if nonce is None or nonce == "":
        return None
    if not NONCE.match(nonce):
        raise UsageError(f"{option}: a nonce is 16 to 128 characters of A-Z, a-z, 0-9, '-' and '_'", hint="pass the nonce input the gate's dispatch carried")
    return nonce


@dataclass(frozen=True)
class RunBinding:
    """The run a verdict belongs to, as the rebuild knew it (written into `verdict.run`)."""

    nonce: str | None = None
    run_id: str | None = None
    attempt: str | None = None
    repository: str | None = None
    base: str | None = None  # the base commit the dispatch judged against, where the verdict says (the schema's run.base)

    @staticmethod
    def from_json(data: Mapping[str, Any] | None) -> RunBinding:
        """`verdict.run` of a verdict file (which the schema checked; None: a verdict without one)."""
        found = data or {}
        return RunBinding(found.get("nonce"), found.get("id"), found.get("attempt"), found.get("repository"), found.get("base"))

    @classmethod
    def from_environment(cls, nonce: str | None) -> RunBinding:
        """The nonce as given; the run as the runner names it (values of another shape are left out)."""
        run_id, attempt = os.environ.get("GITHUB_RUN_ID", ""), os.environ.get("GITHUB_RUN_ATTEMPT", "")
        repository = os.environ.get("GITHUB_REPOSITORY", "")
        return cls(
            check_nonce(nonce),
            run_id if _RUN_ID.match(run_id) else None,
            attempt if _ATTEMPT.match(attempt) else None,
            repository if 0 < len(repository) <= 200 and "/" in repository else None,
        )

    def as_json(self) -> dict[str, str]:
        pairs = {"nonce": self.nonce, "id": self.run_id, "attempt": self.attempt, "repository": self.repository, "base": self.base}
        return {key: value for key, value in pairs.items() if value is not None}


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _work_tree(folder: Path) -> Path:
    """The git work tree `folder` lies in (all of it is checked out), else the folder itself."""
    try:
        top = run_git(folder, "rev-parse", "--show-toplevel", timeout=30).stdout.decode("utf-8", "surrogateescape").strip()
    except GitError:
        return folder.resolve()
    return Path(top).resolve() if top else folder.resolve()


def fresh_output(requested: Path | None, checkout: Path, dry_run: bool = False) -> Path:
    """The folder this rebuild writes its verdict, report and rebuild record into.

    `checkout` is the repository the record lives in; `$GITHUB_WORKSPACE` counts as checked out
    too. A dry run writes no verdict, so its manifests may go anywhere empty."""
    if requested is None:
        parent = os.environ.get("RUNNER_TEMP") or None
        if parent is not None and not Path(parent).is_dir():
            parent = None
        return Path(tempfile.mkdtemp(prefix="reprogate-rebuild-", dir=parent)).resolve()
    target = Path(os.path.abspath(requested))
    if target.is_symlink():
        raise UsageError(f"--out {requested}: a symbolic link; give a folder that does not exist yet (or an empty one)")
    if target.exists():
        if not target.is_dir():
            raise UsageError(f"--out {requested}: not a folder")
        if any(target.iterdir()):
            raise UsageError(
                f"--out {requested} is not empty: a rebuild writes into a fresh folder, so no verdict in it can be an earlier run's",
                hint="leave --out out (a new folder under $RUNNER_TEMP or the temporary folder is made), or name one that does not exist yet",
            )
    resolved = target.resolve()
    if not dry_run:
        workspace = os.environ.get("GITHUB_WORKSPACE")
        for tree in (_work_tree(checkout), *([Path(workspace).resolve()] if workspace else [])):
            if _inside(resolved, tree):
                raise UsageError(
                    f"--out {requested} lies inside the checked-out tree {tree}: the code under test could have put a verdict there",
                    hint="leave --out out (a new folder under $RUNNER_TEMP is made) or name a folder outside the checkout",
                )
    target.mkdir(parents=True, exist_ok=True)
    return resolved


__all__ = ["NONCE", "RunBinding", "check_nonce", "fresh_output"]
