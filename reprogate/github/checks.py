"""The reproduction verdict as a Check Run: where a reviewer looks first.

A commit status holds 140 characters; a Check Run holds the rebuild's report (`output.summary`),
its stage failures and record findings as annotations on the files, and a link to the rebuild run
(`details_url`). The gate posts either, or both (`--publish`), under the same name, so a required
check `reprogate/reproduction` is satisfied by whichever is posted.

The state comes from the same judgement as the status (github/verdicts.py, github/binding.py):
this module only maps it. Lifecycle: the gate creates the run `queued` when it dispatches the
rebuild; the status job moves it to `in_progress` while it judges the verdicts and `completed`
with the conclusion, appending annotations 50 per request (the Checks API's limit). Conclusions:
success -> success, failure (not reproduced) -> failure, error (inconclusive, crashed, refused,
infrastructure) -> action_required with the reason in the title: never `neutral` or `skipped`,
which branch protection counts as passing.

For `--publish check-run` (no status at all) `as_statuses` reads the check runs back as the
status records the gate's trust rules (github/trust.py) already read: state, description (the
title, which carries the base and the record digests as the description does), link and time.
Only reprogate's own check runs count, there and when the status job looks for the gate's queued
run: created by the GitHub Actions app (`app.slug` `github-actions`, the GITHUB_TOKEN the gate and
the status job post with; any other app installed with `checks: write` could create a run of the
same name) with `external_id` `reprogate` (a job of a workflow the pull request adds, named
`reprogate/reproduction`, is a github-actions check run of that name too, but sets no external id:
the status job must never complete it, nor the gate read it as a judgement).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from reprogate.core.timestamps import utc_now
from reprogate.github.client import GitHubClient, cut

PUBLISH = ("both", "check-run", "status")
DEFAULT_PUBLISH = "both"
SUMMARY_LIMIT = 65_535  # output.summary and output.text (GitHub's OpenAPI description: maxLength)
TITLE_LIMIT = 255
ANNOTATIONS_PER_REQUEST = 50
ANNOTATION_LEVELS = ("notice", "warning", "failure")
CONCLUSIONS = {"success": "success", "failure": "failure", "error": "action_required"}
ACTIONS_APP = "github-actions"  # the app behind every workflow's GITHUB_TOKEN
EXTERNAL_ID = "reprogate"  # set on every check run reprogate creates; a workflow job's run has none
STATES = {"success": "success", "failure": "failure"}  # a completed run read back; anything else completed is error
TITLE_PREFIX = {"success": "passed", "failure": "failed", "error": "inconclusive", "pending": "pending"}
SAYS_STATE = {"success": ("reproduced", "passed"), "failure": ("not reproduced", "failed"), "error": ("inconclusive",), "pending": ("pending",)}


@dataclass(frozen=True)
class Annotation:
    """One line-level finding on the Check Run (a file path relative to the repository)."""

    path: str
    message: str
    level: str = "failure"  # notice, warning, failure
    line: int = 1
    column: int | None = None
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "path": self.path or ".",
            "start_line": max(1, self.line),
            "end_line": max(1, self.line),
            "annotation_level": self.level if self.level in ANNOTATION_LEVELS else "failure",
            "message": cut(self.message, 64_000) or "-",
        }
        if self.column is not None:  # only on one line, which these always are
            body["start_column"] = body["end_column"] = max(1, self.column)
        if self.title:
            body["title"] = cut(self.title, TITLE_LIMIT)
        return body


@dataclass(frozen=True)
class CheckOutput:
    """What one check run says: the state it maps, its title, the report and the annotations."""

    state: str  # pending, success, failure, error (the commit-status states)
    title: str
    summary: str
    annotations: tuple[Annotation, ...] = ()
    details_url: str | None = None


def publishes_status(publish: str) -> bool:
    return publish in ("both", "status")


def publishes_check(publish: str) -> bool:
    return publish in ("both", "check-run")


def conclusion(state: str) -> str:
    """The check run conclusion of a terminal state: never neutral or skipped."""
    return CONCLUSIONS.get(state, "action_required")


def title_of(state: str, description: str) -> str:
    """The title names the state in words first (`inconclusive: …`), then what the status says."""
    prefix = TITLE_PREFIX.get(state, state)
    said = description.lower().startswith(SAYS_STATE.get(state, (prefix,)))  # a text that already names its state keeps its words
    return cut(description if said else f"{prefix}: {description}", TITLE_LIMIT)


def cut_summary(text: str) -> str:
    """The report within GitHub's 65,535 characters, saying where and how much it was cut."""
    if len(text) <= SUMMARY_LIMIT:
        return text
    note = "\n\n…(the report is {} characters; cut here to GitHub's 65,535-character limit: the full report is in the rebuild run's artifacts)"
    note = note.format(len(text))
    return text[: SUMMARY_LIMIT - len(note)] + note


