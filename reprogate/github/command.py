"""What `reprogate gate` and `reprogate github …` do with their arguments and the environment."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.config import DEFAULT_STATUS_CONTEXT, DEFAULT_STATUS_CREATOR
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import read_text
from reprogate.core.errors import ReprogateError, UsageError
from reprogate.core.redact import redact
from reprogate.github import checks
from reprogate.github.binding import Expectation, head_digests, job_problem, refusal
from reprogate.github.client import GitHubClient
from reprogate.github.dry_run import DryRunClient, event_from_git
from reprogate.github.events import load_event, parse_event, read_payload
from reprogate.github.gate import MARKER, Settings, run_gate
from reprogate.github.statuses import Status, ours
from reprogate.github.trust import across_bases, check_sha, newer_rebuild
from reprogate.github.verdicts import terminal
from reprogate.output.markdown import code_span, plain
from reprogate.output.result import CommandResult
from reprogate.rebuild.report import markdown
from reprogate.rebuild.run_binding import check_nonce
from reprogate.rebuild.verdict import Verdict
from reprogate.rebuild.verdicts import read_verdict

# Settings the composite action passes from its inputs. They come from the workflow file, which
# on the privileged side (workflow_run, the rebuild) is always the default branch's.
OVERRIDES = ("REPROGATE_REBUILD_WORKFLOW", "REPROGATE_STATUS_CONTEXT", "REPROGATE_STATUS_CREATOR", "REPROGATE_REBUILD_LABEL", "REPROGATE_BASELINE_LABEL")


def client_from_env() -> GitHubClient:
    token = os.environ.get("REPROGATE_GITHUB_TOKEN") or os.environ.get("GITHUB_TOKEN") or ""
    if not token:
        raise UsageError("no token: set GITHUB_TOKEN (the action passes its token input)")
    return GitHubClient(token)


def repository_from_env() -> str:
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    if "/" not in repo:
        raise UsageError("GITHUB_REPOSITORY (owner/name) is not set")
    return repo


def server_url_from_env() -> str:
    return os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")


def run_url_from_env() -> str | None:
    repo, run = os.environ.get("GITHUB_REPOSITORY"), os.environ.get("GITHUB_RUN_ID")
    return f"{server_url_from_env()}/{repo}/actions/runs/{run}" if repo and run else None


def gate_command(
    repo: Path,
    config_path: Path | None,
    fmt: str,
    mode: str = "full",
    result_file: Path | None = None,
    dry_run: DryRun | None = None,
    publish: str = checks.DEFAULT_PUBLISH,
) -> CommandResult:
    client: GitHubClient | None
    if dry_run is not None:
        if mode != "full":
            raise UsageError("--dry-run shows what the one-workflow gate (--mode full) would post")
        if dry_run.event is not None and dry_run.from_git is not None:
            raise UsageError("give --dry-run EVENT_FILE or --from-git BASE..HEAD, not both")
        if dry_run.event is not None:
            webhook, source = read_payload(dry_run.event), str(dry_run.event)
        elif dry_run.from_git is not None:
            webhook = event_from_git(repo, dry_run.from_git, os.environ.get("GITHUB_REPOSITORY", ""), dry_run.fork)
            source = f"--from-git {dry_run.from_git}"
        else:
            raise UsageError("--dry-run judges an event: give its payload file (--dry-run EVENT_FILE) or a range (--dry-run --from-git BASE..HEAD)")
        event = parse_event(dry_run.event_name, webhook, os.environ.get("GITHUB_REPOSITORY", ""), source)
        client = recorder = DryRunClient(writer=dry_run.writer)
    else:
        event = load_event(os.environ.get("GITHUB_EVENT_NAME", ""), os.environ.get("GITHUB_EVENT_PATH"), os.environ.get("GITHUB_REPOSITORY", ""))
        client, recorder = (client_from_env() if mode != "compute" else None), None
    overrides = {name: os.environ[name] for name in OVERRIDES if os.environ.get(name)}
    settings = Settings(repo, config_path, mode, result_file, server_url_from_env(), overrides, publish)
    outcome = run_gate(event, settings, client)
    said = recorder.said() if recorder is not None else []
    if fmt == "json":
        payload: dict[str, Any] = {"exit_code": int(outcome.code), "messages": list(outcome.messages), "outputs": dict(outcome.outputs)}
        if recorder is not None:
            payload["would_post"] = recorder.posted
            payload["comment"] = recorder.comment
        return CommandResult(outcome.code, [json.dumps(payload, indent=2)])
    done = CommandResult(outcome.code, [*outcome.messages, *said])
    if fmt == "github":
        done.stdout = [*outcome.annotations, *outcome.messages, *said]
        done.outputs = dict(outcome.outputs)

        done.summary = "### reprogate gate\n\n" + "\n".join(f"- {plain(m)}" for m in outcome.messages) + "\n"
    return done


@dataclass(frozen=True)
class DryRun:
    """`gate --dry-run`: the event to judge (a payload file, or a pull request of a revision range
    built from git), and whether the label's sender may write."""

    event: Path | None
    event_name: str = "pull_request"
    writer: bool = True
    from_git: str | None = None  # BASE..HEAD
    fork: bool = False  # --from-git: the head comes from a fork


