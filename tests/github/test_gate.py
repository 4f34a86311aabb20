"""`reprogate gate` and `reprogate github` against a local API held to GitHub's OpenAPI description,
driven by GitHub's own webhook examples."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import git
from support.gate import (
    REPOSITORY,
    TOKEN,
    FakeGitHub,
    bump_lock,
    commit,
    docs_only,
    pr_event,
    require_octokit,
    statuses,
    webhook,
)
from support.verdicts import bound_verdict

require_octokit()

Cli = Callable[..., Result]


def test_lock_file_pr_dispatches_and_sets_pending(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    dispatch = next(r for r in github.requests if r[3] == "actions/create-workflow-dispatch")
    assert dispatch[1].endswith("/actions/workflows/reference-rebuild.yml/dispatches")
    assert dispatch[2]["ref"] == "main" and dispatch[2]["inputs"]["sha"] == head and dispatch[2]["return_run_details"] is True
    assert json.loads(dispatch[2]["inputs"]["records"]) == ["tiny/records/tiny.yaml"] and dispatch[2]["inputs"]["baseline"] == "false"
    assert statuses(github) == [("reprogate/reproduction", "pending")]
    assert github.statuses[0]["target_url"] == f"https://github.com/{REPOSITORY}/actions/runs/4242"
    assert len(github.comments) == 1 and "six 1.16.0 -> 1.17.0" in github.comments[0]["body"]
    outputs = (tmp_path / "outputs").read_text()
    assert "rebuild-required=true\n" in outputs and "layers=framework\n" in outputs and "records=tiny/records/tiny.yaml\n" in outputs


def test_docs_only_pr_sets_success_without_dispatching(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    assert "actions/create-workflow-dispatch" not in github.operations()
    assert statuses(github) == [("reprogate/reproduction", "success")]
    assert github.statuses[0]["description"].startswith("no framework, driver, image, dataset")


def test_fork_pr_label_from_a_user_without_write_does_not_dispatch(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.permissions["triager"] = "read"
    result = run_gate(pr_event("labeled", base, head, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="triager"))
    assert result.exit_code == 0
    assert "repos/get-collaborator-permission-level" in github.operations()
    assert "actions/create-workflow-dispatch" not in github.operations()
    assert statuses(github) == [("reprogate/reproduction", "pending")] and "waiting for a maintainer" in github.statuses[0]["description"]
    assert "triager applied reprogate/rebuild without write permission" in result.output


def test_fork_pr_label_from_a_maintainer_dispatches_and_a_new_push_needs_it_again(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.permissions["maintainer"] = "write"
    run_gate(pr_event("labeled", base, head, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="maintainer"))
    assert github.operations().count("actions/create-workflow-dispatch") == 1
    _, newer = commit(repo, lambda r: (r / "NOTES.md").write_text("more\n"))
    run_gate(pr_event("synchronize", base, newer, fork=True, labels=("reprogate/rebuild",), sender="someone"))
    assert "issues/remove-label" in github.operations()
    assert github.operations().count("actions/create-workflow-dispatch") == 1


def test_server_error_then_created_is_retried(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    github.faults["repos/create-commit-status"] = [(502, {}, {"message": "Bad Gateway"})]
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    assert github.operations().count("repos/create-commit-status") == 2 and statuses(github) == [("reprogate/reproduction", "success")]


def test_secondary_rate_limit_is_waited_out(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    github.faults["repos/create-commit-status"] = [(403, {"Retry-After": "1"}, {"message": "You have exceeded a secondary rate limit."})]
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    assert statuses(github) == [("reprogate/reproduction", "success")]


def test_a_new_head_edits_the_same_comment(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head))
    _, newer = commit(repo, lambda r: (r / "requirements.lock.txt").write_text((r / "requirements.lock.txt").read_text() + "\n"))
    run_gate(pr_event("synchronize", base, newer))
    assert len(github.comments) == 1
    assert github.operations().count("issues/create-comment") == 1 and github.operations().count("issues/update-comment") == 1


def test_dispatch_without_run_details_finds_the_run_by_its_correlation_id(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    github.dispatch_status = 204
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head))
    assert "actions/list-workflow-runs" in github.operations()
    assert github.statuses[0]["target_url"] == f"https://github.com/{REPOSITORY}/actions/runs/777"


def test_merge_group_reports_on_the_group_head(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    event = webhook("merge_group", None)
    event["repository"]["full_name"] = REPOSITORY
    event["merge_group"].update(head_sha=head, base_sha=base)
    assert run_gate(event, "merge_group").exit_code == 0
    status_path = next(r[1] for r in github.requests if r[3] == "repos/create-commit-status")
    assert status_path.endswith(f"/statuses/{head}")


def test_pull_request_target_is_refused(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head), "pull_request_target")
    assert result.exit_code == 2 and "refuses pull_request_target" in result.output and github.requests == []


def test_release_push_requires_a_green_reproduction(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    event = {"ref": "refs/heads/release/1.0", "after": git(repo, "rev-parse", "HEAD"), "repository": {"full_name": REPOSITORY}}
    assert run_gate(event, "push").exit_code == 1
    github.post_status(event["after"], "success", "reprogate/reproduction", "reproduced")
    assert run_gate(event, "push").exit_code == 0


@pytest.mark.parametrize(
    "verdict, diagnosis, infrastructure, state", [("pass", None, False, "success"), ("fail", "metric", False, "failure"), ("fail", "preflight", True, "error")]
)
def test_status_from_a_verdict_is_always_terminal(
    post_status: Cli, github: FakeGitHub, repo: Path, tmp_path: Path, verdict: str, diagnosis: str | None, infrastructure: bool, state: str
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(bound_verdict(repo, head, "tiny/records/tiny.yaml", verdict, diagnosis, infrastructure=infrastructure)))
    (tmp_path / "report.md").write_text("## a report the rebuild folder holds\n" + "x" * 70_000)
    job = "success" if verdict == "pass" else "failure"
    result = post_status(repo, head, "--from-verdict", str(path), "--pr", "2", "--description", "x" * 300, "--base", "b" * 40, result=job)
    assert result.exit_code == 0, result.output
    assert github.statuses[0]["state"] == state and len(github.statuses[0]["description"]) <= 140
    assert "; base bbbbbbbbbbbb" in github.statuses[0]["description"]
    body = github.comments[0]["body"]
    assert "test verdict" in body and "a report the rebuild folder holds" not in body, "the comment is rendered from the verdict, not report.md"


def test_writes_beyond_a_burst_are_spaced(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.github import client as client_module

    waits: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", lambda seconds: waits.append(seconds))
    gh = client_module.GitHubClient(TOKEN, api_url=github.url, write_interval=1.0)
    for i in range(7):
        gh.create_status(REPOSITORY, "a" * 40, "pending", f"ctx-{i}", "x")
    assert len(waits) == 2 and all(0 < w <= 1.0 for w in waits)  # the 6th and 7th writes waited
    assert gh.calls == 7


def test_a_configuration_in_a_subfolder_dispatches_repository_paths(cli: Cli, github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from support import EXAMPLES
    from support.gate import dispatches, gate_env

    top = tmp_path / "mono"
    shutil.copytree(EXAMPLES, top / "ml")
    (top / "README.md").write_text("a repository holding an ML project in ml/\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "base")
    base, head = commit(top, lambda r: (r / "ml" / "Dockerfile").write_text((r / "ml" / "Dockerfile").read_text() + "\nENV EXTRA=1\n"))
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pr_event("opened", base, head)))
    for key, value in gate_env(github, tmp_path, "pull_request", event).items():
        monkeypatch.setenv(key, value)
    result = cli("gate", "--repo", str(top), "--config", str(top / "ml" / ".reprogate.yaml"))
    assert result.exit_code == 0, result.output
    (sent,) = dispatches(github)
    assert json.loads(sent["inputs"]["records"]) == ["ml/records/behavioral.yaml", "ml/records/drill.yaml"]
    assert statuses(github) == [("reprogate/reproduction", "pending")]
