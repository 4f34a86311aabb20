"""Issue 38's attacks on the gate and the status job (the GitHub half), each run the way it was
found — pull_request webhook payloads from GitHub's own examples through `reprogate gate`, the
status job's `reprogate github status` — against the API stand-in held to GitHub's OpenAPI
description. Each failed on 0.5.0."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support.gate import FakeGitHub, bump_lock, pr_event, require_octokit, statuses

require_octokit()

Run = Callable[..., Result]


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
