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
run: created by the app of the configured creator (github/statuses.py: `github-actions[bot]` by
default, `app.slug` `github-actions`, the GITHUB_TOKEN the gate and the status job post with; any
other app installed with `checks: write` could create a run of the same name) with `external_id`
`reprogate` (a job of a workflow the pull request adds, named `reprogate/reproduction`, is a
github-actions check run of that name too, but sets no external id: the status job must never
complete it, nor the gate read it as a judgement).

Limits: GitHub counts a summary's 65,535 in bytes (`cut_summary` cuts the UTF-8 on a character
boundary), and an annotation's message's 64 KB too (`cut_bytes`). A refusal of the Checks API (any 4xx: a body GitHub will not take) never leaves the
run in progress: the run is completed at once with the same state's conclusion and a short
summary saying why the report is not there (`_completed_anyway`), and the status (posted apart)
still says the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from reprogate.core.errors import InfrastructureError
from reprogate.core.redact import redact
from reprogate.core.shapes import table
from reprogate.core.timestamps import utc_now
from reprogate.github.client import GitHubClient, GitHubError, GitHubUnreachable, cut
from reprogate.github.statuses import DEFAULT_CREATOR, State, Status, app_slug

PUBLISH = ("both", "check-run", "status")
DEFAULT_PUBLISH = "both"
SUMMARY_LIMIT = 65_535  # output.summary and output.text: bytes of UTF-8 (GitHub's 422 says "must be less than 65535 bytes")
TITLE_LIMIT = 255
ANNOTATIONS_PER_REQUEST = 50
ANNOTATION_LEVELS = ("notice", "warning", "failure")
ANNOTATION_MESSAGE_LIMIT = 64_000  # bytes of UTF-8: GitHub's "maximum size is 64 KB" (64,000 characters of `€` were 192,000 bytes)
CONCLUSIONS = {"success": "success", "failure": "failure", "error": "action_required"}
EXTERNAL_ID = "reprogate"  # set on every check run reprogate creates; a workflow job's run has none
STATES: dict[str, State] = {"success": "success", "failure": "failure"}  # a completed run read back; anything else completed is error
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
            "message": cut_bytes(self.message, ANNOTATION_MESSAGE_LIMIT) or "-",
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
    """The report within GitHub's 65,535 bytes, cut on a character boundary, saying where and how
    much it was cut."""
    size = len(text.encode("utf-8"))
    if size <= SUMMARY_LIMIT:
        return text
    note = f"\n\n…(the report is {size:,} bytes; cut here to GitHub's 65,535-byte limit: the full report is in the rebuild run's artifacts)"
    room = SUMMARY_LIMIT - len(note.encode("utf-8"))
    head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")  # a character the cut splits is left out whole
    return head + note


def cut_bytes(text: str, limit: int, marker: str = "…") -> str:
    """`text` within `limit` bytes of UTF-8, cut on a character boundary, the marker saying so."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - len(marker.encode("utf-8"))].decode("utf-8", errors="ignore") + marker


def batches(annotations: Sequence[Annotation]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(annotations), ANNOTATIONS_PER_REQUEST):
        yield [a.to_json() for a in annotations[start : start + ANNOTATIONS_PER_REQUEST]]


def _output(out: CheckOutput, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run's output, redacted before it is cut (the client redacts again on the way out, which
    then changes nothing), so the cut is what GitHub receives."""
    body: dict[str, Any] = {"title": title_of(out.state, redact(out.title)), "summary": cut_summary(redact(out.summary or out.title))}
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
    try:
        return client.create_check_run(repo, body)
    except GitHubError as exc:
        if not _refused(exc):
            raise
        body["output"] = _short_output(out, exc)
        return _or_unreachable(lambda: client.create_check_run(repo, body), exc)


def complete(client: GitHubClient, repo: str, sha: str, name: str, out: CheckOutput, creator: str = DEFAULT_CREATOR) -> list[dict[str, Any]]:
    """The status job's part: take the open check run of this name on the commit (the gate's
    queued one: the one whose link is this rebuild's run when there is one) or create one, move it
    to in_progress, then to completed with its conclusion and the first 50 annotations; each
    further 50 is one more update (GitHub appends them). The conclusion is `out.state`, which the
    caller judged from the verdicts alone. A refusal of any of these (4xx) completes the run with a
    short summary instead (`_completed_anyway`): never left in progress."""
    open_runs = _open_runs(client, repo, sha, name, creator)
    this_run = [r for r in open_runs if out.details_url and r.get("details_url") == out.details_url]
    started = utc_now()
    progress: dict[str, Any] = {"status": "in_progress", "started_at": started, "output": _output(CheckOutput("pending", "judging the rebuild's verdicts", ""))}
    if out.details_url:
        progress["details_url"] = out.details_url
    if this_run or open_runs:
        run_id = max(run_id_of(r) or 0 for r in this_run or open_runs)
        answers = [client.update_check_run(repo, run_id, progress)]
    else:
        answers = [client.create_check_run(repo, {"name": name, "head_sha": sha, "external_id": EXTERNAL_ID, **progress})]
        run_id = run_id_of(answers[0]) or _created_again(client, repo, sha, name, creator, out, started)
    parts = list(batches(out.annotations)) or [[]]
    final: dict[str, Any] = {"status": "completed", "conclusion": conclusion(out.state), "completed_at": utc_now(), "output": _output(out, parts[0])}
    try:
        answers.append(client.update_check_run(repo, run_id, final))
        for part in parts[1:]:
            answers.append(client.update_check_run(repo, run_id, {"output": _output(out, part)}))
    except GitHubError as exc:
        if not _refused(exc):
            raise
        answers.append(_completed_anyway(client, repo, run_id, out, exc))
    return answers


