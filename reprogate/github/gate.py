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

How a run reports (ARCHITECTURE.md, "The gate's outcome"): the facts it judges by are read once
each into frozen values (`Facts`: the base's settings and the gate's own statuses; the
`Assessment` of the diff) and passed down; every step returns a frozen `Step` of what it says and
why the run fails, if it does; the steps are added up in order, and `outcome` alone turns the sum
into the exit code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fnmatch
import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
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


@dataclass(frozen=True)
class Step:
    """What one step of a gate run says, in the order it said it, and why the run breaks a rule
    if it does. Steps return one instead of writing into a shared outcome, so what a run reports
    is the sum of its steps in order (`+`) and its exit code is decided in one place (`outcome`)."""

    messages: tuple[str, ...] = ()
    annotations: tuple[str, ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()  # (name, value); a later value of a name wins
    failures: tuple[str, ...] = ()  # why the run fails (exit 1); empty: no rule is broken

    def __add__(self, other: Step) -> Step:
        return Step(self.messages + other.messages, self.annotations + other.annotations, self.outputs + other.outputs, self.failures + other.failures)


def said(*messages: str) -> Step:
    return Step(messages=messages)


def failed(reason: str, *messages: str) -> Step:
    """A broken rule: the run exits 1 (`reason` is why; `messages` what the log says of it)."""
    return Step(messages=messages, failures=(reason,))


@dataclass(frozen=True)
class GateOutcome:
    """What a gate run reports, built once from its steps (`outcome`)."""

    code: ExitCode
    messages: tuple[str, ...]
    outputs: Mapping[str, str]
    annotations: tuple[str, ...]
    failures: tuple[str, ...]


def outcome(step: Step) -> GateOutcome:
    """The one place a gate run's exit code is set: 1 when a step recorded a broken rule, else 0.
    Refusals (2), unreachable GitHub (3) and crashes (4) leave as exceptions (cli/common.finish)."""
    code = ExitCode.FAILED if step.failures else ExitCode.OK
    return GateOutcome(code, step.messages, MappingProxyType(dict(step.outputs)), step.annotations, step.failures)


@dataclass(frozen=True)
class Facts:
    """What a run judges one commit by, read once and passed down: the settings (the base's, for a
    pull request) and the statuses (or check runs) the gate's own creator posted on the commit.
    `read` is what reading them said (statuses of the gate's contexts posted by someone else)."""

    config: Config
    statuses: tuple[Status, ...]
    read: Step = Step()


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


@dataclass(frozen=True)
class Plan:
    """What the gate will post, decided before anything is posted."""

    records: tuple[str, ...] = ()  # to rebuild
    baseline_dispatch: bool = False
    reproduction: tuple[str, str] | None = None  # (state, description) to post
    reproduction_on_dispatch: bool = False  # post `pending` with the run's link once dispatched
    baseline: tuple[str, str] | None = None
    comment: tuple[str, ...] = ()


def run_gate(event: Event, settings: Settings, client: GitHubClient | None) -> GateOutcome:
    return outcome(_run(event, settings, client))


def _run(event: Event, settings: Settings, client: GitHubClient | None) -> Step:
    if isinstance(event, OtherEvent) and event.name == "pull_request_target":
        raise UsageError("reprogate gate refuses pull_request_target (it would act on a fork's code with a write token); trigger the gate on pull_request")
    if settings.mode == "compute":
        return _compute(event, settings)
    if client is None:
        raise UsageError(f"gate --mode {settings.mode} needs a token (GITHUB_TOKEN)")
    gate = Gate(settings, client)
    if settings.mode == "publish":
        if not isinstance(event, WorkflowRunEvent):
            raise UsageError(f"gate --mode publish runs on workflow_run (the compute workflow finished), not on {type(event).__name__}")
        return gate.publish(event)
    if isinstance(event, PullRequestEvent):
        what = f" {event.label}" if event.label is not None else ""
        heard = said(f"pull request #{event.number} {event.action}{what} by {event.sender or 'unknown'} at {event.head_sha[:12]}")
        subject = _subject_of(event)
        return heard + gate.judge(subject, EventApprovals(client, event), gate.facts(subject))
    if isinstance(event, MergeGroupEvent):
        subject = Subject(event.repository, event.default_branch, event.head_sha, event.base_sha)
        return gate.judge(subject, NoApprovals(), gate.facts(subject))
    if isinstance(event, PushEvent):
        return gate.release_push(event)
    name = event.name if isinstance(event, OtherEvent) else type(event).__name__
    return said(f"event {name!r}: nothing to gate (pull_request, merge_group, workflow_run with --mode publish, and push to release branches are)")


def _subject_of(event: PullRequestEvent) -> Subject:
    return Subject(event.repository, event.default_branch, event.head_sha, event.base_sha, event.number, frozenset(event.labels), event.fork, event.new_head)


def _compute(event: Event, settings: Settings) -> Step:
    """The unprivileged half: judge, annotate, and leave the pull request number for the privileged half."""
    if not isinstance(event, PullRequestEvent):
        return said("gate --mode compute judges pull_request events; nothing to do")
    subject = _subject_of(event)
    config = _base_config(settings, subject.base)
    found = assess(settings.repo, settings.config_path, config, subject.base, subject.head)  # the head is the working tree: assess takes its top
    step = _report_assessment(found)
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
            "records": list(found.touched),
        }
        atomic_write(settings.result_file, json.dumps(result, indent=2) + "\n")
        step += said(f"wrote {settings.result_file} for the privileged workflow (pull request #{subject.number})")
    if found.invalid:
        step += failed(invalid_count(found))
    return step