def example_event_command(repo: Path, revisions: str, fork: bool) -> CommandResult:
    """`gate --example-event`: the pull_request payload `--from-git` would judge, to edit and pass to --dry-run."""
    return CommandResult(ExitCode.OK, [json.dumps(event_from_git(repo, revisions, os.environ.get("GITHUB_REPOSITORY", ""), fork), indent=2)])


@dataclass(frozen=True)
class StatusRequest:
    """What `reprogate github status` was asked to post (its command-line options)."""

    state: str | None = None
    verdicts: tuple[Path, ...] = ()
    description: str = ""
    context: str | None = None
    sha: str | None = None
    target_url: str | None = None
    pr: int | None = None  # post the report rendered from the verdicts as this pull request's comment
    expect_records: str | None = None  # JSON list of the records the rebuild was dispatched for
    also_context: str | None = None
    nonce: str | None = None  # the dispatch's nonce: a verdict without it is refused
    rebuild_result: str | None = None  # needs.rebuild.result
    base: str | None = None  # the base the dispatch judged against, named in the description
    publish: str = checks.DEFAULT_PUBLISH  # both, check-run or status (github/checks.py)


def status_command(request: StatusRequest) -> CommandResult:
    """Post a state, or the one terminal state of a rebuild's verdicts: error for any verdict that
    is missing, unreadable or not bound to this dispatch (github/binding.py), so a required check
    never stays pending and never turns green from a file the rebuild did not make."""

    if not request.verdicts and request.state is None:
        raise UsageError("give --state or --from-verdict")
    if request.pr is not None and not request.verdicts:
        raise UsageError("--pr posts the report of --from-verdict verdicts; give them")
    expected = _expected_records(request.expect_records)
    nonce = check_nonce(request.nonce)
    commit = check_sha(request.sha or os.environ.get("GITHUB_SHA", ""), "--sha")
    base = check_sha(request.base, "--base") if request.base else None
    client, repo = client_from_env(), repository_from_env()
    # The workflow's input (the gate sends the base's context with the dispatch), else the default:
    # never the checkout's .reprogate.yaml, which in the status job is the pull request's head.
    ctx = request.context or os.environ.get("REPROGATE_STATUS_CONTEXT") or DEFAULT_STATUS_CONTEXT
    url = request.target_url or run_url_from_env()
    lines: list[str] = []
    posted_verdicts: list[Verdict] = []
    if request.verdicts:
        judged = _judge_verdicts(list(request.verdicts), expected, nonce, request.rebuild_result, commit, base)
        posted, text, lines, posted_verdicts = judged.state, judged.description, judged.notes, judged.accepted
    else:
        assert request.state is not None
        posted, text = request.state, request.description or request.state
    creator = os.environ.get("REPROGATE_STATUS_CREATOR") or DEFAULT_STATUS_CREATOR
    if base is None and posted == "success":
        lines.append("no --base: this success cannot be held to the commit's answers for other bases (the example workflow passes inputs.base)")
    elif posted != "pending" and (request.verdicts or posted == "success"):
        seen = _seen(client, repo, commit, ctx, request.publish, creator)
        newer = newer_rebuild(seen, ctx, base, _run_id(), server_url_from_env(), repo) if request.verdicts else None
        if newer is not None:
            return _superseded(client, repo, commit, ctx, request, newer, url, posted, creator)
        posting = across_bases(seen, ctx, base, posted, text)
        if posting.held_by is not None:
            lines.append(f"{posted} for this base not posted: the commit is {posting.held_by.state} against another base ({posting.held_by.description[:100]})")
        posted, text = posting.state, posting.description
    # the report and annotations come from the verdicts this job accepted, the state from their judgement
    check = checks.CheckOutput(posted, text, _report_body(posted_verdicts, lines, text), tuple(verdict_annotations(posted_verdicts)), url)
    for name in (ctx, *([request.also_context] if request.also_context else [])):
        if checks.publishes_status(request.publish):
            client.create_status(repo, commit, posted, name, text, url)
        if checks.publishes_check(request.publish):
            if posted == "pending":
                checks.queue(client, repo, commit, name, check)
            else:
                checks.complete(client, repo, commit, name, check, creator)
    lines.insert(0, f"{ctx} = {posted} on {commit[:12]}: {text}" + (" (check run)" if request.publish == "check-run" else ""))
    if request.also_context:
        lines.append(f"{request.also_context} = {posted}")
    if request.pr is not None:
        client.upsert_comment(repo, request.pr, MARKER, _report_body(posted_verdicts, lines[1:], text))
        lines.append(f"report posted on #{request.pr}")
    return CommandResult(ExitCode.OK, lines)


