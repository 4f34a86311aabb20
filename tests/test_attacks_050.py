"""0.5.0's new surface, attacked: the Check Run (what the gate reads back, what the status job
completes), SARIF locations, attest and badge, the base's contract over semantics, realizer and
configuration pin, audit --retiring and capacity on hostile paths and partition names, and the
action's new inputs. Each test fails if its attack works."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import REPO, git, require_tool
from support.gate import FakeGitHub, commit, dispatches, pr_event, statuses, trusted_run
from support.verdicts import bound_verdict, make_verdict, typed
from test_action import fake_venv  # noqa: F401 (a fixture)

from reprogate.attest.badge import badge
from reprogate.attest.statement import outcome
from reprogate.github import checks
from reprogate.github.client import GitHubClient
from reprogate.github.verdicts import terminal

Run = Callable[..., Result]
TINY = "tiny/records/tiny.yaml"
PASSING = {"success", "neutral", "skipped"}  # what branch protection counts as a passing check


def client(github: FakeGitHub) -> GitHubClient:
    return GitHubClient("ghs_test", api_url=github.url, write_interval=0.0)


def promote(root: Path) -> None:
    """Promote the startup record to baseline (no verdict file: the proof must be a trusted rebuild)."""
    record = root / "records" / "startup.yaml"
    record.write_text(record.read_text() + "baseline:\n  promoted: true\n  by: maintainer\n")


def startup_short_digest(repo: Path, sha: str) -> str:
    from reprogate.core.documents import load_text
    from reprogate.github.touched import rebuild_digest

    data = load_text(git(repo, "show", f"{sha}:records/startup.yaml"), "startup")
    return str(rebuild_digest(data.data)).rsplit(":", 1)[-1][:12]


def forged_check_run(github: FakeGitHub, head: str, title: str, url: str, *, app: str = "github-actions", external_id: str | None = None) -> None:
    """A completed `success` check run of the gate's name that something other than reprogate
    created: another app installed with checks: write, or a job named reprogate/reproduction in a
    workflow the pull request adds (GitHub Actions' app, no external id)."""
    github.token_app = app
    body: dict = {"name": "reprogate/reproduction", "head_sha": head, "status": "completed", "conclusion": "success", "details_url": url}
    body["output"] = {"title": title, "summary": "all good"}
    if external_id is not None:
        body["external_id"] = external_id
    client(github).create_check_run(github.repo, body)
    github.token_app = "github-actions"


# --- 1. the Check Run: what the gate reads back, what the status job completes ---


@pytest.mark.parametrize("app, external_id", [("evil-ci", "reprogate"), ("github-actions", None)], ids=["another-app", "a-workflow-job"])
def test_a_check_run_reprogate_did_not_create_is_no_baseline_proof(
    run_gate: Run, github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch, app: str, external_id: str | None
) -> None:
    """With --publish check-run the gate reads check runs back as statuses: one of the same name,
    `success`, whose title is crafted to name the base and the record digest, linking to a real
    run of the rebuild workflow dispatched for this very head, still proves nothing when another
    app or a pull request's own job made it."""
    monkeypatch.setenv("REPROGATE_PUBLISH", "check-run")
    base, head = commit(repo, promote)
    github.permissions["maintainer"] = "write"
    digest = startup_short_digest(repo, head)
    forged_check_run(
        github, head, f"reproduced: startup contract held; base {base[:12]}; record {digest}", trusted_run(github, head), app=app, external_id=external_id
    )
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert result.exit_code == 0, result.output
    baseline = [r for r in github.check_runs if r["name"] == "reprogate/baseline"]
    assert [r["conclusion"] for r in baseline if r["status"] == "completed"] != ["success"]
    assert len(dispatches(github)) == 1, "a rebuild of the promoted record is dispatched instead"


def test_as_statuses_reads_only_reprogates_own_check_runs() -> None:
    run = {"id": 1, "name": "reprogate/reproduction", "status": "completed", "conclusion": "success", "output": {"title": "passed: x; base abcdefabcdef"}}
    assert checks.as_statuses([dict(run, app={"slug": "github-actions"}, external_id="reprogate")])[0].state == "success"
    assert checks.as_statuses([dict(run, app={"slug": "github-actions"})]) == []  # a workflow job named like the check
    assert checks.as_statuses([dict(run, app={"slug": "other"}, external_id="reprogate")]) == []
    assert checks.as_statuses([dict(run, app=None, external_id="reprogate")]) == []


@pytest.mark.parametrize("publish", ["status", "check-run"])
def test_a_success_linking_to_a_trusted_rebuild_of_another_head_is_no_baseline_proof(
    run_gate: Run, github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch, publish: str
) -> None:
    """The description and the link are whatever the poster wrote: a success that names this base
    and this record's digest and links to a real, trusted, passing rebuild run of *another* commit
    must not promote. The run must have been dispatched for this head (its run-name)."""
    monkeypatch.setenv("REPROGATE_PUBLISH", publish)
    base, head = commit(repo, promote)
    github.permissions["maintainer"] = "write"
    digest = startup_short_digest(repo, head)
    text = f"reproduced: startup contract held; base {base[:12]}; record {digest}"
    elsewhere = trusted_run(github, base)  # a genuine rebuild run, of the base commit
    if publish == "status":
        github.post_status(head, "success", "reprogate/reproduction", text, elsewhere)
    else:
        forged_check_run(github, head, text, elsewhere, external_id="reprogate")  # a writer's workflow can copy even the external id
    result = run_gate(pr_event("labeled", base, head, labels=("reprogate/baseline",), label="reprogate/baseline", sender="maintainer"))
    assert result.exit_code == 0, result.output
    assert ("reprogate/baseline", "success") not in statuses(github)
    assert not [r for r in github.check_runs if r["name"] == "reprogate/baseline" and r["conclusion"] == "success"]
    assert len(dispatches(github)) == 1
    assert "was not dispatched for" in result.output


def test_the_status_job_never_completes_a_check_run_it_did_not_queue(post_status: Run, github: FakeGitHub, repo: Path, tmp_path: Path) -> None:
    """A job named `reprogate/reproduction` in a workflow the pull request adds is an open
    github-actions check run of that name; if the status job moved it to `completed`, GitHub would
    conclude it again when the job ends (success), and that would be the only run of the name."""
    head = git(repo, "rev-parse", "HEAD")
    client(github).create_check_run(
        github.repo, {"name": "reprogate/reproduction", "head_sha": head, "status": "in_progress", "output": {"title": "t", "summary": "s"}}
    )
    verdict = tmp_path / "v.json"
    verdict.write_text(json.dumps(bound_verdict(repo, head, TINY, "fail", "steps")))
    assert post_status(repo, head, "--from-verdict", str(verdict), "--publish", "check-run").exit_code == 0
    job, mine = github.check_runs
    assert job["status"] == "in_progress" and job["conclusion"] is None, "the job's own check run was left alone"
    assert mine["external_id"] == "reprogate" and mine["conclusion"] == "failure"


@pytest.mark.parametrize("state", ["error", "pending", "inconclusive", "", "neutral", "skipped", "cancelled"])
def test_nothing_but_success_concludes_as_passing(state: str) -> None:
    assert checks.conclusion(state) not in PASSING


# --- 2. SARIF: no artifact URI climbs out of the checkout, and hostile names keep the log valid ---

SARIF_SCHEMA = REPO / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"


def sarif_locations(text: str) -> list[dict]:
    import jsonschema

    log = json.loads(text)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text()), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    return [loc["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"] for loc in r.get("locations", [])]