def _base_config(settings: Settings, base: str, folder: Path | None = None) -> Config:

    top, rel = config_location(settings.repo, settings.config_path)
    return with_overrides(config_at(top, base, rel, folder), settings.overrides)


def _report_assessment(found: Assessment) -> Step:
    outputs = (
        ("layers", ",".join(found.detection.layers)),
        ("rebuild-required", "true" if found.reasons else "false"),
        ("records", ",".join(found.touched)),
        ("drift", ",".join(found.drift)),
    )
    messages = [f"invalid record: {line}" for line in found.invalid]
    messages += [f"rebuild required: {reason}" for reason in found.reasons]
    for path, changes in found.contract_changes.items():
        effects = sorted({c.effect for c in changes})
        fields = ", ".join(c.field for c in changes[:4]) + (f" and {len(changes) - 4} more" if len(changes) > 4 else "")
        messages.append(f"contract of {path} {'/'.join(effects)} ({fields}): the base's contract judges the rebuild")
    annotations = []
    if found.config_changed:
        annotations.append(
            workflow.annotation(
                "notice",
                f"this pull request changes {found.config_rel}; the gate uses the base branch's version, and the change itself needs a rebuild",
                found.config_rel,
                title="reprogate: configuration changed",
            )
        )
    for item in found.drift_findings[: workflow.ANNOTATIONS_PER_LEVEL]:  # the rest are in the comment and the outputs
        annotations.append(workflow.annotation("notice", item.message, item.path, item.location.line, item.location.col, title="reprogate: environment drift"))
    return Step(tuple(messages), tuple(annotations), outputs)


