"""Issue 38's attacks on the gate and the status job (the GitHub half), each run the way it was
found — pull_request webhook payloads from GitHub's own examples through `reprogate gate`, the
status job's `reprogate github status` — against the API stand-in held to GitHub's OpenAPI
description. Each failed on 0.5.0."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import git
from support.gate import FakeGitHub, bump_lock, commit, dispatches, pr_event, require_octokit, statuses, trusted_run
from support.verdicts import bound_verdict, record_digest_at

from reprogate.github import checks
from reprogate.github.client import GitHubClient

require_octokit()

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("operation", "status"),
    [
        ("repos/list-commit-statuses-for-ref", 200),  # read as "no status yet": pending posted over whatever was there
        ("issues/list-comments", 200),  # read as "no comment yet": a second sticky comment
        ("repos/create-commit-status", 403),  # read as GitHub's refusal (exit 1): it is no answer of GitHub's
    ],
)
@pytest.mark.parametrize("depth", [900, 5000])
def test_an_over_nested_api_answer_is_exit_3_not_an_answer(run_gate: Run, github: FakeGitHub, repo: Path, operation: str, status: int, depth: int) -> None:
    github.faults[operation] = [(status, {}, deep(depth))] * 5
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 3, result.output
    if operation == "repos/list-commit-statuses-for-ref":
        assert statuses(github) == [], "nothing is posted on an answer the gate could not read"


def duplicated(verdict: dict[str, Any], key: str, first: Any) -> str:
    """The verdict as JSON with `key` written twice at the top level: `first`, then its own value (which a last-wins reader keeps)."""
    body = json.dumps(verdict, indent=2)
    return body.replace("{\n", "{\n  " + json.dumps(key) + ": " + json.dumps(first) + ",\n", 1)


def test_a_verdict_with_a_key_twice_is_refused_by_report_badge_and_github_status(
    cli: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path
) -> None:
    """`"verdict": "fail"` first and `"verdict": "pass"` after: jq and a reviewer's eye read the
    first, Python's json the last. Nothing may read it as a pass."""
    head = git(repo, "rev-parse", "HEAD")
    path = tmp_path / "verdict.json"
    path.write_text(duplicated(bound_verdict(repo, head, TINY), "verdict", "fail"))
    for command in (("report", str(path)), ("badge", str(path))):
        done = cli(*command)
        assert done.exit_code == 2 and "the key 'verdict' twice (first at line 2, again at line 5)" in done.output, (command, done.output)
    posted = post_status(repo, head, "--from-verdict", str(path), "--expect-records", json.dumps([TINY]))
    assert posted.exit_code == 0 and statuses(github, head) == [("reprogate/reproduction", "error")], posted.output
    assert "'verdict' twice" in posted.output


def test_a_pass_whose_own_test_failed_is_no_pass(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    made = bound_verdict(repo, head, TINY)
    made["tests"] = [{"test": "t prediction interval (one rebuild seed)", "metric": "val_loss", "passed": False}]
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(made))
    assert post_status(repo, head, "--from-verdict", str(path), "--expect-records", json.dumps([TINY])).exit_code == 0
    assert statuses(github, head) == [("reprogate/reproduction", "error")]
    assert "did not pass" in github.statuses[-1]["description"]


# 38.8: only the gate's own statuses count ------------------------------------------------------

CI_BOT = "ci-bot[bot]"  # another creator a fork can steer: a service that posts what the fork's code prints


def promote_startup(root: Path) -> None:
    record = root / "records" / "startup.yaml"
    record.write_text(record.read_text() + "baseline:\n  promoted: true\n  by: maintainer\n")


