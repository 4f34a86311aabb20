"""Issue 41's gate answers that were not true (items 8, 10 and 12), each tried as a user met it:
through `reprogate gate` on pull_request webhook payloads from GitHub's own examples, against the
API stand-in held to GitHub's OpenAPI description, and `gate --dry-run` on a real repository."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from support import edit_record
from support.gate import FakeGitHub, commit, pr_event, require_octokit, statuses

require_octokit()

Run = Callable[..., Result]
TINY = Path("tiny") / "records" / "tiny.yaml"
LONG = "requirements-of-the-reference-training-environment-for-the-tiny-model.lock"  # a name no detector knows


def two_mistakes(root: Path) -> None:
    """One record, two errors: a contract level that does not exist, and a negative seed count."""

    def change(record: dict) -> None:
        record["contract"]["level"] = "nearly"
        record["execution"]["world_size"] = -1

    edit_record(root / TINY, change)


def test_one_record_with_two_errors_is_one_invalid_record(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, two_mistakes)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1, result.output
    [(context, state)] = statuses(github, head)
    description = github.statuses[-1]["description"]
    assert state == "failure" and re.match(r"1 invalid record \(\d+ errors\): run reprogate validate", description), description
    assert re.search(r"\*\*1 invalid record \(\d+ errors\)\*\*", github.comments[0]["body"])


def test_a_long_description_is_cut_on_a_word_and_keeps_its_base(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """The reasons of a rebuild name paths; 0.5.0 cut the description at 140 characters wherever
    that fell, mid-path, and a description that lost its `; base …` counts for no base."""

    def pin(text: str) -> Callable[[Path], None]:
        def change(root: Path) -> None:
            (root / "tiny" / LONG).write_text(text)

            def repin(record: dict) -> None:
                checksum = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
                record["source"]["lock_files"] = [{"path": f"tiny/{LONG}", "checksum": checksum, "format": "pip-requirements"}]

            edit_record(root / TINY, repin)

        return change

    commit(repo, pin("numpy==1.26.4\n"))
    change = pin("numpy==2.4.6\n")
    base, head = commit(repo, change)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    description = github.statuses[-1]["description"]
    assert len(description) <= 140 and description.endswith(f"; base {base[:12]}"), description
    said = description.removesuffix(f"; base {base[:12]}")
    assert said.endswith("…"), said
    whole = next(line.split(": ", 1)[1] for line in result.output.splitlines() if line.startswith("reprogate/reproduction = pending: "))
    kept = said.removesuffix("…")
    reasons = [line.removeprefix("rebuild required: ") for line in result.output.splitlines() if line.startswith("rebuild required: ")]
    full = f"rebuild of 1 record(s) dispatched ({', '.join(reasons)})"
    assert full.startswith(kept) and re.match(r"[ ,;)]", full[len(kept)]), (kept, full)
    assert whole == description


def test_adding_semantics_to_an_old_record_says_it_needs_a_baseline_promotion(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """Issue 41.12: an old project (its record states no realizer and no semantics, so `validate`
    warns realizer-implicit) follows the hint in an ordinary pull request; the base's record still
    decides how the rebuild realizes the environment, so that pull request was rebuilt the old way
    and failed, with nothing saying why. The hint and the gate's comment now say what it takes."""

    def old_project(root: Path) -> None:
        text = "numpy==1.26.4\n"
        (root / "tiny" / "requirements.lock").write_text(text)

        def written_by_an_old_release(record: dict) -> None:
            record["job"].pop("environment")
            checksum = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            record["source"]["lock_files"] = [{"path": "tiny/requirements.lock", "checksum": checksum, "format": "pip-requirements"}]

        edit_record(root / TINY, written_by_an_old_release)

    commit(repo, old_project)
    hinted = run_gate_validate(repo)
    assert "realizer-implicit" in hinted and "baseline promotion" in hinted and "reprogate/baseline" in hinted, hinted
    base, head = commit(repo, lambda root: edit_record(root / TINY, lambda r: r.update(semantics="0.1")))
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    body = github.comments[-1]["body"]
    assert "take effect only through a baseline promotion" in body and "`semantics`" in body, body
    assert "contract of tiny/records/tiny.yaml" in result.output and "semantics" in result.output


def run_gate_validate(repo: Path) -> str:
    from click.testing import CliRunner

    from reprogate.cli import main

    done = CliRunner().invoke(main, ["validate", str(repo / TINY), "--format", "json"], catch_exceptions=False)
    return done.output
