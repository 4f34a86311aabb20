"""Whose code a rebuild runs, decided once before it starts: the base's, or the pull request's.

A rebuild's evidence is written by the code it runs: its traces, digests and metrics. No sandbox
stops a training script from writing the reference trace's lines as its own (a pull request that
doubles the learning rate and copies the expected trace passes a bitwise contract). So:

- when the pull request changes only environment pins (lock files, the build recipe, the
  image, the configuration the base's contract pins), `--contract-from BASE` runs the **base's**
  project tree — the tree the base's record pins, written from git objects — in the pull
  request's environment: the training code is reviewed code (`base`);
- when the project tree itself differs from the base's (beyond the files the base's record
  names as environment pins), the pull request's own code runs and writes the evidence: the
  claim, the report and the verdict say so, and that the approval of the rebuild is what
  vouches for that code (`pull-request`);
- without a base (a plain `reprogate rebuild`), the record's own code as checked out (`record`).

What the ranks could read of the expected outputs (the reference trace, the records) is kept out
of their view either way (rebuild/sandbox.py). The same decision says whether the rebuild runs
code other than the base's, which needs the sandbox (sandbox.refusal).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from reprogate.core.gittree import changed_paths, folder_files, recorded_files
from reprogate.core.record import read_record
from reprogate.rules.source_tree import owned_paths

Ran = Literal["base", "pull-request", "record"]
ENVIRONMENT_PINS = (("source", "lock_files"), ("source", "build_recipe"), ("container",))  # what a head may change that installs code
# How the code is started: a head that changes these runs code of its own even on the base's tree
# (an entrypoint `python -c ...`, a variable that changes what the code does).
HOW_IT_RUNS = (("job", "entrypoint"), ("job", "workdir"), ("execution", "env"))


@dataclass(frozen=True)
class CodeOrigin:
    """Whose project tree runs, and whether the head pins another environment than the base."""

    ran: Ran
    detail: str  # in words: what differs, or why the base's tree runs
    base_tree: str | None = None  # the base's pinned project tree (ran == "base": the rebuild writes it from git objects)
    base_path: str | None = None  # where the project folder is
    environment_changed: bool = False  # the head pins lock files, a recipe or an image the base does not

    def foreign(self, environment: str) -> str | None:
        """What code other than the base's the rebuild runs, in words (None: only the base's)."""
        if environment == "candidate":
            return "a candidate rebuild runs the pull request's code (its environment as the checkout declares it)"
        if self.ran == "pull-request":
            return f"the rebuild runs the pull request's own project code ({self.detail})"
        if self.environment_changed:
            return "the rebuild installs the environment the pull request's record pins, which differs from the base's"
        return None

    def words(self) -> str:
        """What the claim and the report say of the code that produced the evidence."""
        if self.ran == "base":
            said = f"the evidence came from the base's reviewed project tree {str(self.base_tree)[:12]} (written from git objects), run in this environment"
            if self.environment_changed:
                said += (
                    "; that environment is the pull request's (the packages, image or recipe its record pins) and its code ran with the training "
                    "(a package's `.pth`, an image's entrypoint): the approval of this rebuild is what vouches for it"
                )
            return said
        if self.ran == "pull-request":
            return (
                f"the evidence came from the pull request's own code ({self.detail}): that code wrote the traces, digests and metrics compared, "
                "so a pass shows it reproduces the reference only as far as the code is honest; the approval of this rebuild is what vouches for it"
            )
        return "the evidence came from the record's own code as checked out (no base was named)"

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"ran": self.ran, "detail": self.detail}
        if self.base_tree:
            found["base_tree"] = self.base_tree
        if self.environment_changed:
            found["environment_changed"] = True
        return found


def own_code() -> CodeOrigin:
    """No base named: the record's own code, as checked out."""
    return CodeOrigin("record", "no base named: the record's own code and environment, as checked out")


def decide(root: Path, head: dict[str, Any], base: dict[str, Any] | None, base_rev: str) -> CodeOrigin:
    """Whose code runs when `base` (the record at `base_rev`; None: new at the head) judges `head`."""
    if base is None:
        return CodeOrigin("pull-request", "the record is new at this head: no base code to run", environment_changed=True)
    changed = any(_canonical(_get(head, *pin)) != _canonical(_get(base, *pin)) for pin in ENVIRONMENT_PINS)
    base_path, base_tree = _get(base, "source", "path"), _get(base, "source", "tree")
    head_path = _get(head, "source", "path")
    if not isinstance(base_path, str) or not isinstance(base_tree, str):
        return CodeOrigin("pull-request", f"the record at {base_rev[:12]} pins no project tree", environment_changed=changed)
    started = [".".join(pin) for pin in HOW_IT_RUNS if _canonical(_get(head, *pin)) != _canonical(_get(base, *pin))]
    if started:
        return CodeOrigin("pull-request", f"the record changes how the code is started ({', '.join(started)})", environment_changed=changed)
    if head_path != base_path:
        return CodeOrigin("pull-request", f"the project folder moved from {base_path} to {head_path}", environment_changed=changed)
    before = recorded_files(root, base_tree)
    if before is None:
        return CodeOrigin(
            "pull-request", f"the base's project tree {base_tree[:12]} is not in this repository (fetch the base: fetch-depth 0)", environment_changed=changed
        )
    try:
        after = folder_files(root / base_path)
    except OSError as exc:
        return CodeOrigin("pull-request", f"the project folder cannot be read ({exc.strerror})", environment_changed=changed)
    owners = owned_paths(read_record(base), root, base_path)
    code = sorted(p for paths in changed_paths(before, after).values() for p in paths if p not in owners)
    if code:
        listed = ", ".join(code[:6]) + (" ..." if len(code) > 6 else "")
        return CodeOrigin("pull-request", f"{len(code)} file(s) of {base_path} differ from the base's: {listed}", base_tree, base_path, changed)
    return CodeOrigin("base", f"the project tree {base_tree[:12]} of the base runs: this head changes no code in {base_path}", base_tree, base_path, changed)


def _get(data: Any, *path: str) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


__all__ = ["ENVIRONMENT_PINS", "HOW_IT_RUNS", "CodeOrigin", "Ran", "decide", "own_code"]
