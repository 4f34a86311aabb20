"""Which verdict files the status job believes: only those the dispatched rebuild made.

A verdict file is a file: a pull request can commit one, training code can write one, an earlier
run left one. The status job therefore checks each against what it knows without reading
anything the rebuild wrote:

- the nonce: the gate put a fresh one into the dispatch; the status job gets it from the
  workflow's own inputs, and the verdict must carry the same one (rebuild --nonce);
- the run: a verdict made in another workflow run (`verdict.run.id`) is refused;
- the record: the verdict's record digest must be the one the status job computes itself from
  the head's record, read from git objects at the commit it posts on;
- the rebuild job's own result (`needs.rebuild.result`): a job that was cancelled or skipped, or
  that failed while its verdicts say pass, makes the state `error`.

A verdict that fails any of these is refused, and any refusal makes the state `error`: never
`success`, never left pending.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from reprogate.detect.git import DetectError, read_blobs, toplevel
from reprogate.github.touched import parse_record, rebuild_digest
from reprogate.rebuild.verdict import Verdict

JOB_RESULTS = frozenset({"success", "failure", "cancelled", "skipped"})


@dataclass(frozen=True)
class Expectation:
    """What the status job knows from its own workflow, not from the verdict files."""

    nonce: str | None  # the dispatch's nonce (workflow input)
    run_id: str | None  # this workflow run (GITHUB_RUN_ID); the rebuild jobs ran in the same one
    job_result: str | None  # needs.rebuild.result
    head: str  # the commit the status is posted on
    digests: dict[str, str | None]  # record path -> digest of the head's record (None: unreadable)


def head_digests(repo: Path, head: str, paths: list[str]) -> dict[str, str | None]:
    """The digest each record has at `head`, computed here from git objects (None where the record
    is missing, unreadable or the checkout lacks the commit)."""

    wanted = sorted({os.path.normpath(p) for p in paths})
    try:
        top = toplevel(repo)
        blobs = read_blobs(top, [f"{head}:{p}" for p in wanted])
    except DetectError:
        return dict.fromkeys(wanted)
    return {p: rebuild_digest(parse_record(p, blobs.get(f"{head}:{p}")).data) for p in wanted}


def job_problem(expected: Expectation, all_pass: bool) -> str | None:
    """Why the rebuild job's own result forbids a terminal verdict from its files, if it does."""
    result = expected.job_result
    if result is None:
        return "the rebuild job's result was not given (--rebuild-result ${{ needs.rebuild.result }})"
    if result not in ("success", "failure"):
        return f"the rebuild job ended {result}"
    if all_pass and result != "success":
        return "the rebuild job failed although its verdicts say pass"
    return None


def refusal(verdict: Verdict, expected: Expectation) -> str | None:
    """Why this verdict does not count for this run and commit (None: it counts)."""
    run = verdict.run
    path = os.path.normpath(verdict.record.path)
    if expected.nonce is None:
        return "the status job was given no nonce (--nonce, the dispatch's nonce input), so no verdict can be bound to its dispatch"
    if run.nonce != expected.nonce:
        return f"the verdict for {path} does not carry this dispatch's nonce: it was not made by this rebuild"
    if expected.run_id is not None and run.run_id != expected.run_id:
        return f"the verdict for {path} was made in run {str(run.run_id)[:20]}, not in this run ({expected.run_id})"
    want = expected.digests.get(path)
    if want is None:
        return f"{path} cannot be read at {expected.head[:12]} here, so its digest cannot be checked (check out the head in the status job)"
    if verdict.record.digest != want:
        return f"the verdict's record digest is not that of {path} at {expected.head[:12]}"
    return None


__all__ = ["JOB_RESULTS", "Expectation", "head_digests", "job_problem", "refusal"]
