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
from support.gate import FakeGitHub, bump_lock, pr_event, require_octokit, statuses
from support.verdicts import bound_verdict

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
