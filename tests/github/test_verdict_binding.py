"""Issue 24's attacks on the green check, each tried as a pull request or its training code would,
against the API stand-in held to GitHub's OpenAPI description: a verdict counts only from the run
that made it, and a status only for the (base, head) pair it judged."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import git
from support.gate import (
    LOCKS,
    FakeGitHub,
    bump_lock,
    commit,
    dispatches,
    pr_event,
    require_octokit,
    statuses,
    trusted_run,
)
from support.verdicts import NONCE, bound_verdict, record_digest_at

require_octokit()

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"


def commit_verdict(repo: Path, verdict: dict) -> str:
    """The pull request commits a passing verdict where the old workflow uploaded from."""

    def write(root: Path) -> None:
        (root / "reprogate-rebuild").mkdir(exist_ok=True)
        (root / "reprogate-rebuild" / "verdict.json").write_text(json.dumps(verdict))

    return commit(repo, write)[1]


def test_a_verdict_committed_by_the_pull_request_posts_error(post_status: Run, github: FakeGitHub, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    forged = bound_verdict(repo, head, TINY, nonce="guessed-by-the-pull-request")  # the head record's digest: anyone can compute it
    head = commit_verdict(repo, forged)
    result = post_status(repo, head, "--from-verdict", str(repo / "reprogate-rebuild" / "verdict.json"), "--expect-records", json.dumps([TINY]))
    assert result.exit_code == 0, result.output
    assert statuses(github) == [("reprogate/reproduction", "error")]
    assert "does not carry this dispatch's nonce" in result.output


def test_a_verdict_without_any_nonce_or_with_no_nonce_given_posts_error(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    unbound = bound_verdict(repo, head, TINY)
    del unbound["run"]
    (tmp_path / "unbound.json").write_text(json.dumps(unbound))
    post_status(repo, head, "--from-verdict", str(tmp_path / "unbound.json"))
    (tmp_path / "good.json").write_text(json.dumps(bound_verdict(repo, head, TINY)))
    told_nothing = post_status(repo, head, "--from-verdict", str(tmp_path / "good.json"), nonce=None)
    assert [s["state"] for s in github.statuses] == ["error", "error"]
    assert "given no nonce" in told_nothing.output


def test_a_verdict_from_another_run_posts_error(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    earlier = bound_verdict(repo, head, TINY)
    earlier["run"]["id"] = "111"
    (tmp_path / "v.json").write_text(json.dumps(earlier))
    result = post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), run_id="222")
    assert github.statuses[-1]["state"] == "error" and "made in run 111, not in this run (222)" in result.output
    earlier["run"]["id"] = "222"
    (tmp_path / "v.json").write_text(json.dumps(earlier))
    post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), run_id="222")
    assert github.statuses[-1]["state"] == "success", "the same verdict made in this run counts"


def test_a_verdict_of_another_record_version_posts_error(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A real passing verdict of the base's record, carried to a head that changed the record."""
    base = git(repo, "rev-parse", "HEAD")
    old = bound_verdict(repo, base, TINY)
    _, head = commit(repo, lambda r: (r / TINY).write_text((r / TINY).read_text().replace("name: tiny", "name: tiny-changed", 1)))
    assert record_digest_at(repo, head, TINY) != old["record"]["digest"]
    (tmp_path / "v.json").write_text(json.dumps(old))
    result = post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"))
    assert github.statuses[-1]["state"] == "error" and "not that of tiny/records/tiny.yaml" in result.output


@pytest.mark.parametrize("job", ["cancelled", "skipped", "failure", None])
def test_passing_verdicts_from_a_rebuild_job_that_did_not_succeed_post_error(
    post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, job: str | None
) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, head, TINY)))
    post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), result=job)
    assert github.statuses[-1]["state"] == "error", job