def batches(annotations: Sequence[Annotation]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(annotations), ANNOTATIONS_PER_REQUEST):
        yield [a.to_json() for a in annotations[start : start + ANNOTATIONS_PER_REQUEST]]


def _output(out: CheckOutput, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"title": title_of(out.state, out.title), "summary": cut_summary(out.summary or out.title)}
    if annotations:
        body["annotations"] = annotations
    return body


def queue(client: GitHubClient, repo: str, sha: str, name: str, out: CheckOutput) -> dict[str, Any]:
    """A new check run: `queued` for a dispatched rebuild, or completed at once for a state the
    gate decides itself (nothing watched changed, invalid records)."""
    body: dict[str, Any] = {"name": name, "head_sha": sha, "external_id": EXTERNAL_ID, "output": _output(out)}
    if out.details_url:
        body["details_url"] = out.details_url
    if out.state == "pending":
        body["status"] = "queued"
    else:
        body.update(status="completed", conclusion=conclusion(out.state), completed_at=utc_now())
    return client.create_check_run(repo, body)


def complete(client: GitHubClient, repo: str, sha: str, name: str, out: CheckOutput) -> list[dict[str, Any]]:
    """The status job's part: take the open check run of this name on the commit (the gate's
    queued one) or create one, move it to in_progress, then to completed with its conclusion and
    the first 50 annotations; each further 50 is one more update (GitHub appends them). The
    conclusion is `out.state`, which the caller judged from the verdicts alone."""
    open_runs = [r for r in client.check_runs(repo, sha, name) if r.get("status") != "completed" and isinstance(r.get("id"), int) and ours(r)]
    started = utc_now()
    progress: dict[str, Any] = {"status": "in_progress", "started_at": started, "output": _output(CheckOutput("pending", "judging the rebuild's verdicts", ""))}
    if out.details_url:
        progress["details_url"] = out.details_url
    if open_runs:
        run_id = int(max(open_runs, key=lambda r: int(r["id"]))["id"])
        answers = [client.update_check_run(repo, run_id, progress)]
    else:
        answers = [client.create_check_run(repo, {"name": name, "head_sha": sha, "external_id": EXTERNAL_ID, **progress})]
        run_id = int(answers[0]["id"])
    parts = list(batches(out.annotations)) or [[]]
    final: dict[str, Any] = {"status": "completed", "conclusion": conclusion(out.state), "completed_at": utc_now(), "output": _output(out, parts[0])}
    answers.append(client.update_check_run(repo, run_id, final))
    for part in parts[1:]:
        answers.append(client.update_check_run(repo, run_id, {"output": _output(out, part)}))
    return answers


def ours(run: dict[str, Any]) -> bool:
    """Whether reprogate created this check run: through GitHub Actions (a workflow's
    GITHUB_TOKEN), with reprogate's external id (which no workflow job's check run carries)."""
    app = run.get("app")
    return isinstance(app, dict) and app.get("slug") == ACTIONS_APP and run.get("external_id") == EXTERNAL_ID


def as_statuses(check_runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Check runs as the status records github/trust.py reads (state, context, description,
    target_url, created_at, id). A run reprogate did not create (`ours`) is no record of the gate's."""
    out = []
    for run in check_runs:
        if not isinstance(run, dict) or not ours(run):
            continue
        output = run.get("output") if isinstance(run.get("output"), dict) else {}
        if run.get("status") == "completed":
            state = STATES.get(str(run.get("conclusion")), "error")
        else:
            state = "pending"
        title = str(output.get("title") or "")
        prefix = TITLE_PREFIX.get(state, state) + ": "  # what title_of added, if it did
        out.append(
            {
                "id": run.get("id"),
                "state": state,
                "context": run.get("name"),
                "description": title.removeprefix(prefix),
                "target_url": run.get("details_url"),
                "created_at": run.get("started_at"),
            }
        )
    return out


__all__ = [
    "ANNOTATIONS_PER_REQUEST",
    "DEFAULT_PUBLISH",
    "PUBLISH",
    "SUMMARY_LIMIT",
    "Annotation",
    "CheckOutput",
    "as_statuses",
    "batches",
    "complete",
    "conclusion",
    "cut_summary",
    "ours",
    "publishes_check",
    "publishes_status",
    "queue",
    "title_of",
]
