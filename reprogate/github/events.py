"""The GitHub event a gate run reacts to, parsed once into typed values.

The event file is input like any other: a field of the wrong type, a missing head sha or a file
that is not JSON is a UsageError (exit 2) naming the file and the field, never a KeyError deep in
the gate. Only the fields the gate uses are read; everything else in the payload is ignored.

Which values can be trusted is a separate question (docs/security.md): the payload of a
`pull_request` event is GitHub's, but label names, branch names and titles in it were typed by
people, so the gate prints them only through output/emit and takes its own configuration from the
base revision.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.errors import UsageError
from reprogate.core.json_input import read_json_input

MAX_EVENT_BYTES = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class PullRequestEvent:
    """pull_request: opened, synchronize, reopened, labeled, unlabeled, edited, ..."""

    repository: str
    default_branch: str
    action: str
    number: int
    head_sha: str
    base_sha: str
    base_ref: str
    head_repository: str  # owner/name the head branch lives in; another repository for a fork
    labels: tuple[str, ...]
    label: str | None  # the label this event applied or removed (labeled / unlabeled)
    sender: str
    base_changed: bool = False  # `edited` with changes.base: the pull request was retargeted

    @property
    def fork(self) -> bool:
        return self.head_repository != self.repository

    @property
    def new_head(self) -> bool:
        """The event brought a (base, head) pair the gate has not judged: a new commit, or the same
        commit proposed against another base. An earlier label approved another pair."""
        return self.action in ("opened", "synchronize") or (self.action == "edited" and self.base_changed)


@dataclass(frozen=True)
class MergeGroupEvent:
    repository: str
    default_branch: str
    head_sha: str
    base_sha: str


@dataclass(frozen=True)
class PushEvent:
    repository: str
    ref: str
    after: str


@dataclass(frozen=True)
class WorkflowRunEvent:
    """workflow_run: another workflow finished. The public-repository setup's privileged half
    reacts to the unprivileged `pull_request` run; `head_sha` is the commit that run tested."""

    repository: str
    default_branch: str
    action: str
    run_id: int
    event: str  # the event that started the finished run (pull_request for the compute half)
    head_sha: str
    conclusion: str | None


@dataclass(frozen=True)
class OtherEvent:
    """Any event the gate does not act on (it says so and exits 0), or refuses (pull_request_target)."""

    name: str
    repository: str


Event = PullRequestEvent | MergeGroupEvent | PushEvent | WorkflowRunEvent | OtherEvent


class _Reader:
    """Typed access to a payload, with errors that name the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, expected: str, value: Any) -> UsageError:
        got = "missing" if value is None else f"a {type(value).__name__}"
        return UsageError(
            f"{self.source}: {where}: expected {expected}, found {got}", hint="the event file is not the GitHub event this workflow was triggered by"
        )

    def obj(self, data: Any, key: str, where: str, optional: bool = False) -> dict[str, Any]:
        value = data.get(key) if isinstance(data, dict) else None
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"{where}.{key}" if where else key, "an object", value)
        return value

    def text(self, data: dict[str, Any], key: str, where: str, optional: bool = False, default: str = "") -> str:
        value = data.get(key)
        if value is None and optional:
            return default
        if not isinstance(value, str):
            raise self.fail(f"{where}.{key}" if where else key, "a string", value)
        return value

    def sha(self, data: dict[str, Any], key: str, where: str) -> str:
        value = self.text(data, key, where)
        if not _SHA.match(value):
            raise UsageError(f"{self.source}: {where}.{key}: {value[:80]!r} is not a commit sha")
        return value

    def integer(self, data: dict[str, Any], key: str, where: str) -> int:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.fail(f"{where}.{key}" if where else key, "a positive integer", value)
        return value


def read_payload(path: Path) -> dict[str, Any]:
    """The event file as a JSON object (bounded read; a FIFO or a folder is refused, not waited on)."""

    try:
        info = path.stat()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the event file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{path}: the event file is not a regular file")
    data = read_json_input(path, MAX_EVENT_BYTES, "the event file", "a GitHub event")
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the event file holds a {type(data).__name__}, not a JSON object")
    return data


