"""Issue 38.10: text a pull request controls reaches the sticky comment, the check run, the step
summary and the report as text. Each payload goes in where an attacker puts it — a direct-URL
requirement in a lock file, a Dockerfile stage name (`FROM … AS <payload>`), a traced metric
whose name holds an odd backtick and whose value is an image — through the real commands (the
gate on a pull_request webhook payload, `github status` posting a verdict, `report`), against the
API stand-in held to GitHub's OpenAPI description. What comes out is rendered with GitHub's own
renderer (cmark-gfm) and may hold no image, no link to the payload's host, no emphasis around
the payload's words and no @mention (tests/support/markdown.py)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from support import git
from support.gate import LOCKS, FakeGitHub, commit, pr_event, require_octokit
from support.markdown import live_markup, render
from support.verdicts import bound_verdict

from reprogate.rebuild.compare import FirstDifference

require_octokit()

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"
WORDS = ("PASSED", "reproduced", "click")
LOCK_LINE = "evil-pkg @ https://evil.example/![pwn](https://evil.example/p.png)/[click](https://evil.example)/evil-1.0-py3-none-any.whl"
STAGE = "x![pwn](https://evil.example/p.png)**PASSED**@octocat"


def hostile_pull_request(root: Path) -> None:
    """A lock bump that also adds a direct-URL requirement and names a Dockerfile stage with markup."""
    shutil.copy(LOCKS / "after" / "requirements.txt", root / "requirements.lock.txt")
    with (root / "requirements.lock.txt").open("a") as lock:
        lock.write(LOCK_LINE + "\n")
    dockerfile = root / "Dockerfile"
    dockerfile.write_text(re.sub(r"^(FROM \S+)$", rf"\1 AS {STAGE}", dockerfile.read_text(), count=1, flags=re.MULTILINE))


def test_lock_lines_and_stage_names_stay_text_in_the_comment_the_check_run_and_the_summary(
    run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path
) -> None:
    base, head = commit(repo, hostile_pull_request)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    [comment] = github.comments
    [check] = github.check_runs
    assert "evil-pkg" in comment["body"] and "pwn" in comment["body"], "the payload is shown, as text"
    assert "<code>" in render(comment["body"]), "code spans still render as code"
    for where, text in (("comment", comment["body"]), ("check run", check["output"]["summary"]), ("step summary", (tmp_path / "summary.md").read_text())):
        assert live_markup(text, WORDS) == [], f"the {where} renders the pull request's markup"


def poisoned_verdict(repo: Path, head: str) -> dict:
    """A verdict whose first difference is a metric the training code named with an odd backtick
    and gave an image for a value: the text compare.FirstDifference writes for it."""
    verdict = bound_verdict(repo, head, TINY, "fail", "steps")
    cause = FirstDifference("metrics.a`b", "output", 3, 0, "0.1", "![p](//evil.example/x)")
    verdict["first_difference"] = cause.to_json()
    verdict["stages"][9]["detail"] = f"step 3, rank 0: {cause.text} **reproduced** @octocat"
    return verdict


def test_a_traced_name_with_an_odd_backtick_cannot_unlock_markup_in_the_report(
    cli: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(poisoned_verdict(repo, head)))
    report = cli("report", str(path))
    assert report.exit_code == 1 and "evil.example" in report.output, report.output
    assert live_markup(report.output, WORDS) == []
    done = post_status(repo, head, "--from-verdict", str(path), "--expect-records", json.dumps([TINY]), "--pr", "2")
    assert done.exit_code == 0, done.output
    [comment] = github.comments
    [check] = github.check_runs
    assert check["conclusion"] == "failure"
    assert live_markup(comment["body"], WORDS) == [] and live_markup(check["output"]["summary"], WORDS) == []
