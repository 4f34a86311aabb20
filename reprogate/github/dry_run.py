"""`reprogate gate --dry-run`: what the gate would decide and post for a pull-request event, shown
to a maintainer on their own machine, with no token and no network.

The gate runs as it runs in a job (the base's configuration, the detection, the records touched,
the contract changes, the plan), against a GitHub that answers from what the event says and
writes down, instead of sending, every status, dispatch, label removal and comment. Its answers
are the ones a first run on this head would get: no status posted yet, and a label's sender with
write permission (`--reader` shows what the same label from a reader does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.errors import UsageError
from reprogate.core.http import Reply
from reprogate.detect.git import resolve, toplevel
from reprogate.github.client import GitHubClient
from reprogate.github.gate import MARKER
from reprogate.github.statuses import Status

_SHA_LIKE = re.compile(r"^[0-9a-f]{7,64}$")
LOCAL_REPOSITORY = "local/repository"  # the owner/name an event from git carries when GITHUB_REPOSITORY names none


def event_from_git(repo: Path, revisions: str, repository: str = "", fork: bool = False, label: str | None = None, sender: str = "you") -> dict[str, Any]:
    """The `pull_request` payload for a pull request of HEAD into BASE (`BASE..HEAD`), with the
    fields the gate reads as GitHub sends them (schema webhook-pull-request-opened, or -labeled
    with `label`): the head from this repository unless `fork`, no labels but the one applied."""
    base_ref, dots, head_ref = revisions.partition("..")
    if not dots or not base_ref or not head_ref or head_ref.startswith("."):
        raise UsageError(f"--from-git {revisions[:80]!r}: give BASE..HEAD (two revisions, two dots), e.g. origin/main..HEAD")
    top = toplevel(repo)
    base, head = resolve(top, base_ref), resolve(top, head_ref)
    name = repository or LOCAL_REPOSITORY
    owner = name.split("/", 1)[0]
    head_repo = {"full_name": f"{sender}/{name.split('/', 1)[-1]}" if fork else name, "fork": fork}
    branch = base_ref.removeprefix("refs/remotes/").removeprefix("origin/").removeprefix("refs/heads/")
    short = branch if branch and not any(c in branch for c in "~^@:") and not _SHA_LIKE.match(branch) else "main"  # the base branch, as the event names it
    pull_request: dict[str, Any] = {
        "number": 1,
        "state": "open",
        "head": {"sha": head, "ref": head_ref, "repo": head_repo},
        "base": {"sha": base, "ref": short, "repo": {"full_name": name}},
        "labels": [{"name": label}] if label else [],
    }
    event: dict[str, Any] = {
        "action": "labeled" if label else "opened",
        "number": 1,
        "pull_request": pull_request,
        "repository": {"full_name": name, "default_branch": short, "owner": {"login": owner}},
        "sender": {"login": sender},
    }
    if label:
        event["label"] = {"name": label}
    return event


@dataclass
class DryRunClient(GitHubClient):
    """A GitHub that answers reads as a first run would see them and keeps every write."""

    token: str = ""
    writer: bool = True  # what permission a label's sender has
    posted: list[str] = field(default_factory=list)
    comment: str | None = None

    def request(self, method: str, path: str, json: Any = None, params: dict[str, Any] | None = None, expect: tuple[int, ...] = (200, 201, 204)) -> Reply:
        raise UsageError(f"gate --dry-run answers without GitHub and cannot answer {method} {path}", hint="run the gate in its workflow")

    def statuses(self, repo: str, ref: str) -> list[Status]:
        return []

    def permission(self, repo: str, user: str) -> str:
        return "write" if self.writer else "read"

    def create_status(self, repo: str, sha: str, state: str, context: str, description: str, target_url: str | None = None) -> dict[str, Any]:
        self.posted.append(f"status {context} on {sha[:12]}: {state} ({description})")
        return {}

    def check_runs(self, repo: str, ref: str, name: str) -> list[dict[str, Any]]:
        return []

    def create_check_run(self, repo: str, body: dict[str, Any]) -> dict[str, Any]:
        conclusion = f" {body['conclusion']}" if body.get("conclusion") else ""
        self.posted.append(f"check run {body['name']} on {str(body['head_sha'])[:12]}: {body.get('status', 'queued')}{conclusion} ({body['output']['title']})")
        return {"id": len(self.posted)}

    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> dict[str, Any]:
        shown = ", ".join(f"{key}={value}" for key, value in sorted(inputs.items()) if key != "nonce")
        self.posted.append(f"dispatch {workflow} on {ref}: {shown}")
        return {}

    def find_run(self, repo: str, workflow: str, correlation: str, since: str) -> dict[str, Any] | None:
        return None

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self.posted.append(f"remove label {label} from #{number}")

    def upsert_comment(self, repo: str, number: int, marker: str, body: str, author: str = "github-actions[bot]") -> dict[str, Any]:
        self.posted.append(f"comment on #{number} ({len(body.splitlines())} lines, below)")
        self.comment = body
        return {}

    def said(self) -> list[str]:
        """What the gate would have posted, in order, then the comment's text."""
        lines = ["would post:", *(f"  {line}" for line in self.posted)] if self.posted else ["would post nothing"]
        if self.comment is not None:
            lines += ["", MARKER, self.comment]
        return lines