def test_the_report_comment_is_rendered_from_the_verdict_not_taken_from_the_folder(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A forged pass cannot travel with a report saying anything: the status job renders it."""
    head = git(repo, "rev-parse", "HEAD")
    folder = tmp_path / "verdicts" / "reprogate-verdict-0"
    folder.mkdir(parents=True)
    (folder / "verdict.json").write_text(json.dumps(bound_verdict(repo, head, TINY, "fail", "steps")))
    (folder / "report.md").write_text("## Reproduced: all good ![x](https://evil.example/pixel.png)\n")
    post_status(repo, head, "--from-verdict", str(folder / "verdict.json"), "--pr", "2", result="failure")
    body = github.comments[-1]["body"]
    assert github.statuses[-1]["state"] == "failure" and "evil.example" not in body and "all good" not in body


def test_refused_verdicts_are_named_in_the_comment_without_markdown_from_the_file(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    hostile = bound_verdict(repo, head, TINY, nonce="x" * 20)
    hostile["record"]["path"] = "records/# Reproduced ![x](https://evil.example/p.png)\n## all good.yaml"
    (tmp_path / "v.json").write_text(json.dumps(hostile))
    post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), "--pr", "2")
    body = github.comments[-1]["body"]
    assert github.statuses[-1]["state"] == "error"
    assert "\n## all good" not in body and "\n# Reproduced" not in body
    assert all(line.startswith(("## reprogate", "**", "- `", "")) for line in body.splitlines()), body


# the rebuild's side ---------------------------------------------------------------------------


def test_rebuild_refuses_an_output_folder_that_holds_anything(cli: Run, repo: Path, tmp_path: Path) -> None:
    """The old workflow's `reprogate-rebuild/` with a committed verdict: refused before any run,
    and the file is left as it was (nothing it did not make is removed)."""
    head = git(repo, "rev-parse", "HEAD")
    commit_verdict(repo, bound_verdict(repo, head, TINY))
    planted = (repo / "reprogate-rebuild" / "verdict.json").read_text()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "verdict.json").write_text(planted)
    for out in (outside, repo / "reprogate-rebuild"):
        result = cli("rebuild", TINY, "--out", str(out), cwd=repo)
        assert result.exit_code == 2 and "is not empty" in result.output, result.output
        assert (out / "verdict.json").read_text() == planted
    inside = cli("rebuild", TINY, "--out", str(repo / "fresh-inside"), cwd=repo)
    assert inside.exit_code == 2 and "inside the checked-out tree" in inside.output and not (repo / "fresh-inside").exists()


def test_a_refused_rebuild_leaves_no_folder_of_its_own_behind(cli: Run, repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "new-out"
    result = cli("rebuild", TINY, "--out", str(out), "--seeds", "999", cwd=repo)
    assert result.exit_code == 2 and not out.exists()
    bad = cli("rebuild", TINY, "--nonce", "short", cwd=repo)
    assert bad.exit_code == 2 and "a nonce is 16 to 128 characters" in bad.output


def test_the_real_rebuilds_verdict_is_bound_and_accepted(cli: Run, post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch) -> None:
    """End to end: the example rebuilt with the dispatch's nonce into a fresh folder under
    RUNNER_TEMP (its path a step output), then posted by the status job: success. The same
    verdict told another nonce, or copied into the checkout and posted from there with a nonce it
    does not carry, is error."""
    pytest.importorskip("torch")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    outputs = tmp_path / "outputs"
    for key, value in {"RUNNER_TEMP": str(runner_temp), "GITHUB_RUN_ID": "4242", "GITHUB_OUTPUT": str(outputs), "GITHUB_ACTIONS": "true"}.items():
        monkeypatch.setenv(key, value)
    result = cli("rebuild", TINY, "--nonce", NONCE, "--format", "github", cwd=repo)
    assert result.exit_code == 0, result.output
    (made,) = runner_temp.iterdir()
    assert f"out-dir={made}\n" in outputs.read_text()
    verdict = json.loads((made / "verdict.json").read_text())
    assert verdict["run"] == {"nonce": NONCE, "id": "4242"}
    head = git(repo, "rev-parse", "HEAD")
    posted = post_status(repo, head, "--from-verdict", str(made / "verdict.json"), "--expect-records", json.dumps([TINY]), run_id="4242")
    assert posted.exit_code == 0 and github.statuses[-1]["state"] == "success", posted.output
    post_status(repo, head, "--from-verdict", str(made / "verdict.json"), nonce="another-dispatch-nonce-000", run_id="4242")
    assert github.statuses[-1]["state"] == "error"


# (base, head) --------------------------------------------------------------------------------


def test_a_success_for_one_base_is_judged_again_when_the_pull_request_is_retargeted(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """A head judged green against main (nothing watched changed there) proposed against a
    release branch whose lock differs: the retarget (`edited` with changes.base) is judged again."""
    git(repo, "branch", "release/1.0")
    git(repo, "checkout", "-q", "release/1.0")
    release_base, _ = commit(repo, lambda r: (r / "NOTES.md").write_text("release notes\n"))
    release_base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    main_base, head = bump_lock(repo)
    digest = record_digest_at(repo, head, TINY).rsplit(":", 1)[1][:12]
    github.post_status(
        head, "success", "reprogate/reproduction", f"reproduced: bitwise contract held; base {main_base[:12]}; record {digest}", trusted_run(github, head)
    )
    event = pr_event("edited", release_base, head)
    event["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": main_base}}}
    result = run_gate(event)
    assert result.exit_code == 0, result.output
    assert "already success" not in result.output
    assert len(dispatches(github)) == 1 and dispatches(github)[0]["inputs"]["base"] == release_base
    assert statuses(github, head)[-1] == ("reprogate/reproduction", "pending")
    assert github.statuses[-1]["description"].endswith(f"; base {release_base[:12]}")


def test_a_second_pull_request_of_the_same_head_against_another_base_is_judged(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head, number=2))
    github.post_status(
        head, "success", "reprogate/reproduction", f"reproduced: bitwise contract held; base {base[:12]}; record 000000000000", trusted_run(github, head)
    )
    git(repo, "checkout", "-q", "-b", "other", base)
    other_base = commit(repo, lambda r: (r / "NOTES.md").write_text("another base\n"))[1]
    git(repo, "checkout", "-q", "main")
    run_gate(pr_event("opened", other_base, head, number=3))
    assert len(dispatches(github)) == 2 and statuses(github, head)[-1] == ("reprogate/reproduction", "pending")
    assert github.statuses[-1]["description"].endswith(f"; base {other_base[:12]}")


def test_a_retarget_drops_labels_that_approved_the_old_pair(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    event = pr_event("edited", git(repo, "rev-parse", "HEAD~1"), head, fork=True, labels=("reprogate/rebuild",))
    event["changes"] = {"base": {"ref": {"from": "main"}, "sha": {"from": base}}}
    result = run_gate(event)
    assert "removed reprogate/rebuild" in result.output and dispatches(github) == []


def promote_startup(root: Path) -> None:
    record = root / "records" / "startup.yaml"
    record.write_text(record.read_text() + "baseline:\n  promoted: true\n  by: maintainer\n")


def test_a_trusted_failed_rebuild_fails_the_baseline_and_pending_never_replaces_it(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, promote_startup)
    github.permissions["maintainer"] = "write"
    failed = f"not reproduced: startup first differs at preflight; base {base[:12]}"
    github.post_status(head, "failure", "reprogate/reproduction", failed, trusted_run(github, head))
    label = pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer")
    first = run_gate(label)
    assert first.exit_code == 1 and statuses(github, head)[-1] == ("reprogate/baseline", "failure")
    assert "did not pass" in github.statuses[-1]["description"] and dispatches(github) == []
    github.post_status(head, "pending", "reprogate/reproduction", f"rebuild dispatched; base {base[:12]}", trusted_run(github, head))
    run_gate(label)
    assert [s for s in statuses(github, head) if s[0] == "reprogate/baseline"] == [("reprogate/baseline", "failure")]
    assert "kept reprogate/baseline = failure" in run_gate(label).output


def test_the_dispatch_carries_a_fresh_nonce_and_the_base(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head))
    run_gate(pr_event("labeled", base, head, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="octocat"))
    github.permissions["octocat"] = "write"
    run_gate(pr_event("labeled", base, head, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="octocat"))
    nonces = [d["inputs"]["nonce"] for d in dispatches(github)]
    assert len(nonces) == 2 and len(set(nonces)) == 2 and all(len(n) >= 32 for n in nonces)
    assert {d["inputs"]["base"] for d in dispatches(github)} == {base}


def test_the_example_workflows_bind_verdicts_and_upload_only_the_fresh_folder() -> None:
    """The rebuild workflows as shipped: the nonce travels from the dispatch to both jobs, the
    upload takes the rebuild's out-dir (never a path in the checkout), the status job checks out
    the head only to read its records and passes needs.rebuild.result."""
    from support import REPO

    from reprogate.core.documents import load_document

    for name in ("reference-rebuild.yml", "reference-rebuild-slurm.yml"):
        flow = load_document(REPO / "examples" / "workflows" / name).data
        inputs = flow["on"]["workflow_dispatch"]["inputs"]
        assert {"records", "sha", "base", "nonce", "pr", "correlation", "baseline"} <= set(inputs), name
        rebuild, status = flow["jobs"]["rebuild"], flow["jobs"]["status"]
        uses = {s.get("id"): s for s in rebuild["steps"]}
        assert uses["rebuild"]["with"]["nonce"] == "${{ inputs.nonce }}"
        upload = next(s for s in rebuild["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
        assert upload["with"]["path"].startswith("${{ steps.rebuild.outputs.out-dir }}"), name
        post = next(s for s in status["steps"] if s.get("with", {}).get("command") == "status")
        assert post["with"]["nonce"] == "${{ inputs.nonce }}" and post["with"]["rebuild-result"] == "${{ needs.rebuild.result }}", name
        assert status["needs"] == "rebuild" and "self-hosted" not in str(status["runs-on"]), name
        assert not any("run" in s for s in status["steps"]), "the status job runs nothing of the pull request"
    for name in ("reprogate-gate.yml", "reprogate-public-compute.yml"):
        types = load_document(REPO / "examples" / "workflows" / name).data["on"]["pull_request"]["types"]
        assert "edited" in types, name


def test_a_lock_pinned_by_the_record_in_the_pr_is_unchanged_by_these_rules(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """Sanity: an ordinary lock-file PR still dispatches exactly once and posts pending with its base."""
    base, head = commit(repo, lambda r: shutil.copy(LOCKS / "after" / "requirements.txt", r / "requirements.lock.txt"))
    run_gate(pr_event("opened", base, head))
    assert len(dispatches(github)) == 1 and github.statuses[-1]["description"].endswith(f"; base {base[:12]}")


def test_file_names_from_the_pull_request_cannot_write_markdown_into_the_step_summary(run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    name = "records/x\n# Reproduced ![p](https:evil.example.png) <img src=x>.yaml"

    def add(root: Path) -> None:
        (root / name).write_text((root / "records" / "startup.yaml").read_text() + "unknown_section: 1\n")

    base, head = commit(repo, add)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")], result.output
    summary = (tmp_path / "summary.md").read_text()
    assert "Reproduced" in summary, summary
    assert [line for line in summary.splitlines() if line.startswith("#")] == ["### reprogate gate"]
    unescaped = summary.replace("\\!\\[", "").replace("\\<", "")
    assert "![" not in unescaped and "<img" not in unescaped, summary


@pytest.mark.parametrize("context", ["reprogate/baseline", "ci/unit-tests"])
def test_the_heads_configuration_cannot_choose_the_context_the_status_job_posts_on(
    post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path, context: str
) -> None:
    """The status job checks out the head (to read its records): its .reprogate.yaml is the pull
    request's. A context from there could turn reprogate/baseline, or another required check, green."""

    def edit(root: Path) -> None:
        text = (root / ".reprogate.yaml").read_text()
        assert "context: reprogate/reproduction" in text
        (root / ".reprogate.yaml").write_text(text.replace("context: reprogate/reproduction", f"context: {context}"))

    _, head = commit(repo, edit)
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, head, TINY)))
    post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), "--expect-records", json.dumps([TINY]))
    assert statuses(github) == [("reprogate/reproduction", "success")]
    post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), "--context", "team/repro")  # the workflow's input (the gate's dispatch)
    assert statuses(github)[-1] == ("team/repro", "success")


def test_an_invalid_configuration_at_the_head_does_not_stop_the_status_job_posting(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    _, head = commit(repo, lambda r: (r / ".reprogate.yaml").write_text((r / ".reprogate.yaml").read_text() + "status:\n  context: x\n"))
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, head, TINY, "fail", "steps")))
    result = post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), "--expect-records", json.dumps([TINY]), result="failure")
    assert result.exit_code == 0 and statuses(github) == [("reprogate/reproduction", "failure")], result.output


def test_a_refused_verdict_is_not_also_counted_missing(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (tmp_path / "v.json").write_text(json.dumps(bound_verdict(repo, head, TINY, nonce="x" * 20)))
    result = post_status(repo, head, "--from-verdict", str(tmp_path / "v.json"), "--expect-records", json.dumps([TINY]))
    assert github.statuses[-1]["state"] == "error" and f"no verdict for {TINY}" not in result.output


def test_the_dispatch_names_the_bases_status_context(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    run_gate(pr_event("opened", base, head))
    assert dispatches(github)[0]["inputs"]["context"] == "reprogate/reproduction"