def _run_id() -> int | None:
    run = os.environ.get("GITHUB_RUN_ID", "")
    return int(run) if run.isdigit() and len(run) < 20 else None


def _seen(client: GitHubClient, repo: str, commit: str, context: str, publish: str, creator: str) -> list[Status]:
    """The gate's own statuses of `context` on the commit (or its own check runs, read as statuses)."""
    if checks.publishes_status(publish):
        return ours(client.statuses(repo, commit), creator)
    return checks.as_statuses(client.check_runs(repo, commit, context), creator)


def _superseded(
    client: GitHubClient, repo: str, commit: str, ctx: str, request: StatusRequest, newer: Status, url: str | None, judged: str, creator: str
) -> CommandResult:
    """A newer rebuild of this pair already posted its verdict: this one's stays unposted (the
    newer dispatch was asked for later), and this rebuild's own check run says what stands."""
    said = [
        f"{ctx}: this rebuild's {judged} is not posted on {commit[:12]}: a newer rebuild ({newer.target_url}) already posted "
        f"{newer.state} ({newer.description[:100]}), and the newer dispatch's verdict stands"
    ]
    if checks.publishes_check(request.publish):
        stale = checks.CheckOutput(
            newer.state, newer.description, f"Superseded: a newer rebuild of this commit posted its verdict: {newer.target_url}", (), url
        )
        for name in (ctx, *([request.also_context] if request.also_context else [])):
            checks.supersede(client, repo, commit, name, stale, creator)
    return CommandResult(ExitCode.OK, said)


@dataclass(frozen=True)
class Judged:
    state: str
    description: str
    notes: list[str]
    accepted: list[Verdict]  # the verdicts bound to this dispatch


