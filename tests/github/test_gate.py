"""`reprogate gate` and `reprogate github` against a local API held to GitHub's OpenAPI description,
driven by GitHub's own webhook examples."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from click.testing import Result

from support import EXAMPLES, REPO, git

Cli = Callable[..., Result]
LOCKS = REPO / "tests" / "fixtures" / "locks"
TOKEN = "ghs_" + "TestTokenValue0123456789abcdefABCDEF"
REPOSITORY = "octo/repro"


def octokit_available() -> bool:
    from support.github_api import OCTOKIT

    return (OCTOKIT / "openapi" / "generated" / "api.github.com.json").exists()


if not octokit_available():
    if os.environ.get("CI") == "true":
        raise RuntimeError("@octokit/openapi is missing under CI=true; .ci/run must install it")
    pytest.skip("@octokit/openapi and @octokit/webhooks-examples are not installed (npm)", allow_module_level=True)

from support.github_api import FakeGitHub, OpenAPI, serve, webhook  # noqa: E402
from support.verdicts import make_verdict  # noqa: E402


@pytest.fixture(scope="session")
def openapi() -> OpenAPI:
    return OpenAPI()


@pytest.fixture
def github(openapi: OpenAPI) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(openapi, REPOSITORY)
    server, _ = serve(fake)
    yield fake
    server.shutdown()
    server.server_close()



@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    shutil.copy(LOCKS / "before" / "requirements.txt", root / "requirements.lock.txt")
    (root / ".reprogate.yaml").write_text((root / ".reprogate.yaml").read_text() + "rebuild:\n  workflow: reference-rebuild.yml\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def commit(repo: Path, edit: Callable[[Path], Any]) -> tuple[str, str]:
    base = git(repo, "rev-parse", "HEAD")
    edit(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return base, git(repo, "rev-parse", "HEAD")


def bump_lock(repo: Path) -> tuple[str, str]:
    return commit(repo, lambda r: shutil.copy(LOCKS / "after" / "requirements.txt", r / "requirements.lock.txt"))


def docs_only(repo: Path) -> tuple[str, str]:
    return commit(repo, lambda r: (r / "NOTES.md").write_text("docs\n"))


def pr_event(action: str, base: str, head: str, *, fork: bool = False, labels: tuple[str, ...] = (), label: str | None = None, sender: str = "octocat") -> dict[str, Any]:
    event = webhook("pull_request", action)
    pr = event["pull_request"]
    event["repository"]["full_name"] = REPOSITORY
    event["repository"]["default_branch"] = "main"
    pr["base"]["sha"], pr["head"]["sha"] = base, head
    pr["base"]["repo"]["full_name"] = REPOSITORY
    pr["head"]["repo"]["full_name"] = "someone/repro-fork" if fork else REPOSITORY
    pr["labels"] = [{"name": name} for name in labels]
    event["sender"]["login"] = sender
    if label:
        event["label"] = {"name": label}
    return event


@pytest.fixture
def run_gate(cli: Cli, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    def run(event: dict[str, Any], name: str = "pull_request") -> Result:
        path = tmp_path / f"event-{len(github.requests)}.json"
        path.write_text(json.dumps(event))
        for key, value in {
            "GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path), "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": TOKEN,
            "GITHUB_API_URL": github.url, "GITHUB_ACTIONS": "true", "REPROGATE_GITHUB_WRITE_INTERVAL": "0",
            "GITHUB_OUTPUT": str(tmp_path / "outputs"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        }.items():
            monkeypatch.setenv(key, value)
        result = cli("gate", "--repo", str(repo))
        assert result.output.count(TOKEN) <= 1 and (TOKEN not in result.output or f"::add-mask::{TOKEN}" in result.output)
        assert "contract violation" not in result.output, result.output
        return result

    return run


def statuses(github: FakeGitHub) -> list[tuple[str, str]]:
    return [(s["context"], s["state"]) for s in github.statuses]


def test_lock_file_pr_dispatches_and_sets_pending(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    dispatch = next(r for r in github.requests if r[3] == "actions/create-workflow-dispatch")
    assert dispatch[1].endswith("/actions/workflows/reference-rebuild.yml/dispatches")
    assert dispatch[2]["ref"] == "main" and dispatch[2]["inputs"]["sha"] == head and dispatch[2]["inputs"]["record"] == "tiny/records/tiny.yaml" and dispatch[2]["return_run_details"] is True
    assert statuses(github) == [("reprogate/reproduction", "pending")]
    assert github.statuses[0]["target_url"] == f"https://github.com/{REPOSITORY}/actions/runs/4242"
    assert len(github.comments) == 1 and "six 1.16.0 -> 1.17.0" in github.comments[0]["body"]
    outputs = (tmp_path / "outputs").read_text()
    assert "rebuild-required=true\n" in outputs and "layers=framework\n" in outputs


def test_docs_only_pr_sets_success_without_dispatching(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    assert "actions/create-workflow-dispatch" not in github.operations()
    assert statuses(github) == [("reprogate/reproduction", "success")]
    assert github.statuses[0]["description"] == "no framework, driver, image or dataset change"


def test_fork_pr_label_from_a_user_without_write_does_not_dispatch(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.permissions["triager"] = "read"
    result = run_gate(pr_event("labeled", base, head, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="triager"))
    assert result.exit_code == 0
    assert "repos/get-collaborator-permission-level" in github.operations()
    assert "actions/create-workflow-dispatch" not in github.operations()
    assert statuses(github) == [("reprogate/reproduction", "pending")] and "waiting for a maintainer" in github.statuses[0]["description"]
    assert "no write permission" in result.output


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


def test_a_second_run_edits_the_same_comment(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head))
    run_gate(pr_event("reopened", base, head))
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


def test_baseline_label_needs_a_passing_verdict_for_each_promoted_record(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    def promote(r: Path) -> None:
        record = r / "records" / "startup.yaml"
        record.write_text(record.read_text() + "baseline:\n  promoted: true\n  by: maintainer\n")

    base, head = commit(repo, promote)
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline"))
    assert result.exit_code == 1 and ("reprogate/baseline", "failure") in statuses(github)
    assert "no baseline.verdict" in next(s["description"] for s in github.statuses if s["context"] == "reprogate/baseline")


def test_pull_request_target_is_refused(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head), "pull_request_target")
    assert result.exit_code == 2 and "refuses pull_request_target" in result.output and github.requests == []


def test_release_push_requires_a_green_reproduction(run_gate: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    event = {"ref": "refs/heads/release/1.0", "after": git(repo, "rev-parse", "HEAD"), "repository": {"full_name": REPOSITORY}}
    assert run_gate(event, "push").exit_code == 1
    github.statuses.append({"state": "success", "context": "reprogate/reproduction", "description": "reproduced"})
    assert run_gate(event, "push").exit_code == 0


@pytest.mark.parametrize("verdict, state", [(make_verdict("pass"), "success"), (make_verdict("fail", "metric"), "failure"), (make_verdict("fail", "preflight", True), "error")])
def test_status_from_a_verdict_is_always_terminal(cli: Cli, github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: dict[str, Any], state: str) -> None:
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(verdict))
    report = tmp_path / "report.md"
    report.write_text("## report\n" + "x" * 70_000)
    for key, value in {"GITHUB_REPOSITORY": REPOSITORY, "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": github.url, "GITHUB_SHA": "a" * 40, "REPROGATE_GITHUB_WRITE_INTERVAL": "0"}.items():
        monkeypatch.setenv(key, value)
    result = cli("github", "status", "--from-verdict", str(path), "--comment-report", str(report), "--pr", "2", "--description", "x" * 300)
    assert result.exit_code == 0, result.output
    assert github.statuses[0]["state"] == state and len(github.statuses[0]["description"]) <= 140
    assert len(github.comments[0]["body"]) <= 65_536 and "cut to GitHub" in github.comments[0]["body"]


def test_writes_beyond_a_burst_are_spaced(github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.github import client as client_module

    waits: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", lambda seconds: waits.append(seconds))
    gh = client_module.GitHubClient(TOKEN, api_url=github.url, write_interval=1.0)
    for i in range(7):
        gh.create_status(REPOSITORY, "a" * 40, "pending", f"ctx-{i}", "x")
    assert len(waits) == 2 and all(0 < w <= 1.0 for w in waits)  # the 6th and 7th writes waited
    assert gh.calls == 7