def supersede(client: GitHubClient, repo: str, sha: str, name: str, out: CheckOutput, creator: str = DEFAULT_CREATOR) -> list[dict[str, Any]]:
    """A stale rebuild's part (a newer one already posted): complete only this rebuild's own open
    run (the one linking to `out.details_url`) with the newer verdict's state, so no check run of
    the name says otherwise than the status; another rebuild's run is never touched."""
    if not out.details_url:
        return []
    runs = _open_runs(client, repo, sha, name, creator)
    done = []
    for run in runs:
        if run.get("details_url") == out.details_url:
            body = {"status": "completed", "conclusion": conclusion(out.state), "completed_at": utc_now(), "output": _output(out)}
            done.append(client.update_check_run(repo, run_id_of(run) or 0, body))
    return done


def run_id_of(answer: dict[str, Any]) -> int | None:
    """A check run's `id` as GitHub gives it, a positive integer; None for anything else (absent,
    "7", true, 0): the one field every update names, read here and nowhere else."""
    found = answer.get("id")
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else None


def _open_runs(client: GitHubClient, repo: str, sha: str, name: str, creator: str) -> list[dict[str, Any]]:
    """This commit's open check runs of the name that are ours and name their id."""
    return [r for r in client.check_runs(repo, sha, name) if r.get("status") != "completed" and run_id_of(r) is not None and ours(r, creator)]


def _created_again(client: GitHubClient, repo: str, sha: str, name: str, creator: str, out: CheckOutput, started: str) -> int:
    """The id of the run just created, when GitHub's answer to the create gave none that can be
    used: this commit's open run of ours, this rebuild's (its link) or the one started now. None
    found is GitHub misbehaving (exit 3): the check stays as GitHub keeps it, and the job says why."""
    runs = _open_runs(client, repo, sha, name, creator)
    mine = [r for r in runs if out.details_url and r.get("details_url") == out.details_url] or [r for r in runs if r.get("started_at") == started] or runs
    if not mine:
        raise GitHubUnreachable(
            f"POST /repos/{repo}/check-runs: GitHub's answer has no check run id (a positive integer `id`), and no open run of ours is listed"
        )
    return max(run_id_of(r) or 0 for r in mine)


def _refused(exc: GitHubError) -> bool:
    """A 4xx: GitHub will not take this body (too large, an annotation it rejects, ...)."""
    return 400 <= exc.status < 500


def _short_output(out: CheckOutput, exc: GitHubError) -> dict[str, Any]:
    why = f"GitHub refused the full report (HTTP {exc.status}): {exc.message[:300]}"
    where = f": {out.details_url}" if out.details_url else "."
    summary = f"{redact(out.title)}\n\n{why}. The verdicts and the report are in the rebuild run's artifacts{where}"
    return {"title": title_of(out.state, out.title), "summary": cut_summary(summary)}


def _completed_anyway(client: GitHubClient, repo: str, run_id: int, out: CheckOutput, exc: GitHubError) -> dict[str, Any]:
    """The run completed with the state's conclusion and a short summary, after GitHub refused
    the full one: a check left in progress would block the merge with no answer at all."""
    body = {"status": "completed", "conclusion": conclusion(out.state), "completed_at": utc_now(), "output": _short_output(out, exc)}
    return _or_unreachable(lambda: client.update_check_run(repo, run_id, body), exc)


def _or_unreachable(call: Callable[[], dict[str, Any]], first: GitHubError) -> dict[str, Any]:
    """The short retry; refused too, it is GitHub's problem to report (exit 3), not a usage error."""
    try:
        return call()
    except GitHubError as again:
        raise InfrastructureError(f"GitHub refused the check run twice (HTTP {first.status}, then {again.status}): {again.message[:300]}") from None


def ours(run: dict[str, Any], creator: str = DEFAULT_CREATOR) -> bool:
    """Whether reprogate created this check run: through the creator's app (a workflow's
    GITHUB_TOKEN: GitHub Actions), with reprogate's external id (which no workflow job's check
    run carries)."""
    app = run.get("app")
    return isinstance(app, dict) and app.get("slug") == app_slug(creator) and run.get("external_id") == EXTERNAL_ID


def as_statuses(check_runs: list[dict[str, Any]], creator: str = DEFAULT_CREATOR) -> list[Status]:
    """Check runs as the statuses github/trust.py reads (state, context, description, link, time,
    creator). A run reprogate did not create (`ours`) is no record of the gate's."""
    out = []
    for run in check_runs:
        if not isinstance(run, dict) or not ours(run, creator):
            continue
        output = table(run, "output")
        state: State = STATES.get(str(run.get("conclusion")), "error") if run.get("status") == "completed" else "pending"
        title = str(output.get("title") or "")
        prefix = TITLE_PREFIX.get(state, state) + ": "  # what title_of added, if it did
        url, started, identifier = run.get("details_url"), run.get("started_at"), run.get("id")
        out.append(
            Status(
                id=identifier if isinstance(identifier, int) and not isinstance(identifier, bool) else 0,
                state=state,
                context=str(run.get("name") or ""),
                description=title.removeprefix(prefix),
                target_url=url if isinstance(url, str) else None,
                created_at=started if isinstance(started, str) else "",
                creator=f"{app_slug(creator)}[bot]",
            )
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
    "supersede",
    "title_of",
]