def test_sarif_locations_never_climb_out_of_the_checkout(cli: Run, project: Path, tmp_path: Path) -> None:
    """A record named `../x.yaml`, `records/../../x.yaml`, absolute inside or outside the checkout,
    or with a newline and `%` in its name: every %SRCROOT%-relative URI stays inside the checkout
    (code scanning would otherwise place a result on a file of another repository's layout), and
    an absolute path inside the checkout is made relative."""
    outside = tmp_path / "outside.yaml"
    outside.write_text((project / "records" / "bitwise.yaml").read_text().replace("level: bitwise", "level: bitwize", 1))
    odd = project / "records" / "new\nline%0A.yaml"
    odd.write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
    inside = project / "records" / "bitwise.yaml"
    inside.write_text(inside.read_text().replace("level: bitwise", "level: bitwize", 1))
    args = ["../outside.yaml", "records/../../outside.yaml", str(outside), str(inside), str(odd)]
    result = cli("validate", "--format", "sarif", *args, cwd=project)
    assert result.exit_code == 1 and "Traceback" not in result.output
    locations = sarif_locations(result.output)
    relative = [loc["uri"] for loc in locations if loc.get("uriBaseId") == "%SRCROOT%"]
    assert relative and all(not uri.startswith(("../", "/")) and "/../" not in f"/{uri}" and "\n" not in uri for uri in relative), relative
    assert "records/bitwise.yaml" in relative, "an absolute path inside the checkout is relative to it"
    assert "records/new%0Aline%250A.yaml" in relative
    absolute = {loc["uri"] for loc in locations if "uriBaseId" not in loc}
    assert absolute == {"file://" + str(outside)}, absolute


