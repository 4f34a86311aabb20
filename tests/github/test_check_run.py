"""The verdict as a Check Run, against the API stand-in held to GitHub's OpenAPI description
(every request body is validated against checks/create, checks/update, checks/list-for-ref):
the lifecycle queued -> in_progress -> completed, annotations 50 per request, and conclusions
that never count an inconclusive rebuild as passing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import git
from support.gate import FakeGitHub, bump_lock, pr_event, require_octokit, statuses
from support.verdicts import bound_verdict

from reprogate.github import checks
from reprogate.github.client import GitHubClient

require_octokit()

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"
PASSING = {"success", "neutral", "skipped"}  # what branch protection counts as a passing check


def client(github: FakeGitHub) -> GitHubClient:
    return GitHubClient("ghs_test", api_url=github.url, write_interval=0.0)


def write(tmp_path: Path, verdict: dict) -> str:
    path = tmp_path / f"verdict-{len(list(tmp_path.glob('verdict-*')))}.json"
    path.write_text(json.dumps(verdict))
    return str(path)


def test_the_gate_queues_a_check_run_the_status_job_completes(run_gate: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    base, head = bump_lock(repo)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    [queued] = github.check_runs
    assert queued["name"] == "reprogate/reproduction" and queued["head_sha"] == head and queued["status"] == "queued"
    assert queued["details_url"] == "https://github.com/octo/repro/actions/runs/4242"  # the dispatched rebuild run
    assert statuses(github, head) == [("reprogate/reproduction", "pending")]  # --publish both: the status too
    before = len(github.requests)
    done = post_status(repo, head, "--from-verdict", write(tmp_path, bound_verdict(repo, head, TINY)), "--expect-records", json.dumps([TINY]))
    assert done.exit_code == 0, done.output
    writes = [(r[0], r[3], (r[2] or {}).get("status"), (r[2] or {}).get("conclusion")) for r in github.requests[before:] if r[3].startswith("checks/")]
    assert writes == [
        ("GET", "checks/list-for-ref", None, None),
        ("PATCH", "checks/update", "in_progress", None),
        ("PATCH", "checks/update", "completed", "success"),
    ]
    assert len(github.check_runs) == 1 and github.check_runs[0]["conclusion"] == "success"
    assert github.check_runs[0]["output"]["summary"].startswith("## ")  # the rebuild report, rendered from the accepted verdict
    assert statuses(github, head)[-1] == ("reprogate/reproduction", "success")


@pytest.mark.parametrize(
    ("verdict", "diagnosis", "infrastructure", "conclusion", "words"),
    [
        ("pass", None, False, "success", "reproduced"),
        ("fail", "steps", False, "failure", "not reproduced"),
        ("fail", "preflight", True, "action_required", "inconclusive"),
    ],
)
def test_conclusions(
    post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, verdict: str, diagnosis: str | None, infrastructure: bool, conclusion: str, words: str
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    made = bound_verdict(repo, head, TINY, verdict, diagnosis, infrastructure=infrastructure)
    assert post_status(repo, head, "--from-verdict", write(tmp_path, made), "--publish", "check-run").exit_code == 0
    [run] = github.check_runs
    assert run["conclusion"] == conclusion and run["output"]["title"].startswith(words)
    assert github.statuses == []  # --publish check-run posts no status
    if diagnosis:
        assert any(a["title"] == f"reprogate: stage {diagnosis} failed" and a["path"] == TINY for a in run["annotations"])


def test_a_missing_verdict_or_a_crashed_job_never_concludes_as_passing(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    post_status(repo, head, "--from-verdict", str(tmp_path / "never-written.json"), "--publish", "check-run")
    passing = write(tmp_path, bound_verdict(repo, head, TINY))
    post_status(repo, head, "--from-verdict", passing, "--publish", "check-run", result="cancelled")
    post_status(repo, head, "--from-verdict", passing, "--expect-records", json.dumps([TINY, "records/other.yaml"]), "--publish", "check-run")
    conclusions = [r["conclusion"] for r in github.check_runs]
    assert conclusions == ["action_required"] * 3 and not PASSING & set(conclusions)
    assert all(r["output"]["title"].startswith("inconclusive") for r in github.check_runs)


def test_only_success_maps_to_a_passing_conclusion() -> None:
    assert {state: checks.conclusion(state) for state in ("success", "failure", "error")} == {
        "success": "success",
        "failure": "failure",
        "error": "action_required",
    }
    assert checks.conclusion("something new") == "action_required" and "action_required" not in PASSING


def test_120_annotations_go_out_in_three_requests(github: FakeGitHub) -> None:
    notes = tuple(checks.Annotation(f"records/r{i}.yaml", f"finding {i}", "warning", line=i + 1, column=3) for i in range(120))
    sha = "a" * 40
    checks.complete(client(github), github.repo, sha, "reprogate/reproduction", checks.CheckOutput("failure", "not reproduced", "report", notes))
    updates = [r[2] for r in github.requests if r[3] == "checks/update"]
    carried = [len(body.get("output", {}).get("annotations", [])) for body in updates]
    assert carried == [50, 50, 20]  # completed with the first 50, then 50 and 20 appended: three requests
    [run] = github.check_runs
    assert [a["message"] for a in run["annotations"]] == [f"finding {i}" for i in range(120)]
    assert run["output"]["annotations_count"] == 120 and run["conclusion"] == "failure"
    assert [r[3] for r in github.requests] == ["checks/list-for-ref", "checks/create", "checks/update", "checks/update", "checks/update"]


def test_a_report_over_the_limit_is_cut_and_says_so(github: FakeGitHub) -> None:
    report = "## report\n" + "x" * 70_000
    checks.queue(client(github), github.repo, "b" * 40, "reprogate/reproduction", checks.CheckOutput("success", "reproduced", report))
    summary = github.check_runs[0]["output"]["summary"]
    assert len(summary.encode()) == checks.SUMMARY_LIMIT and summary.startswith("## report")
    assert "the report is 70,010 bytes; cut here to GitHub's 65,535-byte limit" in summary


def test_check_run_only_keeps_the_terminal_state_rule(run_gate: Run, github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no status at all the gate reads the check runs back: a completed run on this (base,
    head) pair is not replaced by a queued one when the same event comes again."""
    monkeypatch.setenv("REPROGATE_PUBLISH", "check-run")
    base, head = bump_lock(repo)
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    [queued] = github.check_runs
    checks.complete(
        client(github), github.repo, head, "reprogate/reproduction", checks.CheckOutput("failure", queued["output"]["title"].split(": ", 1)[1], "r")
    )
    assert github.check_runs[0]["status"] == "completed" and github.statuses == []
    again = run_gate(pr_event("synchronize", base, head))
    assert again.exit_code == 0, again.output
    assert len(github.check_runs) == 1 and github.check_runs[0]["conclusion"] == "failure"
    assert "is already failure" in again.output


