"""The contract that judges a pull request's rebuild is the base's, not the pull request's.

A record holds two kinds of things. Its environment pins (lock files, recipe, image) are what a
pull request may change, and what the rebuild realizes from the checkout. Its contract — level,
steps, tolerances, tensors, metric interval, envelope, seeds, the reference trace and metric
values it is compared with — says what "reproduced" means, and was fixed before any rerun: a
pull request that widens its own interval, raises its tolerance or drops a tensor must not be
judged by its own, looser words. `rebuild --contract-from BASE` takes those sections from the
record as BASE has it; the head's changes to them take effect only through a baseline promotion
(a writer's label, a passing rebuild), whose rebuild is judged by the head's own contract.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.documents import DocumentError, load_text
from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.shapes import table
from reprogate.detect.git import DetectError, read_blobs, resolve, toplevel

CONTRACT_SECTIONS = ("contract", "seeds", "reference")  # what "reproduced" means; fresh seeds are drawn from their digest
JUDGING = (*CONTRACT_SECTIONS, "semantics")  # and the release whose defaults they were written under
# How the environment is rebuilt is the base's to say too: what is in it (lock files, recipe,
# image) comes from the head, but a head that switched to `realizer: current` (or to the 0.1
# semantics whose default that was) would be rebuilt in reprogate's own interpreter, leaving the
# lock file it changed unexercised. The configuration is a reference artifact: a head that
# re-pinned it, or moved it from its file's hash to what the code reports (`hash_of: trace`),
# would choose what its own configuration is checked against.
JUDGING_IN_JOB = ("environment", "config")


@dataclass(frozen=True)
class Judged:
    """The record a rebuild compares against, and what the claim says about where it came from."""

    data: dict[str, Any]
    note: str  # empty when the head's own contract judges
    changed: tuple[str, ...] = ()  # sections the pull request changed (not in effect)
    base: dict[str, Any] | None = None  # the record as the base has it (None: new at this head)


def from_base(record: Path, head: dict[str, Any], rev: str) -> Judged:
    """`head` with its judging sections as the record is at `rev` (a new record: its own)."""

    try:
        top = toplevel(record.parent)
        sha = resolve(top, rev)
    except DetectError as exc:
        raise InfrastructureError(
            f"--contract-from {rev[:40]}: {exc.message}", hint="check out with fetch-depth: 0, or git fetch the base commit, before the rebuild"
        ) from None
    if record.is_symlink():  # a link would have the base's contract of another file judge this one
        raise UsageError(f"{record} is a symbolic link; a run record is a file of its own, judged by that file's contract at the base")

    rel = Path(os.path.abspath(record)).relative_to(top.resolve()).as_posix()
    blob = read_blobs(top, [f"{sha}:{rel}"]).get(f"{sha}:{rel}")
    if blob is None:
        return Judged(head, f"{rel} is new at this head: its own contract judges it")
    try:
        base = load_text(blob.decode("utf-8"), f"{rel} at {sha[:12]}").data
    except (DocumentError, UnicodeDecodeError) as exc:
        raise UsageError(f"{rel} at {sha[:12]} cannot be read as the contract that judges: {exc}") from None
    if not isinstance(base, dict) or base.get("kind") != "RunRecord":
        raise UsageError(f"{rel} at {sha[:12]} is not a run record; it cannot judge the rebuild")
    merged = {k: v for k, v in head.items() if k not in JUDGING}
    merged.update({k: base[k] for k in JUDGING if k in base})
    base_job = table(base, "job")
    if isinstance(merged.get("job"), dict):
        job = {k: v for k, v in merged["job"].items() if k not in JUDGING_IN_JOB}
        job.update({k: base_job[k] for k in JUDGING_IN_JOB if k in base_job})
        merged["job"] = job
    head_job = table(head, "job")
    changed = tuple(k for k in JUDGING if _canonical(base.get(k)) != _canonical(head.get(k))) + tuple(
        f"job.{k}" for k in JUDGING_IN_JOB if _canonical(base_job.get(k)) != _canonical(head_job.get(k))
    )
    note = f"judged by the contract of {rel} at the base {sha[:12]}"
    if changed:
        note += f"; this pull request's changes to {', '.join(changed)} do not judge (a baseline promotion makes them effective)"
    return Judged(merged, note, changed, base)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


__all__ = ["CONTRACT_SECTIONS", "JUDGING", "JUDGING_IN_JOB", "Judged", "from_base"]