# --- 3. attest and badge: a pass is believed only when the whole verdict says so ---


def _contradicting(kind: str) -> dict:
    verdict = make_verdict("pass")
    if kind == "infrastructure":
        verdict["infrastructure"] = True
    elif kind == "diagnosis":
        verdict["diagnosis"] = "steps"
    elif kind == "failed-stage":
        verdict["stages"][8]["status"] = "fail"
    elif kind == "nothing-ran":
        for stage in verdict["stages"]:
            stage["status"] = "not-run"
    return verdict


@pytest.mark.parametrize("kind", ["infrastructure", "diagnosis", "failed-stage", "nothing-ran"])
def test_a_pass_that_contradicts_itself_is_never_reproduced(kind: str, cli: Run, tmp_path: Path) -> None:
    """`verdict: pass` beside a failed stage, a diagnosis, the infrastructure flag, or no stage
    that ran: not what a finished rebuild writes. Neither the badge, the statement's outcome nor
    the status reads it as a reproduction."""
    verdict = _contradicting(kind)
    assert badge([typed(verdict)])["color"] != "brightgreen"
    assert outcome(typed(verdict)) == "inconclusive"
    assert terminal([typed(verdict)], [], []).state == "error"
    path = tmp_path / "verdict.json"
    path.write_text(json.dumps(verdict))
    done = cli("badge", str(path), cwd=tmp_path)
    assert "brightgreen" not in done.output and "Traceback" not in done.output


def test_a_verdict_and_rebuild_record_committed_in_the_pull_request_are_not_attested(cli: Run, project: Path) -> None:
    """Self-consistent files a contributor writes (the record's digest, the rebuild record's
    checksum, `verdict: pass`) carry no nonce of the dispatch and no run: the attest job's
    --nonce and --run-id refuse them."""
    from reprogate.core.documents import load_text
    from reprogate.github.touched import rebuild_digest

    record = project / "records" / "bitwise.yaml"
    forged = project / "forged"
    forged.mkdir()
    (forged / "rebuild-record.yaml").write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
    checksum = hashlib.sha256((forged / "rebuild-record.yaml").read_bytes()).hexdigest()
    verdict = make_verdict("pass", digest=str(rebuild_digest(load_text(record.read_text(), str(record)).data)))
    verdict["record"]["path"] = "records/bitwise.yaml"
    verdict["rebuild_record"] = {"path": "rebuild-record.yaml", "checksum": f"sha256:{checksum}"}
    verdict["run"] = {"nonce": "guessed-nonce-0123456789", "id": "1"}
    (forged / "verdict.json").write_text(json.dumps(verdict))
    done = cli("attest", "--nonce", "the-dispatch-nonce-0123456789", "--run-id", "424242", "--", "forged/verdict.json", cwd=project)
    assert done.exit_code == 1 and "nonce" in done.output, done.output
    done = cli("attest", "--nonce", "guessed-nonce-0123456789", "--run-id", "424242", "--", "forged/verdict.json", cwd=project)
    assert done.exit_code == 1 and "run 1" in done.output, done.output


# --- 5. capacity and audit --retiring on hostile names and files ---


