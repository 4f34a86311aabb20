"""The public-repository setup: an unprivileged `gate --mode compute` on pull_request (read-only
token, no API call) and a privileged `gate --mode publish` on workflow_run, which takes only the
pull request number from the compute run's result, checks it through the API, and judges the head
from git objects while the working tree stays on the default branch."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import git
from support.gate import (
    LOCKS,
    REPOSITORY,
    FakeGitHub,
    dispatches,
    gate_env,
    pr_event,
    require_octokit,
    statuses,
    webhook,
)

require_octokit()

Cli = Callable[..., Result]


def pr_commit(repo: Path, edit: Callable[[Path], Any]) -> tuple[str, str]:
    """Commit `edit` on a pull-request branch and go back to main: the head exists as git objects
    only, as after `git fetch origin pull/N/head` in the privileged workflow."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", f"pr-{len(list((repo / '.git' / 'refs' / 'heads').iterdir()))}")
    edit(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pull request")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return base, head


def bump(root: Path) -> None:
    shutil.copy(LOCKS / "after" / "requirements.txt", root / "requirements.lock.txt")


def workflow_run(head: str, event: str = "pull_request") -> dict[str, Any]:
    payload = webhook("workflow_run", "completed")
    payload["repository"].update(full_name=REPOSITORY, default_branch="main")
    payload["workflow_run"].update(head_sha=head, event=event, conclusion="success", id=31337)
    return payload


@pytest.fixture
def publish(cli: Cli, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    def run(head: str, number: int | object = 2, event: str = "pull_request", result_text: str | None = None, options: tuple[str, ...] = ()) -> Result:
        event_path = tmp_path / f"run-{len(github.requests)}.json"
        event_path.write_text(json.dumps(workflow_run(head, event)))
        result_file = tmp_path / "artifact" / "result.json"
        result_file.parent.mkdir(exist_ok=True)
        result_file.write_text(
            result_text if result_text is not None else json.dumps({"apiVersion": "reprogate/v1", "kind": "GateCompute", "pull_request": number})
        )
        for key, value in gate_env(github, tmp_path, "workflow_run", event_path).items():
            monkeypatch.setenv(key, value)
        before = git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")
        result = cli("gate", "--repo", str(repo), "--mode", "publish", "--result-file", str(result_file), *options)
        assert (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")) == before, "publish must not check anything out"
        assert "Traceback" not in result.output and "contract violation" not in result.output, result.output
        return result

    return run


def test_compute_makes_no_api_call_and_leaves_the_number(cli: Cli, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base, head = pr_commit(repo, bump)
    git(repo, "checkout", "-q", head)
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pr_event("opened", base, head, fork=True, number=7)))
    for key, value in gate_env(github, tmp_path, "pull_request", event).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("GITHUB_TOKEN")
    out = tmp_path / "reprogate-gate" / "result.json"
    result = cli("gate", "--repo", str(repo), "--mode", "compute", "--result-file", str(out))
    assert result.exit_code == 0, result.output
    assert github.requests == []
    written = json.loads(out.read_text())
    assert written["pull_request"] == 7 and written["head_sha"] == head and written["rebuild_required"] is True
    assert "rebuild-required=true\n" in (tmp_path / "outputs").read_text()


def test_compute_annotates_an_invalid_record_and_fails(cli: Cli, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def corrupt(root: Path) -> None:
        config = root / "config" / "c19.yaml"
        config.write_text(config.read_text() + "extra: 1\n")

    base, head = pr_commit(repo, corrupt)
    git(repo, "checkout", "-q", head)
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pr_event("synchronize", base, head, fork=True)))
    for key, value in gate_env(github, tmp_path, "pull_request", event).items():
        monkeypatch.setenv(key, value)
    result = cli("gate", "--repo", str(repo), "--mode", "compute", "--result-file", str(tmp_path / "r.json"))
    assert result.exit_code == 1 and "invalid record: records/drill.yaml" in result.output
    assert github.requests == []


def test_publish_judges_the_fork_head_from_git_objects(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(2, head, base, fork=True)
    result = publish(head)
    assert result.exit_code == 0, result.output
    assert statuses(github, head) == [("reprogate/reproduction", "pending")] and "waiting for a maintainer" in github.statuses[-1]["description"]
    assert dispatches(github) == [] and len(github.comments) == 1
    assert "pulls/get" in github.operations()


@pytest.mark.parametrize(("publishing", "listing"), [("status", "repos/list-commit-statuses-for-ref"), ("check-run", "checks/list-for-ref")])
def test_publish_reads_the_base_settings_and_the_gates_statuses_once(
    publish: Callable[..., Result], github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch, publishing: str, listing: str
) -> None:
    """The facts a run judges by are read once and passed down: the base's .reprogate.yaml from git
    objects, the gate's statuses (or its two check runs) through the API. 0.6 read both a second
    time for the judgement, so a status of the context posted by someone else was reported twice."""
    from reprogate.github import gate

    reads: list[str] = []
    config_at = gate.config_at
    monkeypatch.setattr(gate, "config_at", lambda top, rev, *rest: reads.append(rev) or config_at(top, rev, *rest))
    base, head = pr_commit(repo, bump)
    github.post_status(head, "success", "reprogate/reproduction", f"reproduced; base {base[:12]}", creator="ci-bot[bot]")
    github.add_pull(2, head, base, fork=True)
    result = publish(head, options=("--publish", publishing))
    assert result.exit_code == 0, result.output
    assert reads == [base]
    per_name = 2 if publishing == "check-run" else 1  # a check run list per name: the reproduction's and the baseline's
    assert github.operations().count(listing) == per_name, github.operations()
    assert result.output.count("not posted by github-actions[bot]") == (1 if publishing == "status" else 0), result.output


def test_publish_dispatches_after_a_writer_labels_this_head(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(2, head, base, fork=True)
    publish(head)  # first sight: the gate's first status on this head
    github.permissions["maintainer"] = "write"
    github.add_pull(2, head, base, fork=True, labels=("reprogate/rebuild",))
    github.label_event(2, "reprogate/rebuild", "maintainer")
    result = publish(head)
    assert result.exit_code == 0, result.output
    (sent,) = dispatches(github)
    assert sent["inputs"]["sha"] == head and json.loads(sent["inputs"]["records"]) == ["tiny/records/tiny.yaml"]
    assert "issues/list-events" in github.operations()
    assert "kept" not in result.output and statuses(github, head)[-1] == ("reprogate/reproduction", "pending")


def test_publish_ignores_a_label_from_before_the_push(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.permissions["maintainer"] = "write"
    github.label_event(2, "reprogate/rebuild", "maintainer")  # approved an earlier commit
    github.add_pull(2, head, base, fork=True, labels=("reprogate/rebuild",))
    result = publish(head)
    assert dispatches(github) == [] and "issues/remove-label" in github.operations()
    assert "approved an earlier commit" in result.output


def test_publish_ignores_a_triage_users_label(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(2, head, base, fork=True)
    publish(head)
    github.permissions["triager"] = "read"
    github.add_pull(2, head, base, fork=True, labels=("reprogate/rebuild",))
    github.label_event(2, "reprogate/rebuild", "triager")
    result = publish(head)
    assert dispatches(github) == [] and "triager applied reprogate/rebuild without write permission" in result.output


def test_publish_refuses_a_result_naming_another_pull_request(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(3, "e" * 40, base)  # someone else's pull request, at another commit
    result = publish(head, number=3)
    assert result.exit_code == 0 and "the finished run tested" in result.output
    assert github.statuses == [] and dispatches(github) == []


def test_publish_refuses_a_pull_request_of_another_repository(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(2, head, base, base_repo="other/repo")
    assert publish(head).exit_code == 2 and github.statuses == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"kind": "GateCompute", "pull_request": "2; rm -rf /"}',
        '{"kind": "GateCompute", "pull_request": true}',
        '{"kind": "GateCompute", "pull_request": -1}',
        "{",
    ],
)
def test_publish_refuses_a_malformed_result(publish: Callable[..., Result], github: FakeGitHub, repo: Path, text: str) -> None:
    base, head = pr_commit(repo, bump)
    github.add_pull(2, head, base)
    result = publish(head, result_text=text)
    assert result.exit_code == 2, result.output
    assert "result.json" in result.output and github.statuses == []


def test_publish_needs_the_head_fetched(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    missing = "f" * 40
    github.add_pull(2, missing, git(repo, "rev-parse", "HEAD"))
    result = publish(missing)
    assert result.exit_code == 2 and "git fetch origin refs/pull/2/head" in result.output and github.statuses == []


def test_publish_judges_the_heads_records_not_the_working_tree(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    def corrupt(root: Path) -> None:
        config = root / "config" / "c19.yaml"
        config.write_text(config.read_text() + "extra: 1\n")

    base, head = pr_commit(repo, corrupt)
    github.add_pull(2, head, base, fork=True)
    result = publish(head)
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")]


def test_publish_does_nothing_for_runs_not_started_by_a_pull_request(publish: Callable[..., Result], github: FakeGitHub, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    result = publish(head, event="push")
    assert result.exit_code == 0 and github.requests == []


@pytest.mark.parametrize("attributes", ["config/** export-ignore\nrecords/** export-ignore\n", "config/c19.yaml export-subst\n"])
def test_publish_sees_the_head_as_git_stores_it_whatever_its_gitattributes_say(
    publish: Callable[..., Result], github: FakeGitHub, repo: Path, attributes: str
) -> None:
    """The configuration the records pin is changed, and the head's own .gitattributes hide that
    from `git archive`: export-ignore drops the files, export-subst turns the appended
    `$Format:$` back into nothing (the archive holds the pinned bytes). Publish reads the objects."""

    def corrupt_and_hide(root: Path) -> None:
        config = root / "config" / "c19.yaml"
        config.write_text(config.read_text() + "$Format:$")
        (root / ".gitattributes").write_text(attributes)

    base, head = pr_commit(repo, corrupt_and_hide)
    github.add_pull(2, head, base, fork=True)
    result = publish(head)
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")], result.output


def test_materialize_adds_up_sizes_before_reading_and_keeps_links_inside(repo: Path, tmp_path: Path) -> None:
    from reprogate.core.errors import UsageError
    from reprogate.github.revision import materialize

    def add(root: Path) -> None:
        (root / "big.bin").write_bytes(b"\0" * 3_000_000)
        (root / "inside").symlink_to("records")
        (root / "outside").symlink_to("/etc/passwd")
        (root / "run.sh").write_text("#!/bin/sh\n")
        (root / "run.sh").chmod(0o755)

    _, head = pr_commit(repo, add)
    with pytest.raises(UsageError, match="larger than 2,000,000 bytes"):
        materialize(repo, head, tmp_path / "small", limit=2_000_000)
    assert not (tmp_path / "small").exists(), "refused before anything was written"
    tree = materialize(repo, head, tmp_path / "tree")
    assert (tree / "big.bin").stat().st_size == 3_000_000 and (tree / "inside").is_symlink()
    assert not (tree / "outside").exists() and not (tree / "outside").is_symlink()
    assert (tree / "run.sh").stat().st_mode & 0o111 and (tree / "records" / "drill.yaml").read_bytes() == (repo / "records" / "drill.yaml").read_bytes()