@dataclass(frozen=True)
class Gate:
    settings: Settings
    client: GitHubClient

    # what a run judges by ----------------------------------------------------------------------------

    def facts(self, subject: Subject) -> Facts:
        """The base's settings and the gate's own statuses on the head: read once per run."""
        return self._facts(subject.repository, subject.head, _base_config(self.settings, subject.base))

    def _facts(self, repo: str, sha: str, config: Config) -> Facts:
        """What the gate reads back to keep its rules (terminal states, first seen, the baseline's
        proof, one answer across bases): the commit statuses its own creator posted, or with
        `--publish check-run` the check runs of the two names its creator's app made, read as
        statuses (github/checks.py). Anyone else's status of the same context is no judgement."""
        if checks.publishes_status(self.settings.publish):
            every = self.client.statuses(repo, sha)
            mine = ours(every, config.status_creator)
            foreign = [s for s in every if s not in mine and s.context.lower() in (config.status_context.lower(), config.baseline_context.lower())]
            if not foreign:
                return Facts(config, tuple(mine))
            who = ", ".join(sorted({s.creator or "unknown" for s in foreign}))[:120]
            return Facts(
                config,
                tuple(mine),
                said(
                    f"ignored {len(foreign)} status(es) of {config.status_context} or {config.baseline_context} on {sha[:12]} not posted by "
                    f"{config.status_creator} (by {who}): only the gate's own statuses count"
                ),
            )
        runs = [run for name in (config.status_context, config.baseline_context) for run in self.client.check_runs(repo, sha, name)]
        return Facts(config, tuple(checks.as_statuses(runs, config.status_creator)))

    # pull requests ---------------------------------------------------------------------------------

    def judge(self, subject: Subject, approvals: Approvals, facts: Facts, tree: Path | None = None) -> Step:
        config, statuses = facts.config, facts.statuses
        current = latest(statuses, config.status_context, subject.base)  # a judgement of this (base, head) pair only
        asked_rebuild = subject.number is not None and approvals.applied_by_writer(config.rebuild_label)
        asked_baseline = subject.number is not None and approvals.applied_by_writer(config.baseline_label)
        step = facts.read + said(*getattr(approvals, "denied", ()))
        if subject.new_head and subject.number is not None:
            step += self._drop_stale_labels(subject, config, {config.rebuild_label: asked_rebuild, config.baseline_label: asked_baseline})
        if current is not None and not (asked_rebuild or asked_baseline):
            return step + said(
                f"{config.status_context} is already {current.state} on {subject.head[:12]} against base {subject.base[:12]}; "
                "this event changes nothing that is built, so nothing is posted"
            )
        try:
            found = assess(self.settings.repo, self.settings.config_path, config, subject.base, subject.head, tree)  # None: the working tree, from its top
            step += _report_assessment(found)
            plan = Plan()
            current_state = current.state if current else None
            if current is None or asked_rebuild:
                plan, planned = self._plan_reproduction(found, subject, config, asked_rebuild, current_state)
                step += planned
            if asked_baseline and not found.invalid:
                plan, planned = self._plan_baseline(plan, found, subject, config, statuses)
                step += planned
            baseline_now = latest(statuses, config.baseline_context, subject.base)
            return step + self._act(plan, found, subject, config, statuses, current_state, baseline_now.state if baseline_now else None)
        except (ReprogateError, OSError):
            raise  # refusals: their own exit codes (cli/common.finish)
        except Exception:
            self._crashed(subject, config)
            raise  # exit 4 (cli/common.finish)

    def _crashed(self, subject: Subject, config: Config) -> None:
        """A bug in reprogate while judging this head: the check says `error` (inconclusive), never
        `failure` (not reproduced) and never stays pending; the crash itself is reported by finish."""
        text = with_base("reprogate crashed while judging this head (internal error, exit 4): see the gate's log", subject.base)
        with contextlib.suppress(ReprogateError, OSError):  # GitHub unreachable too: the crash is still what the job reports
            self.client.create_status(subject.repository, subject.head, "error", config.status_context, text, None)

    def _post(self, subject: Subject, state: str, context: str, text: str, url: str | None, summary: str) -> None:
        """One judgement, shown as `--publish` says: a commit status, a check run, or both, with
        the same state and text (the check run's title) under the same name."""
        if checks.publishes_status(self.settings.publish):
            self.client.create_status(subject.repository, subject.head, state, context, text, url)
        if checks.publishes_check(self.settings.publish):
            checks.queue(self.client, subject.repository, subject.head, context, checks.CheckOutput(state, text, summary, details_url=url))

    def _drop_stale_labels(self, subject: Subject, config: Config, asked: dict[str, bool]) -> Step:
        step = Step()
        for label in (config.rebuild_label, config.baseline_label):
            if label in subject.labels and not asked[label]:
                assert subject.number is not None
                self.client.remove_label(subject.repository, subject.number, label)
                step += said(f"removed {label}: it approved an earlier commit; a writer applies it again for {subject.head[:12]}")
        return step

    def _plan_reproduction(self, found: Assessment, subject: Subject, config: Config, asked: bool, current: str | None) -> tuple[Plan, Step]:
        if found.invalid:
            text = f"{invalid_count(found)}: run reprogate validate"
            return Plan(reproduction=("failure", text)), failed(text)
        if not found.reasons and not asked:
            success = ("success", "no framework, driver, image, dataset, environment or configuration change")
            return Plan(reproduction=success if current is None else None), said("no watched change: nothing to rebuild")
        # the records the diff reaches; else the configured reference; else every record named
        records = found.touched or ((found.reference,) if found.reference else found.references)
        if not records:
            text = "a rebuild is required but .reprogate.yaml names no reference record"
            return Plan(reproduction=("failure", text)), failed(text)
        if subject.fork and not asked:
            note = f"fork pull request: waiting for a maintainer to apply {config.rebuild_label} to this commit"
            return Plan(reproduction=("pending", note) if current is None else None, comment=(plain(note) + ".",)), said(note)
        if current in TERMINAL_STATES:
            kept = f"A rebuild was asked for again; {code_span(config.status_context)} keeps its {current} until the rebuild posts its verdict."
            return Plan(records=records, comment=(kept,)), said(
                f"kept {config.status_context} = {current}: a terminal status is never replaced by pending; the rebuild posts the new one"
            )
        return Plan(records=records, reproduction_on_dispatch=True), Step()

    def _plan_baseline(self, plan: Plan, found: Assessment, subject: Subject, config: Config, statuses: tuple[Status, ...]) -> tuple[Plan, Step]:
        if not found.promoted:
            text = f"the {config.baseline_label} label is on, but the pull request promotes no record"
            return dataclasses.replace(plan, baseline=("failure", text)), failed(text)
        source = RebuildSource(
            subject.repository, self.settings.server_url, config.rebuild_workflow, config.rebuild_ref or subject.default_branch, config.status_context
        )
        verdict = reproduction_verdict(self.client, source, statuses, subject.base, subject.head)
        needed = {short_digest(digest) for digest in found.promoted.values()}
        if verdict.trusted_run and needed <= verdict.digests:
            return dataclasses.replace(plan, baseline=("success", f"{len(needed)} promoted record(s) reproduced by {verdict.why}")), Step()
        if verdict.trusted_run and verdict.state in ("failure", "error"):
            text = f"the rebuild of this commit did not pass ({verdict.why})"
            return dataclasses.replace(plan, baseline=("failure", text)), failed(text)
        waiting = ("pending", f"waiting for the rebuild of {len(found.promoted)} promoted record(s)")
        return dataclasses.replace(plan, records=tuple(sorted({*plan.records, *found.promoted})), baseline_dispatch=True, baseline=waiting), said(
            f"baseline: no trusted passing rebuild covers the promoted records yet ({verdict.why}); dispatching one"
        )

    def _act(
        self, plan: Plan, found: Assessment, subject: Subject, config: Config, statuses: tuple[Status, ...], current: str | None, baseline_now: str | None
    ) -> Step:
        """Post what the plan says. Every description names the base (trust.with_base), no
        terminal status of this (base, head) pair is replaced by `pending`, on either context, and
        no `success` stands over another base's answer on this commit (trust.across_bases)."""
        url = None
        step = Step()
        reproduction = plan.reproduction
        if plan.records:
            url, step = self._dispatch(plan, subject, config, found)
            if plan.reproduction_on_dispatch:
                reproduction = ("pending", f"rebuild of {len(plan.records)} record(s) dispatched ({', '.join(found.reasons) or 'asked for by label'})")
        if reproduction is not None:
            state, text = reproduction
            if state == "pending" and current in TERMINAL_STATES:
                step += said(f"kept {config.status_context} = {current}: a terminal status is never replaced by pending")
            else:
                state, text, held = self._one_answer(statuses, config.status_context, subject, state, with_base(text, subject.base))
                self._post(subject, state, config.status_context, text, url if state == "pending" else None, comment(found, plan, url))
                step += held + said(f"{config.status_context} = {state}: {text}")
        if plan.baseline is not None:
            state, text = plan.baseline
            if state == "pending" and baseline_now in TERMINAL_STATES:
                step += said(f"kept {config.baseline_context} = {baseline_now}: a terminal status is never replaced by pending; the rebuild posts the new one")
            else:
                state, text, held = self._one_answer(statuses, config.baseline_context, subject, state, with_base(text, subject.base))
                self._post(subject, state, config.baseline_context, text, url, comment(found, plan, url))
                step += held + said(f"{config.baseline_context} = {state}: {text}")
        if subject.number is not None and (plan.records or plan.comment or found.config_changed or found.contract_changes or found.invalid):
            self.client.upsert_comment(subject.repository, subject.number, MARKER, comment(found, plan, url))
        return step

    def _one_answer(self, statuses: tuple[Status, ...], context: str, subject: Subject, state: str, text: str) -> tuple[str, str, Step]:
        """The state this pair's judgement may take on the commit's shared context (trust.across_bases)."""
        posting = across_bases(statuses, context, subject.base, state, text)
        if posting.held_by is None:
            return posting.state, posting.description, Step()
        why = (
            f"{context}: {state} for base {subject.base[:12]} not posted: {subject.head[:12]} is {posting.held_by.state} against another base "
            f"({posting.held_by.description[:80]}); posting {posting.state}"
        )
        return posting.state, posting.description, failed(why, why) if posting.state == "error" else said(why)

    def _dispatch(self, plan: Plan, subject: Subject, config: Config, found: Assessment) -> tuple[str, Step]:
        """One dispatch for every record to rebuild: the rebuild workflow runs them as a matrix and
        posts one reproduction status for all of them, so no record's failure can be hidden by
        another record's later success on the same context."""
        ref = config.rebuild_ref or subject.default_branch
        correlation = f"reprogate-{subject.head[:12]}-{os.urandom(3).hex()}"
        since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        inputs = {
            "records": json.dumps(list(plan.records)),
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
        message = f"dispatched {config.rebuild_workflow} on {ref} for {len(plan.records)} record(s): {url}"
        return url, Step(messages=(message,), outputs=(("run-url", url), ("records", ",".join(plan.records))))

    # the privileged half of the public-repository setup ------------------------------------------

    def publish(self, event: WorkflowRunEvent) -> Step:

        if event.event != "pull_request":
            return said(f"the finished run was started by {event.event!r}, not pull_request: nothing to publish")
        number = read_result_number(self.settings.result_file)
        pr = self.client.pull_request(event.repository, number)
        subject = _subject_from_api(pr, event, number)
        if isinstance(subject, str):
            return said(subject)
        top = self.settings.repo
        for sha, what in ((subject.head, "head"), (subject.base, "base")):
            if not has_commit(top, sha):
                raise UsageError(
                    f"the pull request's {what} commit {sha[:12]} is not in {top}",
                    hint=f"fetch it first: git fetch origin refs/pull/{number}/head (and fetch-depth: 0)",
                )
        facts = self.facts(subject)  # read once: the judgement below takes them as they are
        config = facts.config
        approvals = ApiApprovals(self.client, subject.repository, number, subject.labels, first_seen(facts.statuses, config.status_context, subject.base))
        subject = dataclasses.replace(subject, new_head=approvals.first_seen is None)
        with tempfile.TemporaryDirectory(prefix="reprogate-head-") as tmp:
            tree = materialize(top, subject.head, Path(tmp))
            return self.judge(subject, approvals, facts, tree)

    # release branches ------------------------------------------------------------------------------

    def release_push(self, event: PushEvent) -> Step:
        config = load_config(self.settings.config_path if self.settings.config_path is not None else self.settings.repo)  # the pushed commit: only writers push
        config = with_overrides(config, self.settings.overrides)
        branch = event.ref.removeprefix("refs/heads/")
        if not any(fnmatch.fnmatch(branch, pattern) for pattern in RELEASE_BRANCHES):
            return said(f"push to {branch}: not a release branch; nothing to require")
        facts = self._facts(event.repository, event.after, config)
        mine = latest(facts.statuses, config.status_context)
        if mine and mine.state == "success":
            return facts.read + said(f"{branch} @ {event.after[:12]}: reproduction is green")
        state = mine.state if mine else "none"
        why = f"{branch} @ {event.after[:12]}: no green {config.status_context} status ({state}); a release needs a passing reproduction"
        return facts.read + failed(why, why)


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


__all__ = ["MARKER", "MODES", "Facts", "GateOutcome", "Settings", "Step", "Subject", "comment", "outcome", "run_gate"]