@pytest.mark.parametrize("partition", ["-a", "--help", "gpu;id", "$(id)", "gpu -a", "gpu\n-a", "../x"])
def test_a_partition_name_never_reaches_scontrol_as_an_option(cli: Run, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, partition: str) -> None:
    """`scontrol show partition -o -a` describes every partition: a name that starts with `-` is an
    option to Slurm's client, not a partition. Refused (exit 2) before any Slurm command runs."""
    calls = tmp_path / "calls"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (fake / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    done = cli("capacity", "records/bitwise.yaml", "--cluster", f"slurm:{partition}", cwd=project)
    assert done.exit_code == 2 and "not a partition name" in done.output and "Traceback" not in done.output, done.output
    assert not calls.exists(), calls.read_text()


@pytest.mark.parametrize("what", ["fifo", "huge", "symlink-loop"])
def test_a_cluster_file_that_is_a_fifo_huge_or_a_loop_is_a_clear_refusal(cli: Run, project: Path, tmp_path: Path, what: str) -> None:
    pool = tmp_path / "pool.yaml"
    if what == "fifo":
        os.mkfifo(pool)
    elif what == "huge":
        with pool.open("wb") as out:
            out.truncate(1 << 30)  # a sparse gigabyte: no disk spent, and no reader may load it whole
    else:
        pool.symlink_to(pool)
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "capacity", "records/bitwise.yaml", "--cluster", str(pool)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(pool) in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("what", ["fifo", "symlink-out"])
def test_audit_retiring_over_a_record_that_is_a_fifo_or_a_link_out_neither_hangs_nor_tracebacks(cli: Run, project: Path, tmp_path: Path, what: str) -> None:
    record = project / "records" / "hostile.yaml"
    if what == "fifo":
        os.mkfifo(record)
    else:
        (tmp_path / "secret.yaml").write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
        record.symlink_to(tmp_path / "secret.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "audit", "--retiring", "ghcr.io/octo", "--", "records/"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, done.stdout + done.stderr


# --- 6. the action: sarif-file is written by the shell's redirect ---


def sarif_run(venv: Path, cwd: Path, sarif_file: str, **env: str) -> subprocess.CompletedProcess[str]:
    require_tool("bash")
    inputs = {"PATH": os.environ["PATH"], "VENV": str(venv), "INPUT_COMMAND": "validate", "INPUT_RECORDS": "records/", "INPUT_SARIF_FILE": sarif_file, **env}
    return subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=inputs, cwd=cwd, capture_output=True, text=True, check=False)


def test_sarif_file_is_never_written_through_a_link_the_checkout_holds(fake_venv: Path, tmp_path: Path) -> None:  # noqa: F811
    """A pull request that commits `reprogate.sarif -> ~/.bashrc` (or a folder linking out of the
    workspace) would have the action's redirect overwrite that file with the SARIF log."""
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    trusted = home / ".bashrc"
    trusted.write_text("trusted\n")
    (workspace / "reprogate.sarif").symlink_to(trusted)
    (workspace / "out").symlink_to(home)
    for target in ("reprogate.sarif", "out/new.sarif", str(home / "x.sarif"), "../home/y.sarif"):
        done = sarif_run(fake_venv, workspace, target, GITHUB_WORKSPACE=str(workspace))
        assert done.returncode == 2 and "sarif-file" in done.stdout, (target, done.stdout, done.stderr)
    assert trusted.read_text() == "trusted\n" and sorted(p.name for p in home.iterdir()) == [".bashrc"]
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    for target, where in (("findings.sarif", workspace / "findings.sarif"), (str(runner_temp / "f.sarif"), runner_temp / "f.sarif")):
        done = sarif_run(fake_venv, workspace, target, GITHUB_WORKSPACE=str(workspace), RUNNER_TEMP=str(runner_temp))
        assert done.returncode == 0 and where.read_text().startswith("token="), done.stdout + done.stderr


@pytest.mark.parametrize("value", ["both;id", "--dry-run", "check-run\nstatus", "all"])
def test_the_publish_input_is_one_of_three_words(cli: Run, repo: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """REPROGATE_PUBLISH (the action's `publish` input) is read by click as a choice: anything else is exit 2."""
    monkeypatch.setenv("REPROGATE_PUBLISH", value)
    done = cli("gate", "--repo", str(repo), "--dry-run", str(repo / "missing.json"))
    assert done.exit_code == 2 and "Traceback" not in done.output
