"""`reprogate gate`: the pull-request flow that turns a rebuild into a required check.

On pull_request (opened, synchronize, reopened, labeled, unlabeled) and merge_group: validate
the records, detect what the diff changes, and either dispatch the reference rebuild (status
`pending` with a link to the run, one sticky comment) or post `success` at once, so a required
check never waits forever. The baseline label requires a passing verdict for every record the PR
promotes (second status). On push to a release branch: require a green reproduction for the head.

Security (../shared/reference/github.md §2): the rebuild is dispatched on the default branch, so
the workflow definition and reprogate version are the default branch's; a fork's PR dispatches
only when the rebuild label was applied, for this head commit, by a user with write or admin
permission (checked through the API: triage users can label too); pull_request_target is refused.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.config import Config
from reprogate.core.diagnostics import ExitCode
from reprogate.github.client import GitHubClient, GitHubError, GitHubUnreachable

MARKER = "<!-- reprogate:gate -->"
WRITE_PERMISSIONS = {"admin", "write", "maintain"}
RELEASE_BRANCHES = ("release/*", "releases/*")


@dataclass
class GateResult:
    code: ExitCode = ExitCode.OK
    messages: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Event:
    name: str
    repository: str
    payload: dict[str, Any]

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Event":
        path = env.get("GITHUB_EVENT_PATH")
        if not path:
            raise GitHubError("GITHUB_EVENT_PATH is not set: gate runs inside a GitHub Actions job")
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        repository = env.get("GITHUB_REPOSITORY") or payload.get("repository", {}).get("full_name", "")
        return cls(env.get("GITHUB_EVENT_NAME", ""), repository, payload)


def run_gate(event: Event, config: Config, repo_dir: Path, client: GitHubClient, server_url: str = "https://github.com") -> GateResult:
    result = GateResult()
    if event.name == "pull_request_target":
        result.code = ExitCode.USAGE
        result.messages.append("reprogate gate refuses pull_request_target (it would act on a fork's code with a write token); trigger the gate on pull_request")
        return result
    if event.name == "push":
        return _release_push(event, config, client, result)
    if event.name not in ("pull_request", "merge_group"):
        result.messages.append(f"event {event.name!r}: nothing to gate (pull_request, merge_group and push to release branches are)")
        return result
    pr = event.payload.get("pull_request") or {}
    if event.name == "merge_group":
        group = event.payload["merge_group"]
        head, base, number, labels, fork = group["head_sha"], group["base_sha"], None, [], False
    else:
        head, base, number = pr["head"]["sha"], pr["base"]["sha"], int(pr["number"])
        labels = [label["name"] for label in pr.get("labels", [])]
        head_repo = (pr["head"].get("repo") or {}).get("full_name")
        fork = head_repo != event.repository
    context = config.status_context

    invalid = _invalid_records(config)
    if invalid:
        client.create_status(event.repository, head, "failure", context, f"{len(invalid)} invalid record(s): run reprogate validate")
        result.code = ExitCode.FAILED
        result.messages += [f"invalid record: {line}" for line in invalid]
        return result

    from reprogate.detect.run import detect

    detection = detect(repo_dir, base, head, config)
    result.outputs.update({"layers": ",".join(detection.layers), "rebuild-required": "true" if detection.rebuild_required else "false"})
    asked = config.rebuild_label in labels
    if detection.rebuild_required or asked:
        _rebuild(event, config, client, result, detection, head, number, fork, asked, server_url)
    else:
        client.create_status(event.repository, head, "success", context, "no framework, driver, image or dataset change")
        result.messages.append("no watched layer changed: status success")
    if config.baseline_label in labels and number is not None:
        _baseline(event, config, client, result, detection, head, repo_dir)
    return result


def _invalid_records(config: Config) -> list[str]:
    if not config.records:
        return []
    from reprogate.validate.runner import Options, validate

    report = validate([str(config.folder / glob) for glob in config.records], Options())
    return [f"{d.path}:{d.location.line} {d.field} {d.message}" for f in report.files for d in f.errors] + [d.message for d in report.problems if d.severity.value == "error"]


def _rebuild(event: Event, config: Config, client: GitHubClient, result: GateResult, detection: Any, head: str, number: int | None, fork: bool, asked: bool, server_url: str) -> None:
    repo, payload = event.repository, event.payload
    why = ", ".join(detection.layers) or "the rebuild label"
    if fork:
        action, label, sender = payload.get("action"), (payload.get("label") or {}).get("name"), (payload.get("sender") or {}).get("login", "")
        if action == "synchronize" and asked and number is not None:
            client.remove_label(repo, number, config.rebuild_label)  # the approval was for the previous commit
        approved = action == "labeled" and label == config.rebuild_label and client.permission(repo, sender) in WRITE_PERMISSIONS
        if not approved:
            note = f"fork PR: waiting for a maintainer to apply {config.rebuild_label} to this commit"
            client.create_status(repo, head, "pending", config.status_context, note)
            if number is not None:
                client.upsert_comment(repo, number, MARKER, _comment(detection, None, note))
            result.messages.append(note + (f" ({sender} has no write permission)" if action == "labeled" and label == config.rebuild_label else ""))
            return
    default_branch = config.rebuild_ref or payload.get("repository", {}).get("default_branch", "main")
    correlation = f"reprogate-{head[:12]}-{os.urandom(3).hex()}"
    since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    inputs = {"record": config.reference or "", "sha": head, "pr": str(number or ""), "correlation": correlation}
    run = client.dispatch(repo, config.rebuild_workflow, default_branch, inputs)
    url = run.get("html_url")
    if not url:
        found = client.find_run(repo, config.rebuild_workflow, correlation, since)
        url = (found or {}).get("html_url") or f"{server_url}/{repo}/actions/workflows/{config.rebuild_workflow}"
    client.create_status(repo, head, "pending", config.status_context, f"rebuild of the reference dispatched ({why})", url)
    if number is not None:
        client.upsert_comment(repo, number, MARKER, _comment(detection, url, None))
    result.outputs["run-url"] = url
    result.messages.append(f"dispatched {config.rebuild_workflow} on {default_branch}: {url}")


def _comment(detection: Any, url: str | None, waiting: str | None) -> str:
    from reprogate.detect.output import markdown

    lines = ["## reprogate", ""]
    if url:
        lines.append(f"The reference rebuild was dispatched: [{url.rsplit('/', 1)[-1]}]({url}). The `reprogate/reproduction` status will report its verdict.")
    if waiting:
        lines.append(waiting + ".")
    lines += ["", markdown(detection)]
    return "\n".join(lines)


def _baseline(event: Event, config: Config, client: GitHubClient, result: GateResult, detection: Any, head: str, repo_dir: Path) -> None:
    from reprogate.core.canonical import canonical_digest
    from reprogate.core.documents import DocumentError, load_document

    promoted = sorted({c.path for c in detection.changes if c.layer == "records" and c.kind == "promoted"})
    problems = []
    for path in promoted:
        try:
            record = load_document(repo_dir / path).data
            verdict_path = ((record.get("baseline") or {}).get("verdict") or {}).get("path")
            if not verdict_path:
                problems.append(f"{path}: no baseline.verdict")
                continue
            root = _root_of(repo_dir / path)
            verdict = json.loads((root / verdict_path).read_text())
            expected = canonical_digest({k: v for k, v in record.items() if k != "baseline"})
            if verdict.get("verdict") != "pass":
                problems.append(f"{path}: its verdict is {verdict.get('verdict')}")
            elif verdict.get("record", {}).get("digest") != expected:
                problems.append(f"{path}: the verdict is for another version of the record")
        except (DocumentError, OSError, ValueError, AttributeError) as exc:
            problems.append(f"{path}: {exc}")
    if not promoted:
        problems.append(f"the {config.baseline_label} label is on, but the PR promotes no record")
    state = "failure" if problems else "success"
    description = "; ".join(problems) if problems else f"{len(promoted)} promoted record(s) with passing verdicts"
    client.create_status(event.repository, head, state, config.baseline_context, description)
    result.messages.append(f"baseline: {state}: {description}")
    if problems:
        result.code = ExitCode.FAILED


def _root_of(record: Path) -> Path:
    from reprogate.core.config import repository_root

    return repository_root(record.parent)


def _release_push(event: Event, config: Config, client: GitHubClient, result: GateResult) -> GateResult:
    ref = str(event.payload.get("ref", ""))
    branch = ref.removeprefix("refs/heads/")
    if not any(fnmatch.fnmatch(branch, pattern) for pattern in RELEASE_BRANCHES):
        result.messages.append(f"push to {branch}: not a release branch; nothing to require")
        return result
    sha = event.payload.get("after") or event.payload.get("head_commit", {}).get("id")
    statuses = client.combined_status(event.repository, sha).get("statuses", [])
    mine = next((s for s in statuses if s.get("context", "").lower() == config.status_context.lower()), None)
    if mine and mine.get("state") == "success":
        result.messages.append(f"{branch} @ {sha[:12]}: reproduction is green")
        return result
    result.code = ExitCode.FAILED
    result.messages.append(f"{branch} @ {sha[:12]}: no green {config.status_context} status ({mine.get('state') if mine else 'none'}); a release needs a passing reproduction")
    return result


def post_verdict(client: GitHubClient, repo: str, sha: str, verdict: dict[str, Any], context: str, target_url: str | None) -> str:
    """The terminal status after a rebuild: success, failure, or error for an inconclusive one."""
    if verdict.get("verdict") == "pass":
        state, text = "success", "reproduced: " + verdict.get("record", {}).get("level", "") + " contract held"
    elif verdict.get("infrastructure"):
        state, text = "error", f"rebuild could not run ({verdict.get('diagnosis')}): inconclusive"
    else:
        state, text = "failure", f"not reproduced: first difference at {verdict.get('diagnosis')}"
    client.create_status(repo, sha, state, context, text, target_url)
    return state


__all__ = ["Event", "GateResult", "GitHubUnreachable", "MARKER", "post_verdict", "run_gate"]