def test_a_success_from_another_creator_is_not_already_success(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """A CI bot posts `success` on reprogate/reproduction, naming the base, before the gate runs:
    0.5.0 read it as its own ("already success: nothing posted") and never dispatched the rebuild."""
    base, head = bump_lock(repo)
    github.post_status(head, "success", "reprogate/reproduction", f"reproduced: bitwise contract held; base {base[:12]}", creator=CI_BOT)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    assert len(dispatches(github)) == 1 and statuses(github, head)[-1] == ("reprogate/reproduction", "pending")
    assert f"not posted by github-actions[bot] (by {CI_BOT})" in result.output


def test_a_success_from_another_creator_is_no_baseline_proof(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """The trusted rebuild of this head failed; a CI bot then posts `success` naming the promoted
    record's digest and linking to that same trusted run. 0.5.0 promoted the baseline on it."""
    base, head = commit(repo, promote_startup)
    github.permissions["maintainer"] = "write"
    digest = record_digest_at(repo, head, "records/startup.yaml").rsplit(":", 1)[-1][:12]
    run = trusted_run(github, head)
    github.post_status(head, "failure", "reprogate/reproduction", f"not reproduced: startup first differs at steps; base {base[:12]}", run)
    github.post_status(head, "success", "reprogate/reproduction", f"reproduced: startup contract held; base {base[:12]}; record {digest}", run, creator=CI_BOT)
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert ("reprogate/baseline", "success") not in statuses(github, head), result.output
    assert statuses(github, head)[-1] == ("reprogate/baseline", "failure") and "did not pass" in github.statuses[-1]["description"]


def test_an_app_configured_as_the_creator_is_the_only_one_read(run_gate: Run, github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate that posts as a GitHub App (status-creator: my-gate[bot]) reads only that app's
    statuses: github-actions[bot]'s success (any workflow's GITHUB_TOKEN) is not its own."""
    monkeypatch.setenv("REPROGATE_STATUS_CREATOR", "my-gate[bot]")
    base, head = bump_lock(repo)
    github.post_status(head, "success", "reprogate/reproduction", f"reproduced; base {base[:12]}")  # github-actions[bot]
    result = run_gate(pr_event("opened", base, head))
    assert len(dispatches(github)) == 1, result.output


# 38.7: one commit, one answer across bases -----------------------------------------------------


def test_a_second_base_cannot_turn_a_failed_commit_green(run_gate: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A fork's head X changes the lock file against main; its rebuild fails. The same fork opens
    X -> dev, where dev already has the same lock file: nothing watched differs. 0.5.0 posted
    `success` on X, the newest status of the context, which the first pull request's required
    check reads: the failed change could merge into main."""
    main = git(repo, "rev-parse", "HEAD")
    _, head = bump_lock(repo)
    git(repo, "branch", "dev", head)  # dev moved on to the same lock file (and is the fork's base, too)
    dev = head
    _, x = commit(repo, lambda r: (r / "NOTES.md").write_text("the fork's commit\n"))
    github.permissions["maintainer"] = "write"
    first = pr_event("labeled", main, x, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="maintainer", number=2)
    assert run_gate(first).exit_code == 0 and len(dispatches(github)) == 1
    nonce = dispatches(github)[0]["inputs"]["nonce"]
    verdict = tmp_path / "verdict.json"
    made = bound_verdict(repo, x, TINY, "fail", "steps", nonce=nonce)
    made["run"]["id"] = "9001"
    verdict.write_text(json.dumps(made))
    trusted_run(github, x, 9001)
    failed = post_status(repo, x, "--from-verdict", str(verdict), "--expect-records", json.dumps([TINY]), "--base", main, nonce=nonce, run_id="9001")
    assert failed.exit_code == 0 and statuses(github, x)[-1] == ("reprogate/reproduction", "failure"), failed.output
    second = run_gate(pr_event("opened", dev, x, fork=True, number=3))
    assert statuses(github, x)[-1][1] != "success", second.output
    assert statuses(github, x)[-1] == ("reprogate/reproduction", "error")
    assert f"failure against base {main[:12]}" in github.statuses[-1]["description"] and f"base {dev[:12]}" in github.statuses[-1]["description"]
    assert second.exit_code == 1


def test_a_rebuild_passing_against_one_base_does_not_hide_a_failure_against_another(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """The status job of X -> dev's rebuild would post `success` over X -> main's failure."""
    head = git(repo, "rev-parse", "HEAD")
    main, dev = "a" * 40, "b" * 40
    github.post_status(head, "failure", "reprogate/reproduction", f"not reproduced: tiny first differs at steps; base {main[:12]}", trusted_run(github, head))
    verdict = tmp_path / "verdict.json"
    verdict.write_text(json.dumps(bound_verdict(repo, head, TINY)))
    done = post_status(repo, head, "--from-verdict", str(verdict), "--expect-records", json.dumps([TINY]), "--base", dev, "--publish", "both")
    assert done.exit_code == 0, done.output
    assert statuses(github, head)[-1] == ("reprogate/reproduction", "error") and f"against base {main[:12]}" in github.statuses[-1]["description"]
    assert github.check_runs[-1]["conclusion"] == "action_required", "the check run says what the status says"


# 38, also: two rebuilds of one head, the newer dispatch's verdict stands ------------------------


def test_the_older_rebuild_finishing_last_does_not_overwrite_the_newer(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """Two dispatches for one (base, head): the newer one (run 9002) fails and posts first; the
    older one (run 9001) passes and finishes last. 0.5.0 let the last to finish win: success."""
    head = git(repo, "rev-parse", "HEAD")
    base = "c" * 40
    client = GitHubClient("ghs_test", api_url=github.url, write_interval=0.0)
    verdicts = {}
    for run, nonce, made in (("9001", "older-dispatch-nonce-0123456789", ("pass", None)), ("9002", "newer-dispatch-nonce-0123456789", ("fail", "steps"))):
        url = trusted_run(github, head, int(run))
        checks.queue(
            client, github.repo, head, "reprogate/reproduction", checks.CheckOutput("pending", f"rebuild dispatched; base {base[:12]}", "", details_url=url)
        )
        verdict = bound_verdict(repo, head, TINY, *made, nonce=nonce)
        verdict["run"]["id"] = run
        verdicts[run] = (tmp_path / f"verdict-{run}.json", nonce)
        verdicts[run][0].write_text(json.dumps(verdict))
    expect = ("--expect-records", json.dumps([TINY]), "--base", base)
    for run in ("9002", "9001"):  # the newer finishes first
        path, nonce = verdicts[run]
        done = post_status(repo, head, "--from-verdict", str(path), *expect, nonce=nonce, run_id=run)
        assert done.exit_code == 0, done.output
    assert "newer rebuild" in done.output, done.output
    assert statuses(github, head)[-1] == ("reprogate/reproduction", "failure")
    assert [r["conclusion"] for r in github.check_runs] == ["failure", "failure"], "every check run of the name says what the status says"