def _expected_records(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise UsageError("--expect-records is a JSON list of record paths") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > 256:
        raise UsageError("--expect-records is a JSON list of at most 256 record paths")
    return value


def _judge_verdicts(paths: list[Path], expected: list[str] | None, nonce: str | None, job_result: str | None, commit: str, base: str | None) -> Judged:

    verdicts: list[Verdict] = []
    unreadable: list[str] = []
    notes: list[str] = []
    for path in paths:
        try:
            verdicts.append(read_verdict(path))
        except ReprogateError as exc:  # missing, empty, not JSON, another shape: never leave the check pending
            unreadable.append(str(path))
            notes.append(exc.message)
    named = [v.record.path for v in verdicts]
    expectation = Expectation(nonce, os.environ.get("GITHUB_RUN_ID") or None, job_result, commit, head_digests(Path("."), commit, [*(expected or []), *named]))
    accepted: list[Verdict] = []
    refused: list[str] = []
    named_by_refused: set[str] = set()
    for verdict in verdicts:
        why = refusal(verdict, expectation)
        if why is None:
            accepted.append(verdict)
        else:
            refused.append(why)
            named_by_refused.add(os.path.normpath(verdict.record.path))
            notes.append(f"refused: {why}")
    rebuilt = {os.path.normpath(v.record.path) for v in accepted}
    missing = [r for r in expected or [] if os.path.normpath(r) not in rebuilt | named_by_refused]  # a refused one is named once, as refused
    notes += [f"no verdict for {r}" for r in missing]
    job = job_problem(expectation, bool(accepted) and all(v.passed for v in accepted))
    if job:
        notes.append(job)
    done = terminal(accepted, unreadable, missing, refused, job, base)
    return Judged(done.state, done.description, notes, accepted)


def verdict_annotations(verdicts: list[Verdict]) -> list[checks.Annotation]:
    """The check run's annotations, at each rebuilt record: every stage that failed (its detail)
    and the first input that differs (the diagnosis' cause). Their text is redacted; the record
    path is the one the binding accepted."""
    out: list[checks.Annotation] = []
    for verdict in verdicts:
        path = verdict.record.path or "."
        cause = verdict.first_difference
        if cause is not None and cause.text:
            out.append(checks.Annotation(path, redact(cause.text), "failure", title="reprogate: first input that differs"))
        for stage in verdict.stages:
            if stage.status == "fail":
                out.append(checks.Annotation(path, redact(stage.detail or "failed"), "failure", title=f"reprogate: stage {stage.name} failed"))
    return out


def _report_body(verdicts: list[Verdict], notes: list[str], description: str) -> str:
    """The comment, rendered here from the verdicts this job accepted: nothing the rebuild folder
    holds besides them (its report.md) is posted."""

    parts = [redact(markdown(v)) for v in verdicts]
    if notes or not parts:
        lines = ["## reprogate rebuild", "", f"**{code_span(description)}**", ""]
        lines += [f"- {code_span(redact(note))}" for note in notes[:50]]
        parts.insert(0, "\n".join(lines))
    return "\n\n---\n\n".join(parts)


def dispatch_command(workflow: str, ref: str, inputs: list[str]) -> CommandResult:
    pairs = dict(item.split("=", 1) for item in inputs if "=" in item)
    if len(pairs) != len(inputs) or len(pairs) > 25:
        raise UsageError("inputs are KEY=VALUE, at most 25")
    run = client_from_env().dispatch(repository_from_env(), workflow, ref, pairs)
    return CommandResult(ExitCode.OK, [str(run.get("html_url") or "dispatched (the server did not return the run; find it by its run-name)")])


def comment_command(pr: int, body_file: Path, marker: str) -> CommandResult:

    body = redact(read_text(body_file, str(body_file), 1024 * 1024))
    comment = client_from_env().upsert_comment(repository_from_env(), pr, marker, body)
    return CommandResult(ExitCode.OK, [str(comment.get("html_url", "comment updated"))])