def test_titles_name_the_state_in_words() -> None:
    assert checks.title_of("success", "no framework, driver, image, dataset, environment or configuration change") == (
        "passed: no framework, driver, image, dataset, environment or configuration change"
    )
    assert checks.title_of("failure", "not reproduced: tiny first differs at steps").startswith("not reproduced: tiny")
    assert checks.title_of("error", "the rebuild produced no verdict: inconclusive").startswith("inconclusive: the rebuild")
    assert checks.title_of("error", "failed to start").startswith("inconclusive: ")  # an error never reads as a plain failure or pass
    ours = {"app": {"slug": "github-actions"}, "external_id": "reprogate"}
    back = checks.as_statuses(
        [{"id": 7, "name": "n", "status": "completed", "conclusion": "action_required", "output": {"title": "inconclusive: x; base abc"}, **ours}]
    )
    assert back[0].state == "error" and back[0].description == "x; base abc" and back[0].creator == "github-actions[bot]"
    assert checks.as_statuses([{"id": 8, "name": "n", "status": "completed", "conclusion": "neutral", "output": {}, **ours}])[0].state == "error"
    assert checks.as_statuses([{"id": 9, "name": "n", "status": "queued", "output": {}, **ours}])[0].state == "pending"


def test_a_report_over_65535_bytes_but_not_characters_still_completes_the_run(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """Issue 41.7: GitHub counts the summary in bytes. A failing run's log tail in another script
    (40,000 characters, 80,000 bytes) passed 0.5.0's character cut; GitHub answered 422, the check
    stayed in progress and `github status` exited 2."""
    head = git(repo, "rev-parse", "HEAD")
    made = bound_verdict(repo, head, TINY, "fail", "run")
    made["stages"][6]["log_tail"] = "Ошибка: " + "é" * 40_000
    done = post_status(repo, head, "--from-verdict", write(tmp_path, made), "--expect-records", json.dumps([TINY]), "--publish", "check-run")
    assert done.exit_code == 0, done.output
    [run] = github.check_runs
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    summary = run["output"]["summary"]
    assert len(summary.encode()) <= checks.SUMMARY_LIMIT and "cut here to GitHub's 65,535-byte limit" in summary
    assert summary.encode().decode("utf-8") == summary  # cut on a character boundary


def test_any_refusal_of_the_check_run_completes_it_with_a_short_summary(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A 4xx from the Checks API (here GitHub refuses the completing update once) never leaves the
    run in progress, and is not a usage error of `github status`."""
    head = git(repo, "rev-parse", "HEAD")
    refusal = {"message": "Validation Failed", "errors": [{"resource": "CheckRun", "code": "custom", "field": "annotations"}], "status": "422"}
    made = bound_verdict(repo, head, TINY, "fail", "steps")
    path = write(tmp_path, made)
    post_status(repo, head, "--from-verdict", path, "--expect-records", json.dumps([TINY]), "--publish", "check-run")  # creates the run
    github.check_runs[0]["status"] = "in_progress"  # as a run the gate queued: open
    github.check_runs[0]["conclusion"] = None
    github.faults["checks/update"] = [(200, {}, {k: v for k, v in github.check_runs[0].items() if k != "annotations"}), (422, {}, refusal)]
    done = post_status(repo, head, "--from-verdict", path, "--expect-records", json.dumps([TINY]), "--publish", "check-run")
    assert done.exit_code == 0, done.output
    [run] = github.check_runs
    assert run["status"] == "completed" and run["conclusion"] == "failure"
    assert "GitHub refused the full report (HTTP 422)" in run["output"]["summary"]


# issue 39 crash class 7: GitHub's check-run answers read at the client's boundary ---------------


@pytest.mark.parametrize("identifier", [None, "7", 0], ids=["missing", "string", "zero"])
def test_a_created_check_run_without_an_integer_id_is_found_again_and_completed(
    post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, identifier: object
) -> None:
    """An answer to checks/create whose `id` is not a positive integer (was KeyError / int() on it,
    exit 4, the run left in progress): the run is looked up again among this commit's own open
    runs and completed; the verdict's state is its conclusion."""
    head = git(repo, "rev-parse", "HEAD")
    path = write(tmp_path, bound_verdict(repo, head, TINY, "fail", "steps"))
    original = github.answer

    def answer(method: str, path_: str, body: object) -> tuple[int, dict[str, str], object]:
        """GitHub's own answer, its id taken away or replaced; bytes: sent as they are, unchecked by the OpenAPI description."""
        status, headers, made = original(method, path_, body)
        if github.requests[-1][3] == "checks/create" and isinstance(made, dict):
            made = json.dumps({k: v for k, v in made.items() if k != "id"} | ({} if identifier is None else {"id": identifier})).encode()
        return status, headers, made

    github.answer = answer  # type: ignore[method-assign]
    done = post_status(repo, head, "--from-verdict", path, "--expect-records", json.dumps([TINY]), "--publish", "check-run")
    assert "internal error" not in done.output, done.output
    assert done.exit_code == 0, done.output
    [run] = github.check_runs
    assert run["status"] == "completed" and run["conclusion"] == "failure"


def test_a_check_run_list_whose_link_header_is_no_url_is_refused_not_followed(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A `Link: <not a url>; rel="next"` on checks/list-for-ref (was a crash following it, exit 4,
    the run left in progress): GitHub misbehaving is exit 3, naming the header, and nothing is
    posted on a partial list."""
    head = git(repo, "rev-parse", "HEAD")
    path = write(tmp_path, bound_verdict(repo, head, TINY, "fail", "steps"))
    github.faults["checks/list-for-ref"] = [(200, {"Link": '<http://[::1/x>; rel="next"'}, {"total_count": 0, "check_runs": []})]
    done = post_status(repo, head, "--from-verdict", path, "--expect-records", json.dumps([TINY]), "--publish", "check-run")
    assert "internal error" not in done.output, done.output
    assert done.exit_code == 3, done.output
    assert "Link header" in done.output and "next" in done.output, done.output
    assert github.check_runs == []
