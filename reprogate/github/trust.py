"""Who may steer the gate, and which verdicts it believes, decided through GitHub's API.

Labels: anyone with triage permission can add a label, so a label counts only when GitHub says
the user who applied it has write, maintain or admin permission on the repository, and only for
the commit it was applied to (a new head needs a new approval).

Verdicts: baseline promotion needs a passing rebuild of this head and of this version of each
promoted record. A file in the pull request proves nothing (the contributor writes it). The
proof is the reproduction status on the head commit, as GitHub stores it: it must be `success`,
name the digest of every promoted record (the rebuild's status step writes them), and link to a
run of the trusted rebuild workflow, dispatched on the default branch, which GET
/actions/runs/{id} confirms. Only statuses of the gate's own creator are read at all
(github/statuses.py): anyone with write access, and any CI bot or app a pull request can steer,
can post one of the same context. The run check keeps the gate's own `success` ("nothing
watched changed") from counting as a rebuild.

One commit, one answer: GitHub keeps one status per (commit, context), while the gate judges a
(base, head) pair. A commit proposed against two bases shares the context, so `success` for one
base must never stand over another base's answer that is not success (`across_bases`): then the
poster says `error` (a terminal failure elsewhere) or `pending` (a rebuild elsewhere still
running), naming the other base. And of two rebuilds of one pair the newer dispatch's verdict
stands (`newer_rebuild`): its run id is larger (GitHub numbers runs in the order they are made).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from reprogate.core.errors import UsageError
from reprogate.github.client import DESCRIPTION_LIMIT, GitHubClient, cut_words
from reprogate.github.events import PullRequestEvent
from reprogate.github.statuses import Status

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
TERMINAL_STATES = frozenset({"success", "failure", "error"})
DIGEST_LENGTH = 12  # hex characters of a record digest a status names
_DIGESTS = re.compile(rf"\brecords? ((?:[0-9a-f]{{{DIGEST_LENGTH}}})(?:,[0-9a-f]{{{DIGEST_LENGTH}}})*)")
_BASE = re.compile(rf"; base ([0-9a-f]{{{DIGEST_LENGTH}}})\b")
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def check_sha(value: str | None, option: str) -> str:
    """A full commit sha, as statuses and git take them; anything else is a usage error (it
    would otherwise become part of an API path)."""
    if not value:
        raise UsageError(f"no commit: give {option} (or set GITHUB_SHA)")
    if not _SHA.match(value):
        raise UsageError(f"{option} {value[:80]!r}: not a full commit sha (40 or 64 hex characters)")
    return value


def with_base(text: str, base: str | None) -> str:
    """A status description that names the base it judged the head against, within 140
    characters: the text is cut on a word (github.client.cut_words), the base is always kept
    (a status that lost it would count for no base)."""
    if not base:
        return cut_words(text, DESCRIPTION_LIMIT)
    suffix = f"; base {base[:DIGEST_LENGTH]}"
    return cut_words(text, DESCRIPTION_LIMIT - len(suffix)) + suffix


def base_of(status: Status) -> str | None:
    """The base a status names (a status is a judgement of a (base, head) pair; None for one
    written before statuses named their base, which then counts for no base)."""
    match = _BASE.search(status.description)
    return match.group(1) if match else None


def short_digest(digest: str) -> str:
    """The part of a canonical-v1 record digest a status description carries."""
    return digest.rsplit(":", 1)[-1][:DIGEST_LENGTH]


def digests_in(description: str) -> set[str]:
    """Record digests a reproduction status names (`… record 1a2b3c4d5e6f` or `records a,b`)."""
    match = _DIGESTS.search(description or "")
    return set(match.group(1).split(",")) if match else set()


class Approvals(Protocol):
    """Whether a label was applied by a writer to the head being judged."""

    def applied_by_writer(self, label: str) -> bool: ...


@dataclass
class EventApprovals:
    """The one-workflow setup: the event itself says which label was applied, and by whom."""

    client: GitHubClient
    event: PullRequestEvent
    denied: list[str] = field(default_factory=list)  # "who tried which label", for the log

    def applied_by_writer(self, label: str) -> bool:
        if self.event.action != "labeled" or self.event.label != label:
            return False
        if self.client.permission(self.event.repository, self.event.sender) in WRITE_PERMISSIONS:
            return True
        self.denied.append(f"{self.event.sender} applied {label} without write permission: ignored")
        return False


@dataclass
class ApiApprovals:
    """The workflow_run setup: the triggering event is not available (only the pull request
    number, which the gate checks). The label must be on the pull request now, its latest
    `labeled` event must come from a writer, and it must be newer than the first status the gate
    posted on this head (the moment the gate first saw the commit): a label applied before a
    push approved the commit before it."""

    client: GitHubClient
    repository: str
    number: int
    labels: frozenset[str]
    first_seen: str | None  # created_at of the gate's first status on this head, None if never
    denied: list[str] = field(default_factory=list)
    _events: list[dict[str, object]] | None = None

    def applied_by_writer(self, label: str) -> bool:
        if label not in self.labels or self.first_seen is None:
            return False
        if self._events is None:
            self._events = self.client.issue_events(self.repository, self.number)
        applied = [e for e in self._events if e.get("event") == "labeled" and _label_name(e) == label]
        if not applied:
            return False
        last = applied[-1]
        when, actor = str(last.get("created_at") or ""), last.get("actor")
        login = actor.get("login") if isinstance(actor, dict) else None
        if not isinstance(login, str) or not when or when <= self.first_seen:
            return False  # ISO 8601 UTC times from the same server compare as strings
        if self.client.permission(self.repository, login) in WRITE_PERMISSIONS:
            return True
        self.denied.append(f"{login} applied {label} without write permission: ignored")
        return False


def _label_name(event: dict[str, object]) -> object:
    label = event.get("label")
    return label.get("name") if isinstance(label, dict) else None


@dataclass(frozen=True)
class RebuildSource:
    """Where a trusted rebuild comes from: this repository's rebuild workflow, dispatched on its
    ref (the default branch unless .reprogate.yaml at the base names another)."""

    repository: str
    server_url: str
    workflow: str
    branch: str
    context: str  # the reproduction status context the rebuild posts


@dataclass(frozen=True)
class TrustedVerdict:
    state: str  # success, failure, error, pending, or "none"
    digests: frozenset[str]
    target_url: str | None
    trusted_run: bool
    why: str


def reproduction_verdict(client: GitHubClient, source: RebuildSource, statuses: Sequence[Status], base: str, head: str) -> TrustedVerdict:
    """The reproduction status among a commit's `statuses` (the gate's own) for this base, and
    whether a run of the trusted rebuild workflow set it (a terminal failure is checked the same
    way: a trusted failed rebuild is a failed promotion, not a reason to ask again).

    The run must also be the one dispatched for this head: its run-name carries the gate's
    correlation id `reprogate-<head12>-…` (the example workflow's `run-name`). A status's text and
    link are whatever its poster wrote, so without this a status naming the right digests and
    linking to a trusted rebuild of another commit would count. Without the run-name the gate
    dispatches a rebuild with `baseline: true`, whose status job sets the baseline itself."""
    mine = latest(statuses, source.context, base)
    if mine is None:
        return TrustedVerdict("none", frozenset(), None, False, f"no {source.context} status for this head against base {base[:DIGEST_LENGTH]}")
    state, url = mine.state, mine.target_url
    digests = frozenset(digests_in(mine.description))
    if state not in TERMINAL_STATES:
        return TrustedVerdict(state, digests, url, False, f"{source.context} is {state}")
    run_id = run_id_of(url, source.server_url, source.repository)
    if run_id is None:
        return TrustedVerdict(state, digests, None, False, f"the {source.context} {state} does not link to a rebuild run")
    run = client.workflow_run(source.repository, run_id)
    path_ok = str(run.get("path", "")).split("@")[0] == f".github/workflows/{source.workflow}" or str(run.get("workflow_id")) == source.workflow
    if not path_ok or run.get("event") != "workflow_dispatch" or run.get("head_branch") != source.branch:
        why = f"run {run_id} is not {source.workflow} dispatched on {source.branch} (it is {str(run.get('path'))[:80]} on {str(run.get('event'))[:40]})"
        return TrustedVerdict(state, digests, url, False, why)
    if f"reprogate-{head[:DIGEST_LENGTH]}-" not in str(run.get("display_title") or ""):
        why = (
            f"run {run_id} of {source.workflow} was not dispatched for {head[:DIGEST_LENGTH]} (its run-name does not carry reprogate-{head[:DIGEST_LENGTH]}-…)"
        )
        return TrustedVerdict(state, digests, url, False, why)
    return TrustedVerdict(state, digests, url, True, f"run {run_id} of {source.workflow} ({state})")


def _of_context(statuses: Sequence[Status], context: str) -> list[Status]:
    return [s for s in statuses if s.context.lower() == context.lower()]  # GitHub's contexts are case-insensitive


def latest(statuses: Sequence[Status], context: str, base: str | None = None) -> Status | None:
    """The status GitHub shows for a context: the newest one (contexts are case-insensitive).
    With `base`: that status only if it judged this base; one that judged another base (the pull
    request was retargeted, or the head is proposed again elsewhere) is no judgement of this pair."""
    mine = _of_context(statuses, context)
    if not mine:
        return None
    newest = max(mine, key=lambda s: s.order)
    if base is not None and base_of(newest) != base[:DIGEST_LENGTH]:
        return None
    return newest


def first_seen(statuses: Sequence[Status], context: str, base: str) -> str | None:
    """When the gate first judged this (base, head) pair: its first status naming this base."""
    times = [s.created_at for s in _of_context(statuses, context) if s.created_at and base_of(s) == base[:DIGEST_LENGTH]]
    return min(times) if times else None


@dataclass(frozen=True)
class Posting:
    """What to post on the shared context: the state and text judged, or what one commit's one
    answer allows of it."""

    state: str
    description: str
    held_by: Status | None = None  # the other base's status that kept a success from being posted


def across_bases(statuses: Sequence[Status], context: str, base: str | None, state: str, description: str) -> Posting:
    """`state` for this (base, head) pair as the shared context may show it. A `success` is
    posted only when every other base's newest status on this commit is `success` too: over
    another base's failure or error it becomes `error` naming that base (fail closed: that pull
    request's required check reads this context), over another base's pending rebuild `pending`
    (that rebuild's verdict comes last and decides). Anything but success is posted as judged:
    it can only keep a merge from happening. `base` None (a status job not told its base) counts
    every status that names a base as another's (`github status` without --base does not ask)."""
    if state != "success":
        return Posting(state, description)
    mine = base[:DIGEST_LENGTH] if base else None
    newest: dict[str | None, Status] = {}
    for status in _of_context(statuses, context):
        other = base_of(status)
        if other == mine and mine is not None:
            continue
        if other not in newest or newest[other].order < status.order:
            newest[other] = status
    holding = sorted((s for s in newest.values() if s.state != "success"), key=lambda s: s.order)
    if not holding:
        return Posting(state, description)
    held = holding[-1]
    named = base_of(held) or "an unnamed base"
    if held.state == "pending":
        return Posting("pending", with_base(f"passed here; waiting for the rebuild of this commit against base {named} (one commit, one status)", base), held)
    return Posting("error", with_base(f"this commit is {held.state} against base {named}: one commit has one status, so it cannot pass here", base), held)


def newer_rebuild(statuses: Sequence[Status], context: str, base: str | None, run_id: int | None, server_url: str, repository: str) -> Status | None:
    """A terminal status of this pair that a newer rebuild run than `run_id` posted: then this
    run's verdict is stale and the newer one stands (the later dispatch was asked for later, by a
    new label or a retarget; which run finishes last must not decide)."""
    if run_id is None:
        return None
    mine = base[:DIGEST_LENGTH] if base else None
    for status in sorted(_of_context(statuses, context), key=lambda s: s.order, reverse=True):
        other = run_id_of(status.target_url, server_url, repository)
        if status.state in TERMINAL_STATES and other is not None and other > run_id and base_of(status) == mine:
            return status
    return None


def run_id_of(url: object, server_url: str, repository: str) -> int | None:
    """The workflow run a status's link points to, when it is a run of `repository`."""
    if not isinstance(url, str):
        return None
    match = re.match(re.escape(f"{server_url.rstrip('/')}/{repository}/actions/runs/") + r"(\d{1,20})(?:/|$|\?)", url)
    return int(match.group(1)) if match else None


__all__ = [
    "TERMINAL_STATES",
    "Posting",
    "across_bases",
    "newer_rebuild",
    "run_id_of",
    "WRITE_PERMISSIONS",
    "ApiApprovals",
    "Approvals",
    "base_of",
    "check_sha",
    "with_base",
    "EventApprovals",
    "RebuildSource",
    "TrustedVerdict",
    "digests_in",
    "first_seen",
    "latest",
    "reproduction_verdict",
    "short_digest",
]
