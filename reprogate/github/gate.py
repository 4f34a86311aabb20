"""`reprogate gate`: the pull-request flow that turns a rebuild into a required check.

Three modes, one judgement:
- `full` (private repositories, one workflow on pull_request / merge_group / push): judge the
  pull request and post statuses, the comment and the rebuild dispatch.
- `compute` (public repositories, unprivileged pull_request workflow with a read-only token):
  judge and annotate for the contributor, write a small result file; no API call at all.
- `publish` (public repositories, privileged workflow_run workflow running default-branch code):
  take only the pull request number from that result file, check it through the API (its head
  must be the commit the finished run tested), judge the head from git objects without running
  or checking out anything of it, and post.

Trust (docs/security.md): settings, label names, workflow, ref and the reference records come
from the base revision; a pull request that edits `.reprogate.yaml` is a watched change. Labels
count only when a writer applied them to this head. Only the statuses (and check runs) of the
configured creator are read back (github/statuses.py). A terminal status is never replaced by
`pending` for the same head, a `success` never stands over another base's answer that is not
success on the shared context (github/trust.across_bases), and events that change nothing that
is built post nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import fnmatch
import json
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.config import Config, load_config, with_overrides
from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import ReprogateError, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.detect.output import markdown
from reprogate.github import checks
from reprogate.github.client import GitHubClient, GitHubUnreachable
from reprogate.github.contract_diff import markdown_table
from reprogate.github.events import (
    Event,
    MergeGroupEvent,
    OtherEvent,
    PullRequestEvent,
    PushEvent,
    WorkflowRunEvent,
    read_payload,
)
from reprogate.github.judge import Assessment, assess
from reprogate.github.revision import config_at, config_location, has_commit, materialize
from reprogate.github.statuses import Status, ours
from reprogate.github.trust import (
    TERMINAL_STATES,
    ApiApprovals,
    Approvals,
    EventApprovals,
    RebuildSource,
    across_bases,
    first_seen,
    latest,
    reproduction_verdict,
    short_digest,
    with_base,
)
from reprogate.output import workflow
from reprogate.output.markdown import code_span, inline, plain

MARKER = "<!-- reprogate:gate -->"
RELEASE_BRANCHES = ("release/*", "releases/*")
MODES = ("full", "compute", "publish")
RESULT_KIND = "GateCompute"


@dataclass(frozen=True)
class Settings:
    """How this gate run was invoked (command-line options and the job's environment)."""

    repo: Path
    config_path: Path | None = None
    mode: str = "full"
    result_file: Path | None = None
    server_url: str = "https://github.com"
    overrides: dict[str, str] = field(default_factory=dict)  # REPROGATE_* inputs of the (trusted) workflow
    publish: str = checks.DEFAULT_PUBLISH  # both, check-run or status (github/checks.py)


@dataclass
class GateOutcome:
    code: ExitCode = ExitCode.OK
    messages: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    annotations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Subject:
    """The commit range being judged and what is known of its pull request."""

    repository: str
    default_branch: str
    head: str
    base: str
    number: int | None = None
    labels: frozenset[str] = frozenset()
    fork: bool = False
    new_head: bool = True  # no approval given earlier can cover this commit


class NoApprovals:
    """merge_group and push: nobody labels a merge queue entry."""

    denied: tuple[str, ...] = ()

    def applied_by_writer(self, label: str) -> bool:
        return False


@dataclass
class Plan:
    """What the gate will post, decided before anything is posted."""

    records: list[str] = field(default_factory=list)  # to rebuild
    baseline_dispatch: bool = False
    reproduction: tuple[str, str] | None = None  # (state, description) to post
    reproduction_on_dispatch: bool = False  # post `pending` with the run's link once dispatched
    baseline: tuple[str, str] | None = None
    comment: list[str] = field(default_factory=list)


def run_gate(event: Event, settings: Settings, client: GitHubClient | None) -> GateOutcome:
    outcome = GateOutcome()
    if isinstance(event, OtherEvent) and event.name == "pull_request_target":
        raise UsageError("reprogate gate refuses pull_request_target (it would act on a fork's code with a write token); trigger the gate on pull_request")
    if settings.mode == "compute":
        return _compute(event, settings, outcome)
    if client is None:
        raise UsageError(f"gate --mode {settings.mode} needs a token (GITHUB_TOKEN)")
    gate = Gate(settings, client, outcome)
    if settings.mode == "publish":
        if not isinstance(event, WorkflowRunEvent):
            raise UsageError(f"gate --mode publish runs on workflow_run (the compute workflow finished), not on {type(event).__name__}")
        gate.publish(event)
    elif isinstance(event, PullRequestEvent):
        what = f" {event.label}" if event.label is not None else ""
        outcome.messages.append(f"pull request #{event.number} {event.action}{what} by {event.sender or 'unknown'} at {event.head_sha[:12]}")
        gate.judge(_subject_of(event), EventApprovals(client, event))
    elif isinstance(event, MergeGroupEvent):
        gate.judge(Subject(event.repository, event.default_branch, event.head_sha, event.base_sha), NoApprovals())
    elif isinstance(event, PushEvent):
        gate.release_push(event)
    else:
        name = event.name if isinstance(event, OtherEvent) else type(event).__name__
        outcome.messages.append(
            f"event {name!r}: nothing to gate (pull_request, merge_group, workflow_run with --mode publish, and push to release branches are)"
        )
    return outcome


def _subject_of(event: PullRequestEvent) -> Subject:
    return Subject(event.repository, event.default_branch, event.head_sha, event.base_sha, event.number, frozenset(event.labels), event.fork, event.new_head)


def _compute(event: Event, settings: Settings, outcome: GateOutcome) -> GateOutcome:
    """The unprivileged half: judge, annotate, and leave the pull request number for the privileged half."""
    if not isinstance(event, PullRequestEvent):
        outcome.messages.append("gate --mode compute judges pull_request events; nothing to do")
        return outcome
    subject = _subject_of(event)
    config = _base_config(settings, subject.base)
    found = assess(settings.repo, settings.config_path, config, subject.base, subject.head)  # the head is the working tree: assess takes its top
    _report_assessment(found, outcome)
    if settings.result_file is not None:
        # Only `pull_request` is read by the privileged half, and checked through the API there;
        # the rest is for people reading the artifact.
        result = {
            "apiVersion": "reprogate/v1",
            "kind": RESULT_KIND,
            "pull_request": subject.number,
            "head_sha": subject.head,
            "base_sha": subject.base,
            "layers": found.detection.layers,
            "rebuild_required": bool(found.reasons),
            "records": found.touched,
        }
        atomic_write(settings.result_file, json.dumps(result, indent=2) + "\n")
        outcome.messages.append(f"wrote {settings.result_file} for the privileged workflow (pull request #{subject.number})")
    if found.invalid:
        outcome.code = ExitCode.FAILED
    return outcome


def _base_config(settings: Settings, base: str, folder: Path | None = None) -> Config:

    top, rel = config_location(settings.repo, settings.config_path)
    return with_overrides(config_at(top, base, rel, folder), settings.overrides)


def _report_assessment(found: Assessment, outcome: GateOutcome) -> None:

    outcome.outputs.update(
        {
            "layers": ",".join(found.detection.layers),
            "rebuild-required": "true" if found.reasons else "false",
            "records": ",".join(found.touched),
            "drift": ",".join(found.drift),
        }
    )
    for line in found.invalid:
        outcome.messages.append(f"invalid record: {line}")
    for reason in found.reasons:
        outcome.messages.append(f"rebuild required: {reason}")
    for path, changes in found.contract_changes.items():
        effects = sorted({c.effect for c in changes})
        fields = ", ".join(c.field for c in changes[:4]) + (f" and {len(changes) - 4} more" if len(changes) > 4 else "")
        outcome.messages.append(f"contract of {path} {'/'.join(effects)} ({fields}): the base's contract judges the rebuild")
    if found.config_changed:
        outcome.annotations.append(
            workflow.annotation(
                "notice",
                f"this pull request changes {found.config_rel}; the gate uses the base branch's version, and the change itself needs a rebuild",
                found.config_rel,
                title="reprogate: configuration changed",
            )
        )
    for item in found.drift_findings[: workflow.ANNOTATIONS_PER_LEVEL]:  # the rest are in the comment and the outputs
        outcome.annotations.append(
            workflow.annotation("notice", item.message, item.path, item.location.line, item.location.col, title="reprogate: environment drift")
        )


@dataclass
class Gate:
    settings: Settings
    client: GitHubClient
    outcome: GateOutcome

    # pull requests ---------------------------------------------------------------------------------

    def judge(self, subject: Subject, approvals: Approvals, tree: Path | None = None) -> None:
        config = _base_config(self.settings, subject.base)
        statuses = self._statuses(subject.repository, subject.head, config)
        current = latest(statuses, config.status_context, subject.base)  # a judgement of this (base, head) pair only
        asked_rebuild = subject.number is not None and approvals.applied_by_writer(config.rebuild_label)
        asked_baseline = subject.number is not None and approvals.applied_by_writer(config.baseline_label)
        self.outcome.messages += getattr(approvals, "denied", [])
        if subject.new_head and subject.number is not None:
            self._drop_stale_labels(subject, config, {config.rebuild_label: asked_rebuild, config.baseline_label: asked_baseline})
        if current is not None and not (asked_rebuild or asked_baseline):
            self.outcome.messages.append(
                f"{config.status_context} is already {current.state} on {subject.head[:12]} against base {subject.base[:12]}; "
                "this event changes nothing that is built, so nothing is posted"
            )
            return
        try:
            found = assess(self.settings.repo, self.settings.config_path, config, subject.base, subject.head, tree)  # None: the working tree, from its top
            _report_assessment(found, self.outcome)
            plan = Plan()
            current_state = current.state if current else None
            if current is None or asked_rebuild:
                self._plan_reproduction(plan, found, subject, config, asked_rebuild, current_state)
            if asked_baseline and not found.invalid:
                self._plan_baseline(plan, found, subject, config, statuses)
            baseline_now = latest(statuses, config.baseline_context, subject.base)
            self._act(plan, found, subject, config, statuses, current_state, baseline_now.state if baseline_now else None)
        except (ReprogateError, OSError):
            raise  # refusals: their own exit codes (cli/common.finish)
        except Exception:
            self._crashed(subject, config)
            raise  # exit 4 (cli/common.finish)

    def _crashed(self, subject: Subject, config: Config) -> None:
        """A bug in reprogate while judging this head: the check says `error` (inconclusive), never
        `failure` (not reproduced) and never stays pending; the crash itself is reported by finish."""
        text = with_base("reprogate crashed while judging this head (internal error, exit 4): see the gate's log", subject.base)
        try:
            self.client.create_status(subject.repository, subject.head, "error", config.status_context, text, None)
        except (ReprogateError, OSError):  # GitHub unreachable too: the crash is still what the job reports
            return
        self.outcome.messages.append(f"{config.status_context} = error: {text}")

    def _statuses(self, repo: str, sha: str, config: Config) -> list[Status]:
        """What the gate reads back to keep its rules (terminal states, first seen, the baseline's
        proof, one answer across bases): the commit statuses its own creator posted, or with
        `--publish check-run` the check runs of the two names its creator's app made, read as
        statuses (github/checks.py). Anyone else's status of the same context is no judgement."""
        if checks.publishes_status(self.settings.publish):
            every = self.client.statuses(repo, sha)
            mine = ours(every, config.status_creator)
            foreign = [s for s in every if s not in mine and s.context.lower() in (config.status_context.lower(), config.baseline_context.lower())]
            if foreign:
                who = ", ".join(sorted({s.creator or "unknown" for s in foreign}))[:120]
                self.outcome.messages.append(
                    f"ignored {len(foreign)} status(es) of {config.status_context} or {config.baseline_context} on {sha[:12]} not posted by "
                    f"{config.status_creator} (by {who}): only the gate's own statuses count"
                )
            return mine
        runs = [run for name in (config.status_context, config.baseline_context) for run in self.client.check_runs(repo, sha, name)]
        return checks.as_statuses(runs, config.status_creator)

    def _post(self, subject: Subject, state: str, context: str, text: str, url: str | None, summary: str) -> None:
        """One judgement, shown as `--publish` says: a commit status, a check run, or both, with
        the same state and text (the check run's title) under the same name."""
        if checks.publishes_status(self.settings.publish):
            self.client.create_status(subject.repository, subject.head, state, context, text, url)
        if checks.publishes_check(self.settings.publish):
            checks.queue(self.client, subject.repository, subject.head, context, checks.CheckOutput(state, text, summary, details_url=url))

    def _drop_stale_labels(self, subject: Subject, config: Config, asked: dict[str, bool]) -> None:
        for label in (config.rebuild_label, config.baseline_label):
            if label in subject.labels and not asked[label]:
                assert subject.number is not None
                self.client.remove_label(subject.repository, subject.number, label)
                self.outcome.messages.append(f"removed {label}: it approved an earlier commit; a writer applies it again for {subject.head[:12]}")

    def _plan_reproduction(self, plan: Plan, found: Assessment, subject: Subject, config: Config, asked: bool, current: str | None) -> None:
        if found.invalid:
            plan.reproduction = ("failure", f"{invalid_count(found)}: run reprogate validate")
            self.outcome.code = ExitCode.FAILED
            return
        if not found.reasons and not asked:
            if current is None:
                plan.reproduction = ("success", "no framework, driver, image, dataset, environment or configuration change")
            self.outcome.messages.append("no watched change: nothing to rebuild")
            return
        # the records the diff reaches; else the configured reference; else every record named
        records = found.touched or ([found.reference] if found.reference else found.references)
        if not records:
            plan.reproduction = ("failure", "a rebuild is required but .reprogate.yaml names no reference record")
            self.outcome.code = ExitCode.FAILED
            return
        if subject.fork and not asked:
            note = f"fork pull request: waiting for a maintainer to apply {config.rebuild_label} to this commit"
            if current is None:
                plan.reproduction = ("pending", note)
            plan.comment.append(plain(note) + ".")
            self.outcome.messages.append(note)
            return
        plan.records = records
        plan.reproduction_on_dispatch = current not in TERMINAL_STATES
        if current in TERMINAL_STATES:
            plan.comment.append(f"A rebuild was asked for again; {code_span(config.status_context)} keeps its {current} until the rebuild posts its verdict.")
            self.outcome.messages.append(
                f"kept {config.status_context} = {current}: a terminal status is never replaced by pending; the rebuild posts the new one"
            )

    def _plan_baseline(self, plan: Plan, found: Assessment, subject: Subject, config: Config, statuses: list[Status]) -> None:
        if not found.promoted:
            plan.baseline = ("failure", f"the {config.baseline_label} label is on, but the pull request promotes no record")
            self.outcome.code = ExitCode.FAILED
            return
        source = RebuildSource(
            subject.repository, self.settings.server_url, config.rebuild_workflow, config.rebuild_ref or subject.default_branch, config.status_context
        )
        verdict = reproduction_verdict(self.client, source, statuses, subject.base, subject.head)
        needed = {short_digest(digest) for digest in found.promoted.values()}
        if verdict.trusted_run and needed <= verdict.digests:
            plan.baseline = ("success", f"{len(needed)} promoted record(s) reproduced by {verdict.why}")
            return
        if verdict.trusted_run and verdict.state in ("failure", "error"):
            plan.baseline = ("failure", f"the rebuild of this commit did not pass ({verdict.why})")
            self.outcome.code = ExitCode.FAILED
            return
        self.outcome.messages.append(f"baseline: no trusted passing rebuild covers the promoted records yet ({verdict.why}); dispatching one")
        plan.records = sorted({*plan.records, *found.promoted})
        plan.baseline_dispatch = True
        plan.baseline = ("pending", f"waiting for the rebuild of {len(found.promoted)} promoted record(s)")

    def _act(
        self, plan: Plan, found: Assessment, subject: Subject, config: Config, statuses: list[Status], current: str | None, baseline_now: str | None
    ) -> None:
        """Post what the plan says. Every description names the base (trust.with_base), no
        terminal status of this (base, head) pair is replaced by `pending`, on either context, and
        no `success` stands over another base's answer on this commit (trust.across_bases)."""
        url = None
        if plan.records:
            url = self._dispatch(plan, subject, config, found)
            if plan.reproduction_on_dispatch:
                plan.reproduction = (
                    "pending",
                    f"rebuild of {len(plan.records)} record(s) dispatched ({', '.join(found.reasons) or 'asked for by label'})",
                )
        if plan.reproduction is not None:
            state, text = plan.reproduction
            if state == "pending" and current in TERMINAL_STATES:
                self.outcome.messages.append(f"kept {config.status_context} = {current}: a terminal status is never replaced by pending")
            else:
                state, text = self._one_answer(statuses, config.status_context, subject, state, with_base(text, subject.base))
                self._post(subject, state, config.status_context, text, url if state == "pending" else None, comment(found, plan, url))
                self.outcome.messages.append(f"{config.status_context} = {state}: {text}")
        if plan.baseline is not None:
            state, text = plan.baseline
            if state == "pending" and baseline_now in TERMINAL_STATES:
                self.outcome.messages.append(
                    f"kept {config.baseline_context} = {baseline_now}: a terminal status is never replaced by pending; the rebuild posts the new one"
                )
            else:
                state, text = self._one_answer(statuses, config.baseline_context, subject, state, with_base(text, subject.base))
                self._post(subject, state, config.baseline_context, text, url, comment(found, plan, url))
                self.outcome.messages.append(f"{config.baseline_context} = {state}: {text}")
        if subject.number is not None and (plan.records or plan.comment or found.config_changed or found.contract_changes or found.invalid):
            self.client.upsert_comment(subject.repository, subject.number, MARKER, comment(found, plan, url))

    def _one_answer(self, statuses: list[Status], context: str, subject: Subject, state: str, text: str) -> tuple[str, str]:
        """The state this pair's judgement may take on the commit's shared context (trust.across_bases)."""
        posting = across_bases(statuses, context, subject.base, state, text)
        if posting.held_by is not None:
            self.outcome.messages.append(
                f"{context}: {state} for base {subject.base[:12]} not posted: {subject.head[:12]} is {posting.held_by.state} against another base "
                f"({posting.held_by.description[:80]}); posting {posting.state}"
            )
            if posting.state == "error":
                self.outcome.code = ExitCode.FAILED
        return posting.state, posting.description

    def _dispatch(self, plan: Plan, subject: Subject, config: Config, found: Assessment) -> str:
        """One dispatch for every record to rebuild: the rebuild workflow runs them as a matrix and
        posts one reproduction status for all of them, so no record's failure can be hidden by
        another record's later success on the same context."""
        ref = config.rebuild_ref or subject.default_branch
        correlation = f"reprogate-{subject.head[:12]}-{os.urandom(3).hex()}"
        since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        inputs = {
            "records": json.dumps(plan.records),
            "sha": subject.head,
            "base": subject.base,
            "nonce": secrets.token_urlsafe(24),  # the status job accepts only verdicts that carry it
            "context": config.status_context,  # as the base's configuration names it: the status job reads no configuration
            "pr": str(subject.number or ""),
            "correlation": correlation,
            "baseline": "true" if plan.baseline_dispatch else "false",
        }
        run = self.client.dispatch(subject.repository, config.rebuild_workflow, ref, inputs)
        url = run.get("html_url") if isinstance(run.get("html_url"), str) else None
        if not url:
            found_run = self.client.find_run(subject.repository, config.rebuild_workflow, correlation, since)
            candidate = (found_run or {}).get("html_url")
            url = candidate if isinstance(candidate, str) else f"{self.settings.server_url}/{subject.repository}/actions/workflows/{config.rebuild_workflow}"
        self.outcome.outputs["run-url"] = url
        self.outcome.outputs["records"] = ",".join(plan.records)
        self.outcome.messages.append(f"dispatched {config.rebuild_workflow} on {ref} for {len(plan.records)} record(s): {url}")
        return url

    # the privileged half of the public-repository setup ------------------------------------------

    def publish(self, event: WorkflowRunEvent) -> None:

        if event.event != "pull_request":
            self.outcome.messages.append(f"the finished run was started by {event.event!r}, not pull_request: nothing to publish")
            return
        number = read_result_number(self.settings.result_file)
        pr = self.client.pull_request(event.repository, number)
        subject = _subject_from_api(pr, event, number)
        if isinstance(subject, str):
            self.outcome.messages.append(subject)
            return
        top = self.settings.repo
        for sha, what in ((subject.head, "head"), (subject.base, "base")):
            if not has_commit(top, sha):
                raise UsageError(
                    f"the pull request's {what} commit {sha[:12]} is not in {top}",
                    hint=f"fetch it first: git fetch origin refs/pull/{number}/head (and fetch-depth: 0)",
                )
        config = _base_config(self.settings, subject.base)
        statuses = self._statuses(subject.repository, subject.head, config)
        approvals = ApiApprovals(self.client, subject.repository, number, subject.labels, first_seen(statuses, config.status_context, subject.base))
        subject = dataclasses.replace(subject, new_head=approvals.first_seen is None)
        with tempfile.TemporaryDirectory(prefix="reprogate-head-") as tmp:
            tree = materialize(top, subject.head, Path(tmp))
            self.judge(subject, approvals, tree)

    # release branches ------------------------------------------------------------------------------

    def release_push(self, event: PushEvent) -> None:
        config = load_config(self.settings.config_path if self.settings.config_path is not None else self.settings.repo)  # the pushed commit: only writers push
        config = with_overrides(config, self.settings.overrides)
        branch = event.ref.removeprefix("refs/heads/")
        if not any(fnmatch.fnmatch(branch, pattern) for pattern in RELEASE_BRANCHES):
            self.outcome.messages.append(f"push to {branch}: not a release branch; nothing to require")
            return
        mine = latest(self._statuses(event.repository, event.after, config), config.status_context)
        if mine and mine.state == "success":
            self.outcome.messages.append(f"{branch} @ {event.after[:12]}: reproduction is green")
            return
        self.outcome.code = ExitCode.FAILED
        self.outcome.messages.append(
            f"{branch} @ {event.after[:12]}: no green {config.status_context} status ({mine.state if mine else 'none'}); a release needs a passing reproduction"
        )


def read_result_number(path: Path | None) -> int:
    """The one value the privileged half takes from the unprivileged run: a pull request number."""

    if path is None:
        raise UsageError("gate --mode publish needs --result-file (the compute workflow's artifact)")
    data = read_payload(path)
    number = data.get("pull_request")
    if data.get("kind") != RESULT_KIND or isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**31:
        raise UsageError(f"{path}: not a gate result (kind: {RESULT_KIND}, pull_request: a positive integer)")
    return number


def _subject_from_api(pr: dict[str, Any], event: WorkflowRunEvent, number: int) -> Subject | str:
    """The subject from GitHub's own record of the pull request, after checking it is the one the
    finished run tested; a string says why there is nothing to publish."""

    head, base = pr.get("head"), pr.get("base")
    if not isinstance(head, dict) or not isinstance(base, dict) or not isinstance(head.get("sha"), str) or not isinstance(base.get("sha"), str):
        raise GitHubUnreachable(f"GET pulls/{number}: the answer has no head and base sha")
    base_repo = base["repo"].get("full_name") if isinstance(base.get("repo"), dict) else None
    head_repo = head["repo"].get("full_name") if isinstance(head.get("repo"), dict) else None
    if base_repo != event.repository:
        raise UsageError(f"pull request #{number} belongs to {str(base_repo)[:100]}, not {event.repository}: the result file is not this repository's")
    if head["sha"] != event.head_sha:
        return f"pull request #{number} is now at {head['sha'][:12]}; the finished run tested {event.head_sha[:12]}: a newer run will publish"
    if pr.get("state") != "open":
        return f"pull request #{number} is {str(pr.get('state'))[:20]}: nothing to publish"
    labels = frozenset(label["name"] for label in pr.get("labels") or [] if isinstance(label, dict) and isinstance(label.get("name"), str))
    return Subject(event.repository, event.default_branch, head["sha"], base["sha"], number, labels, head_repo != event.repository)


def invalid_count(found: Assessment) -> str:
    """ "1 invalid record (2 errors)": records counted once, however many errors each has."""
    records, errors = len(found.invalid_records) or 1, len(found.invalid)
    said = f"{records} invalid record{'s' if records != 1 else ''}"
    return said + (f" ({errors} errors)" if errors > records else "")


def comment(found: Assessment, plan: Plan, url: str | None) -> str:
    """The one sticky comment: what was dispatched or is awaited, and why."""

    lines = ["## reprogate", ""]
    if found.invalid:
        lines.append(f"**{invalid_count(found)}**: `reprogate/reproduction` fails until they are fixed (no rebuild is asked for).")
        lines += [f"- {plain(line)}" for line in found.invalid[:30]]
        lines.append("")
    if url and plan.records:
        lines.append(f"The rebuild of {len(plan.records)} record(s) was dispatched: [run]({url}). The reproduction status will report its verdict.")
        lines += [f"- {code_span(path)}" for path in plan.records]
        if found.reasons:
            lines += ["", "Why: " + "; ".join(plain(reason) for reason in found.reasons)]
        lines.append("")
    lines += plan.comment
    if found.config_changed:
        lines += [
            "",
            (
                f"**This pull request changes {code_span(found.config_rel)}.** The gate used the base branch's version; "
                "the change takes effect once merged, and counts as a watched change."
            ),
        ]

    for path, changes in found.contract_changes.items():
        lines += ["", *markdown_table(path, changes)]
    if found.drift_findings:
        lines += ["", "Environment drift (the pull request changes what the reference ran in; the rebuild uses the pull request's environment):"]
        lines += [f"- {code_span(d.path)} {code_span(d.field)}: {inline(d.message)}" for d in found.drift_findings[:50]]
    lines += ["", markdown(found.detection)]
    return "\n".join(lines)


__all__ = ["MARKER", "MODES", "GateOutcome", "Settings", "Subject", "comment", "run_gate"]
