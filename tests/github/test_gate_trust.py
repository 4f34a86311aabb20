"""Issue 13's attacks on the gate, each tried the way an outside contributor or a triage user would,
against the API stand-in held to GitHub's OpenAPI description. Each must leave the verdict to the
base branch's settings, a writer's label and the trusted rebuild workflow."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml
from click.testing import Result
from support import git
from support.gate import (
    LOCKS,
    REBUILD_WORKFLOW,
    FakeGitHub,
    bump_lock,
    commit,
    dispatches,
    docs_only,
    pr_event,
    require_octokit,
    statuses,
    trusted_run,
)
from support.verdicts import bound_verdict, make_verdict, record_digest_at

require_octokit()

Run = Callable[..., Result]


def edit_config(root: Path, change: Callable[[dict], None]) -> None:
    data = yaml.safe_load((root / ".reprogate.yaml").read_text())
    change(data)
    (root / ".reprogate.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def bump_with_config(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        shutil.copy(LOCKS / "after" / "requirements.txt", root / "requirements.lock.txt")
        edit_config(root, change)

    return edit


def test_fork_config_that_ignores_everything_still_gets_its_lock_bump_rebuilt(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, bump_with_config(lambda c: c.setdefault("watch", {}).update(ignore=["**"])))
    github.permissions["maintainer"] = "write"
    first = run_gate(pr_event("opened", base, head, fork=True))
    assert first.exit_code == 0, first.output
    assert statuses(github) == [("reprogate/reproduction", "pending")] and "waiting for a maintainer" in github.statuses[0]["description"]
    assert "This pull request changes" in github.comments[0]["body"] and ".reprogate.yaml" in github.comments[0]["body"]
    run_gate(pr_event("labeled", base, head, fork=True, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="maintainer"))
    assert len(dispatches(github)) == 1 and json.loads(dispatches(github)[0]["inputs"]["records"]) == ["tiny/records/tiny.yaml"]


def test_a_config_change_alone_is_a_watched_change(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, lambda r: edit_config(r, lambda c: c.update(ignore_dependency_groups=["main"])))
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0 and len(dispatches(github)) == 1
    assert statuses(github) == [("reprogate/reproduction", "pending")]
    assert "rebuild required: .reprogate.yaml changed" in result.output


def test_renamed_rebuild_label_in_the_pull_request_has_no_effect(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, bump_with_config(lambda c: c["labels"].update(rebuild="bug")))
    github.permissions["maintainer"] = "write"
    run_gate(pr_event("labeled", base, head, fork=True, labels=("bug",), label="bug", sender="maintainer"))
    assert dispatches(github) == []
    assert statuses(github) == [("reprogate/reproduction", "pending")] and "apply reprogate/rebuild" in github.statuses[0]["description"]


def test_dispatch_target_in_the_pull_request_is_ignored(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    def redirect(config: dict) -> None:
        config["rebuild"] = {"workflow": "evil.yml", "ref": "refs/pull/7/head"}
        config["reference"] = "records/startup.yaml"
        config["status"] = {"context": "something/else"}

    base, head = commit(repo, bump_with_config(redirect))
    run_gate(pr_event("opened", base, head))
    (sent,) = [r for r in github.requests if r[3] == "actions/create-workflow-dispatch"]
    assert sent[1].endswith(f"/actions/workflows/{REBUILD_WORKFLOW}/dispatches") and sent[2]["ref"] == "main"
    assert json.loads(sent[2]["inputs"]["records"]) == ["tiny/records/tiny.yaml"]
    assert statuses(github) == [("reprogate/reproduction", "pending")]


def promote(root: Path, forged: bool = True) -> None:
    """Promote the startup record to baseline, pointing at a hand-written passing verdict."""
    record = root / "records" / "startup.yaml"
    verdict = {"verdict": "pass", "record": {"digest": "canonical-v1:sha256:" + "0" * 64}}
    (root / "verdict.json").write_text(json.dumps(verdict))
    text = record.read_text() + "baseline:\n  promoted: true\n  by: maintainer\n"
    if forged:
        import hashlib

        checksum = hashlib.sha256((root / "verdict.json").read_bytes()).hexdigest()
        text += f"  verdict:\n    path: verdict.json\n    checksum: sha256:{checksum}\n"
    record.write_text(text)


def startup_digest(repo: Path, sha: str) -> str:
    from reprogate.core.documents import load_text
    from reprogate.github.touched import rebuild_digest

    data = load_text(git(repo, "show", f"{sha}:records/startup.yaml"), "startup")
    return str(rebuild_digest(data.data))


def test_a_forged_verdict_file_does_not_promote_a_baseline(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, promote)
    github.permissions["maintainer"] = "write"
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert result.exit_code == 0, result.output
    assert ("reprogate/baseline", "success") not in statuses(github)
    assert ("reprogate/baseline", "pending") in statuses(github)
    (sent,) = dispatches(github)
    assert json.loads(sent["inputs"]["records"]) == ["records/startup.yaml"] and sent["inputs"]["baseline"] == "true"


def test_a_success_from_another_workflow_does_not_promote_a_baseline(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, promote)
    github.permissions["maintainer"] = "write"
    elsewhere = github.add_run(555, path=".github/workflows/anything.yml")
    digest = startup_digest(repo, head)[len("canonical-v1:sha256:") :][:12]
    github.post_status(head, "success", "reprogate/reproduction", f"reproduced: startup contract held; base {base[:12]}; record {digest}", elsewhere)
    run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert ("reprogate/baseline", "success") not in statuses(github)
    assert "actions/get-workflow-run" in github.operations()


def test_a_passing_rebuild_of_this_head_and_record_promotes_the_baseline(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, lambda r: promote(r, forged=False))
    github.permissions["maintainer"] = "write"
    digest = startup_digest(repo, head)[len("canonical-v1:sha256:") :][:12]
    text = f"reproduced: startup contract held; base {base[:12]}; record {digest}"
    github.post_status(head, "success", "reprogate/reproduction", text, trusted_run(github, head))
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert result.exit_code == 0, result.output
    assert statuses(github, head)[-1] == ("reprogate/baseline", "success") and dispatches(github) == []


def test_a_passing_rebuild_of_another_record_version_does_not_promote(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, lambda r: promote(r, forged=False))
    github.permissions["maintainer"] = "write"
    github.post_status(
        head, "success", "reprogate/reproduction", f"reproduced: startup contract held; base {base[:12]}; record 0123456789ab", trusted_run(github, head)
    )
    run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert statuses(github, head)[-1] == ("reprogate/baseline", "pending") and len(dispatches(github)) == 1


def test_a_triage_users_baseline_label_is_ignored(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, promote)
    github.permissions["triager"] = "read"  # GitHub reports triage as read
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="triager"))
    assert result.exit_code == 0
    assert not [s for s in statuses(github) if s[0] == "reprogate/baseline"]
    assert "triager applied reprogate/baseline without write permission" in result.output


def test_an_injected_label_name_cannot_write_a_workflow_command(run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    evil = "x\n::set-output name=rebuild-required::false"
    base, head = bump_lock(repo)
    github.permissions["triager"] = "read"
    result = run_gate(pr_event("labeled", base, head, labels=(evil,), label=evil, sender="triager"))
    assert "::set-output name=rebuild-required::false" in result.output, result.output  # printed, but only where it is inert
    fenced = False
    for line in result.output.splitlines():
        if line.startswith("::stop-commands::"):
            fenced, end = True, "::" + line.removeprefix("::stop-commands::") + "::"
        elif fenced and line == end:
            fenced = False
        elif line.startswith("::") and not fenced:
            assert line.startswith(("::notice ", "::error ", "::warning ")), line
    assert "rebuild-required=true\n" in (tmp_path / "outputs").read_text() and "rebuild-required=false" not in (tmp_path / "outputs").read_text()


def test_late_label_events_after_a_verdict_post_nothing(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.permissions.update(maintainer="write", triager="read")
    run_gate(pr_event("opened", base, head))
    github.post_status(
        head, "success", "reprogate/reproduction", f"reproduced: bitwise contract held; base {base[:12]}; record 0123456789ab", trusted_run(github, head)
    )
    before = len(github.statuses)
    for event in (
        pr_event("labeled", base, head, labels=("documentation",), label="documentation", sender="maintainer"),
        pr_event("unlabeled", base, head, label="documentation", sender="maintainer"),
        pr_event("edited", base, head, sender="someone"),
        pr_event("reopened", base, head, sender="someone"),
        pr_event("labeled", base, head, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="triager"),
    ):
        result = run_gate(event)
        assert result.exit_code == 0, result.output
    assert len(github.statuses) == before and len(dispatches(github)) == 1
    assert github.statuses[-1]["state"] == "success"


def test_a_writers_rebuild_label_after_a_verdict_redispatches_without_pending(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.permissions["maintainer"] = "write"
    run_gate(pr_event("opened", base, head))
    github.post_status(head, "failure", "reprogate/reproduction", f"not reproduced: tiny first differs at steps; base {base[:12]}", trusted_run(github, head))
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/rebuild",), label="reprogate/rebuild", sender="maintainer"))
    assert len(dispatches(github)) == 2
    assert statuses(github, head)[-1] == ("reprogate/reproduction", "failure")
    assert "a terminal status is never replaced by pending" in result.output


def test_fork_pr_events_after_a_verdict_do_not_post_pending(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = bump_lock(repo)
    github.post_status(
        head, "success", "reprogate/reproduction", f"reproduced: bitwise contract held; base {base[:12]}; record 0123456789ab", trusted_run(github, head)
    )
    for action in ("reopened", "edited", "unlabeled"):
        run_gate(pr_event(action, base, head, fork=True))
    assert statuses(github) == [("reprogate/reproduction", "success")]


def test_lock_file_drift_is_rebuilt_not_invalid(run_gate: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    base, head = commit(repo, lambda r: (r / "requirements.txt").write_text((r / "requirements.txt").read_text() + "six==1.17.0\n"))
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    assert statuses(github) == [("reprogate/reproduction", "pending")]
    (sent,) = dispatches(github)
    assert json.loads(sent["inputs"]["records"]) == ["records/bitwise.yaml", "records/drill.yaml", "records/startup.yaml"]
    assert "Environment drift" in github.comments[0]["body"]
    outputs = (tmp_path / "outputs").read_text()
    assert "drift=records/bitwise.yaml:source.lock_files[0].checksum," in outputs


def test_dockerfile_drift_dispatches_the_records_built_from_it(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, lambda r: (r / "Dockerfile").write_text((r / "Dockerfile").read_text() + "\nENV EXTRA=1\n"))
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    (sent,) = dispatches(github)
    assert json.loads(sent["inputs"]["records"]) == ["records/behavioral.yaml", "records/drill.yaml"]


def test_a_changed_reference_artifact_is_still_invalid(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, lambda r: (r / "config" / "c19.yaml").write_text((r / "config" / "c19.yaml").read_text() + "extra: 1\n"))
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1
    assert statuses(github) == [("reprogate/reproduction", "failure")] and dispatches(github) == []


def test_malformed_event_files_are_usage_errors(cli: Callable[..., Result], github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch) -> None:
    from support.gate import gate_env

    base, head = docs_only(repo)
    good = pr_event("opened", base, head)
    broken = {
        "not json": "{",
        "a list": "[]",
        "head sha a number": json.dumps({**good, "pull_request": {**good["pull_request"], "head": {"sha": 7}}}),
        "labels a string": json.dumps({**good, "pull_request": {**good["pull_request"], "labels": "bug"}}),
        "no pull_request": json.dumps({k: v for k, v in good.items() if k != "pull_request"}),
        "lone surrogate": '{"action": "opened", "pull_request": {"title": "\\ud800"}}',
    }
    for name, text in broken.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        for key, value in gate_env(github, tmp_path, "pull_request", path).items():
            monkeypatch.setenv(key, value)
        result = cli("gate", "--repo", str(repo))
        assert result.exit_code == 2, (name, result.output)
        assert str(path) in result.output and "Traceback" not in result.output, (name, result.output)
    assert github.statuses == []


def test_status_posts_error_for_every_unreadable_verdict(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    mistyped = make_verdict("pass")
    mistyped["stages"] = "all good"
    cases = {"empty": "", "not json": "{verdict: pass", "mistyped": json.dumps(mistyped), "a list": "[]", "forged shape": json.dumps({"verdict": "pass"})}
    for name, text in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        result = post_status(repo, head, "--from-verdict", str(path))
        assert result.exit_code == 0, (name, result.output)
        assert github.statuses[-1]["state"] == "error", name
    result = post_status(repo, head, "--from-verdict", str(tmp_path / "missing.json"))
    assert result.exit_code == 0 and github.statuses[-1]["state"] == "error"
    assert len(github.statuses) == len(cases) + 1


def several_records(repo: Path) -> tuple[str, list[str]]:
    """Three records at a new head commit: copies of the startup record under other names."""
    names = [f"records/r{i}.yaml" for i in range(3)]

    def add(root: Path) -> None:
        for i, name in enumerate(names):
            text = (root / "records" / "startup.yaml").read_text().replace("name: ", f"name: r{i}-", 1)
            (root / name).write_text(text)

    return commit(repo, add)[1], names


def test_status_of_several_records_is_one_terminal_state(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    head, names = several_records(repo)
    paths = []
    for i in range(2):
        paths.append(tmp_path / f"v{i}.json")
        paths[-1].write_text(json.dumps(bound_verdict(repo, head, names[i])))
    digests = [record_digest_at(repo, head, n).rsplit(":", 1)[1][:12] for n in names]
    args = [a for p in paths for a in ("--from-verdict", str(p))]
    assert post_status(repo, head, *args, "--expect-records", json.dumps(names[:2])).exit_code == 0
    assert github.statuses[-1]["state"] == "success" and github.statuses[-1]["description"].endswith(f"records {digests[0]},{digests[1]}")
    post_status(repo, head, *args, "--expect-records", json.dumps(names))
    assert github.statuses[-1]["state"] == "error" and "1 missing" in github.statuses[-1]["description"]
    paths.append(tmp_path / "v2.json")
    paths[-1].write_text(json.dumps(bound_verdict(repo, head, names[2], "fail", "steps")))
    post_status(repo, head, *[a for p in paths for a in ("--from-verdict", str(p))], "--also-context", "reprogate/baseline", result="failure")
    assert [s["state"] for s in github.statuses[-2:]] == ["failure", "failure"] and github.statuses[-1]["context"] == "reprogate/baseline"


def test_the_gate_and_the_rebuild_bind_verdicts_to_the_same_record_digest() -> None:
    from support import EXAMPLES

    from reprogate.core.documents import load_document
    from reprogate.github.touched import rebuild_digest
    from reprogate.rebuild.state import record_digest

    data = load_document(EXAMPLES / "tiny" / "records" / "tiny.yaml").data
    promoted = dict(data, baseline={"promoted": True, "by": "maintainer"})
    assert rebuild_digest(data) == rebuild_digest(promoted) == record_digest(promoted)