def parse_event(name: str, payload: dict[str, Any], repository: str, source: str = "event") -> Event:
    """The typed event; `repository` (GITHUB_REPOSITORY) wins over the payload's own name."""
    r = _Reader(source)
    repo_obj = r.obj(payload, "repository", "", optional=True)
    repository = repository or r.text(repo_obj, "full_name", "repository", optional=True)
    if "/" not in repository:
        raise UsageError(f"{source}: no repository (set GITHUB_REPOSITORY to owner/name)")
    default_branch = r.text(repo_obj, "default_branch", "repository", optional=True, default="main")
    if name == "pull_request":
        return _pull_request(r, payload, repository, default_branch)
    if name == "merge_group":
        group = r.obj(payload, "merge_group", "")
        return MergeGroupEvent(repository, default_branch, r.sha(group, "head_sha", "merge_group"), r.sha(group, "base_sha", "merge_group"))
    if name == "push":
        after = r.sha(payload, "after", "")
        return PushEvent(repository, r.text(payload, "ref", ""), after)
    if name == "workflow_run":
        run = r.obj(payload, "workflow_run", "")
        conclusion = run.get("conclusion")
        return WorkflowRunEvent(
            repository,
            default_branch,
            r.text(payload, "action", "", optional=True),
            r.integer(run, "id", "workflow_run"),
            r.text(run, "event", "workflow_run"),
            r.sha(run, "head_sha", "workflow_run"),
            conclusion if isinstance(conclusion, str) else None,
        )
    return OtherEvent(name, repository)


def _pull_request(r: _Reader, payload: dict[str, Any], repository: str, default_branch: str) -> PullRequestEvent:
    pr = r.obj(payload, "pull_request", "")
    head, base = r.obj(pr, "head", "pull_request"), r.obj(pr, "base", "pull_request")
    if "repo" not in head:  # GitHub always sends it (null when the fork was deleted): without it a branch would be judged a fork
        raise UsageError(
            f"{r.source}: pull_request.head.repo: missing; the gate needs it to tell a branch of this repository from a fork",
            hint="give the payload GitHub sent (or `reprogate gate --example-event` / `--dry-run --from-git BASE..HEAD`)",
        )
    head_repo = r.obj(head, "repo", "pull_request.head", optional=True)  # null when the fork was deleted
    labels_raw = pr.get("labels", [])
    if not isinstance(labels_raw, list):
        raise r.fail("pull_request.labels", "a list", labels_raw)
    labels = tuple(
        r.text(label, "name", f"pull_request.labels[{i}]") if isinstance(label, dict) else _bad_label(r, i, label) for i, label in enumerate(labels_raw)
    )
    label_obj = r.obj(payload, "label", "", optional=True)
    number = payload.get("number", pr.get("number"))
    return PullRequestEvent(
        repository=repository,
        default_branch=default_branch,
        action=r.text(payload, "action", ""),
        number=r.integer({"number": number}, "number", "pull_request"),
        head_sha=r.sha(head, "sha", "pull_request.head"),
        base_sha=r.sha(base, "sha", "pull_request.base"),
        base_ref=r.text(base, "ref", "pull_request.base", optional=True),
        head_repository=r.text(head_repo, "full_name", "pull_request.head.repo", optional=True, default="(deleted fork)"),
        labels=labels,
        label=_applied_label(r, payload, label_obj),
        sender=r.text(r.obj(payload, "sender", "", optional=True), "login", "sender", optional=True),
        base_changed="base" in r.obj(payload, "changes", "", optional=True),
    )


def _applied_label(r: _Reader, payload: dict[str, Any], label_obj: dict[str, Any]) -> str | None:
    """The label a `labeled`/`unlabeled` event is about; such an event without one cannot be judged."""
    if label_obj:
        return r.text(label_obj, "name", "label")
    if payload.get("action") in ("labeled", "unlabeled"):
        raise r.fail("label", "an object (the label this event applied or removed)", None)
    return None


def _bad_label(r: _Reader, index: int, value: Any) -> str:
    raise r.fail(f"pull_request.labels[{index}]", "an object", value)


def load_event(name: str, path: str | None, repository: str) -> Event:
    """The event of this job, from GITHUB_EVENT_NAME and GITHUB_EVENT_PATH."""
    if not name:
        raise UsageError("GITHUB_EVENT_NAME is not set: gate runs inside a GitHub Actions job")
    if not path:
        raise UsageError("GITHUB_EVENT_PATH is not set: gate runs inside a GitHub Actions job")
    return parse_event(name, read_payload(Path(path)), repository, path)


__all__ = ["Event", "MergeGroupEvent", "OtherEvent", "PullRequestEvent", "PushEvent", "WorkflowRunEvent", "load_event", "parse_event", "read_payload"]
