"""`reprogate gate --dry-run EVENT`: what the gate would decide and post for a pull-request event,
on a maintainer's machine, with no token and no network (github/dry_run.py). The events are
GitHub's own webhook examples; the repository is the example project with a lock-file bump or a
docs-only change, as the gate's tests use."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support.gate import bump_lock, docs_only, pr_event, require_octokit

require_octokit()

Cli = Callable[..., Result]
NO_GITHUB = ("GITHUB_TOKEN", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")


@pytest.fixture
def dry_run(cli: Cli, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`reprogate gate --dry-run EVENT` as a maintainer runs it: no token, no job environment, and
    a GitHub API address where nothing listens (a request would fail the test)."""
    for name in NO_GITHUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")

    def run(event: dict, *args: str) -> Result:
        path = tmp_path / "event.json"
        path.write_text(json.dumps(event))
        result = cli("gate", "--repo", str(repo), "--dry-run", str(path), "--format", "text", *args)
        assert "Traceback" not in result.output, result.output
        return result

    return run


def test_a_lock_bump_would_dispatch_the_rebuild_and_post_pending(dry_run: Callable[..., Result], repo: Path) -> None:
    base, head = bump_lock(repo)
    result = dry_run(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "would post:" in lines
    dispatch = next(line for line in lines if line.startswith("  dispatch "))
    assert dispatch.startswith("  dispatch reference-rebuild.yml on main:") and f"sha={head}" in dispatch and 'records=["tiny/records/tiny.yaml"]' in dispatch
    assert "nonce=" not in dispatch, "the dispatch's nonce is the real run's secret, not shown"
    assert any(line.startswith(f"  status reprogate/reproduction on {head[:12]}: pending") for line in lines)
    assert "six 1.16.0 -> 1.17.0" in result.output, "the comment the pull request would get is printed"


def test_a_docs_only_change_would_post_success_and_dispatch_nothing(dry_run: Callable[..., Result], repo: Path) -> None:
    base, head = docs_only(repo)
    result = dry_run(pr_event("opened", base, head), "--format", "json")
    payload = json.loads(result.output)
    assert result.exit_code == 0 and payload["outputs"]["rebuild-required"] == "false"
    assert [line.split(":")[0] for line in payload["would_post"]] == [
        f"status reprogate/reproduction on {head[:12]}",
        f"check run reprogate/reproduction on {head[:12]}",
    ]
    assert "success" in payload["would_post"][0] and "completed success" in payload["would_post"][1]  # --publish both: the same judgement twice
    assert not any(line.startswith("dispatch") for line in payload["would_post"])


def test_a_label_from_a_reader_is_shown_ignored(dry_run: Callable[..., Result], repo: Path) -> None:
    base, head = bump_lock(repo)
    event = pr_event("labeled", base, head, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="triager")
    as_writer, as_reader = dry_run(event), dry_run(event, "--reader")
    assert "  dispatch reference-rebuild.yml" in as_writer.output and "dispatch" not in as_reader.output.split("would post:")[-1]
    assert "triager applied reprogate/rebuild without write permission: ignored" in as_reader.output


def test_dry_run_is_the_one_workflow_gate_only(dry_run: Callable[..., Result], repo: Path) -> None:
    base, head = docs_only(repo)
    result = dry_run(pr_event("opened", base, head), "--mode", "compute")
    assert result.exit_code == 2 and "--dry-run shows what the one-workflow gate (--mode full) would post" in result.output


def test_a_payload_without_head_repo_is_refused_not_judged_as_a_fork(dry_run: Callable[..., Result], repo: Path) -> None:
    """Issue 41.10: a payload written by hand without `pull_request.head.repo` was judged as a
    fork's pull request (waiting for a label), so a lock bump showed no dispatch."""
    base, head = bump_lock(repo)
    event = pr_event("opened", base, head)
    del event["pull_request"]["head"]["repo"]
    result = dry_run(event)
    assert result.exit_code == 2 and "pull_request.head.repo: missing" in result.output, result.output
    labeled = pr_event("labeled", base, head, labels=("reprogate/rebuild",), label="reprogate/rebuild")
    del labeled["label"]
    result = dry_run(labeled)
    assert result.exit_code == 2 and "label: expected an object" in result.output, result.output


def test_from_git_builds_the_pull_request_event_of_a_revision_range(cli: Cli, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NO_GITHUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    base, head = bump_lock(repo)
    result = cli("gate", "--repo", str(repo), "--dry-run", "--from-git", f"{base}..{head}", "--format", "text")
    assert result.exit_code == 0, result.output
    assert any(line.startswith("  dispatch reference-rebuild.yml on main:") and f"sha={head}" in line for line in result.output.splitlines()), result.output
    as_fork = cli("gate", "--repo", str(repo), "--dry-run", "--from-git", f"{base}..{head}", "--fork", "--format", "text")
    assert "waiting for a maintainer" in as_fork.output and "  dispatch " not in as_fork.output
    template = cli("gate", "--repo", str(repo), "--example-event", "--from-git", f"{base}..{head}")
    assert template.exit_code == 0, template.output
    event = json.loads(template.output)
    assert event["pull_request"]["head"]["sha"] == head and event["pull_request"]["base"]["sha"] == base
    (tmp_path / "event.json").write_text(template.output)
    again = cli("gate", "--repo", str(repo), "--dry-run", str(tmp_path / "event.json"), "--format", "text")
    strip = lambda text: re.sub(r"reprogate-[0-9a-f]{12}-[0-9a-f]{6}", "<correlation>", text)
    assert strip(again.output) == strip(result.output), "the printed template judges as --from-git does"
    assert cli("gate", "--repo", str(repo), "--dry-run", "--from-git", "HEAD").exit_code == 2
