"""Issue 25's pull requests on a real repository: a change to a reference artifact the record pins
(the training code in its project folder, an in-repo dataset shard) is a failing record at once
— never `success`, never a GPU asked for — and the message names the file, the record and the
way forward. A docs-only pull request still gets `success`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support.gate import FakeGitHub, commit, dispatches, docs_only, pr_event, require_octokit, statuses

require_octokit()

Run = Callable[..., Result]


def test_a_training_code_change_in_the_pinned_folder_fails_at_once(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    def raise_lr(root: Path) -> None:
        train = root / "tiny" / "project" / "train.py"
        text = train.read_text()
        assert "lr" in text
        train.write_text(text + "\n# lr * 1.1\n")

    base, head = commit(repo, raise_lr)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1, result.output
    assert statuses(github, head) == [("reprogate/reproduction", "failure")] and dispatches(github) == []
    assert "tiny/records/tiny.yaml" in result.output and "train.py" in result.output and "source.tree" in result.output
    assert "promote it with the baseline label" in result.output


def flip_shard(root: Path) -> None:
    """One bit of an in-repository shard flipped; the manifest left as it was."""
    shard = root / "tiny" / "data" / "shard-002.txt"
    data = bytearray(shard.read_bytes())
    data[7] ^= 1
    shard.write_bytes(bytes(data))


def test_a_flipped_bit_in_an_in_repo_shard_fails_at_once(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = commit(repo, flip_shard)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1, result.output
    assert statuses(github, head) == [("reprogate/reproduction", "failure")] and dispatches(github) == []
    assert "shard shard-002.txt of tiny/data/tiny.manifest.yaml" in result.output and "tiny/records/tiny.yaml" in result.output


def test_a_changed_shard_is_hashed_whatever_the_datasets_size_when_the_diff_names_it(tmp_path: Path, repo: Path) -> None:
    """validate alone hashes in-repo shards only up to HASH_BUDGET; the gate hashes what the diff changed."""
    from reprogate.rules import shards
    from reprogate.validate.runner import Options, validate

    shard = repo / "tiny" / "data" / "shard-000.txt"
    data = bytearray(shard.read_bytes())
    data[0] ^= 1
    shard.write_bytes(bytes(data))
    record = str(repo / "tiny" / "records" / "tiny.yaml")
    budget = shards.HASH_BUDGET
    try:
        shards.HASH_BUDGET = 10  # as if the dataset were large
        unknown = validate([record], Options(root=repo))
        told = validate([record], Options(root=repo, changed=frozenset({shard.resolve()})))
    finally:
        shards.HASH_BUDGET = budget
    codes = lambda report: [d.code for f in report.files for d in f.diagnostics]
    assert "dataset-shard-changed" not in codes(unknown) and "dataset-shard-changed" in codes(told)
    assert "dataset-shard-changed" in codes(validate([record], Options(root=repo)))


def test_a_docs_only_pull_request_still_gets_success(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    base, head = docs_only(repo)
    assert run_gate(pr_event("opened", base, head)).exit_code == 0
    assert statuses(github, head) == [("reprogate/reproduction", "success")]


def pin_lock(root: Path, name: str, text: str) -> None:
    """The tiny record pins a lock file of pip's format under a name no detector knows."""
    import hashlib

    import yaml

    (root / "tiny" / name).write_text(text)
    record = root / "tiny" / "records" / "tiny.yaml"
    data = yaml.safe_load(record.read_text())
    data["source"]["lock_files"] = [{"path": f"tiny/{name}", "checksum": "sha256:" + hashlib.sha256(text.encode()).hexdigest(), "format": "pip-requirements"}]
    record.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_lock_pinned_under_a_name_no_detector_knows_is_rebuilt_when_it_changes(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==1.26.4\n"))
    base, head = commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==2.4.6\n"))  # the checksum updated in the same PR
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0, result.output
    assert statuses(github, head) == [("reprogate/reproduction", "pending")] and len(dispatches(github)) == 1, result.output
    assert "pinned inputs changed (tiny/records/tiny.yaml pins tiny/pins.lock, which changed" in result.output


def test_a_record_repointed_at_another_lock_is_rebuilt(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==1.26.4\n"))
    base, head = commit(repo, lambda r: pin_lock(r, "other.lock", "numpy==2.4.6\n"))
    result = run_gate(pr_event("opened", base, head))
    assert statuses(github, head) == [("reprogate/reproduction", "pending")] and len(dispatches(github)) == 1, result.output
    assert "tiny/records/tiny.yaml itself changed" in result.output


def test_a_hand_widened_interval_fails_at_once_and_a_recomputed_one_is_valid(run_gate: Run, github: FakeGitHub, repo: Path, cli: Run) -> None:
    import yaml

    def widen(root: Path) -> None:
        record = root / "tiny" / "records" / "tiny.yaml"
        data = yaml.safe_load(record.read_text())
        data["contract"]["metric"]["interval"]["high"] = 1.5
        record.write_text(yaml.safe_dump(data, sort_keys=False))

    base, head = commit(repo, widen)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")] and dispatches(github) == []
    assert "contract.metric.interval.high" in result.output and "wider than its own seeds" in result.output
    assert cli("interval", str(repo / "tiny" / "records" / "tiny.yaml")).exit_code == 0  # what the hint says to run
    assert cli("validate", str(repo / "tiny" / "records" / "tiny.yaml")).exit_code == 0


def test_a_loosened_contract_is_shown_side_by_side_and_judged_by_the_base(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    import yaml

    def loosen(root: Path) -> None:
        record = root / "tiny" / "records" / "tiny.yaml"
        data = yaml.safe_load(record.read_text())
        data["contract"]["tensors"] = ["model_state"]  # head.weight dropped
        data["contract"]["steps"]["count"] = 40
        record.write_text(yaml.safe_dump(data, sort_keys=False))

    base, head = commit(repo, loosen)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 0 and statuses(github, head) == [("reprogate/reproduction", "pending")], result.output
    (sent,) = dispatches(github)
    assert sent["inputs"]["base"] == base  # the rebuild workflow passes it as --contract-from
    body = github.comments[-1]["body"]
    assert "| `contract.tensors` |" in body and "| `contract.steps.count` | `80` | `40` | **loosened** |" in body
    assert "contract of tiny/records/tiny.yaml loosened" in result.output


def test_statistical_contract_changes_name_their_direction() -> None:
    from reprogate.github.contract_diff import contract_changes

    base = {"contract": {"metric": {"detect": {"absolute": 0.01, "power": 0.9}}}, "seeds": {"global": 1}}
    head = {"contract": {"metric": {"detect": {"absolute": 0.05, "power": 0.5}, "test": "equivalence"}}, "seeds": {"global": 1, "replay": [1, 2]}}
    assert {c.field: c.effect for c in contract_changes(base, head)} == {
        "contract.metric.detect.absolute": "loosened",
        "contract.metric.detect.power": "loosened",
        "contract.metric.test": "changed",
        "seeds.replay": "loosened",
    }


def test_contract_changes_name_their_direction() -> None:
    from reprogate.github.contract_diff import contract_changes

    base = {
        "contract": {
            "level": "bitwise",
            "tensors": ["a", "b"],
            "tolerance": {"abs": 0.0},
            "metric": {"alpha": 0.05, "interval": {"low": 1.0, "high": 2.0}},
            "envelope": {"gpu_models": ["H100"]},
        },
        "seeds": {"global": 1},
    }
    head = {
        "contract": {
            "level": "behavioral",
            "tensors": ["a", "b", "c"],
            "tolerance": {"abs": 0.01},
            "metric": {"alpha": 0.01, "interval": {"low": 1.1, "high": 2.5}},
            "envelope": {"gpu_models": ["H100", "A100"]},
        },
        "seeds": {"global": 2},
    }
    effects = {c.field: c.effect for c in contract_changes(base, head)}
    assert effects == {
        "contract.level": "loosened",
        "contract.tensors": "tightened",
        "contract.tolerance.abs": "loosened",
        "contract.metric.alpha": "loosened",
        "contract.metric.interval.low": "tightened",
        "contract.metric.interval.high": "loosened",
        "contract.envelope.gpu_models": "loosened",
        "seeds.global": "changed",
    }
    assert contract_changes(base, base) == []


def test_code_named_a_lock_file_by_the_pull_request_is_still_code(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """The head record lists train.py among its lock files, so that the tree check leaves it to
    the environment checks: a file is a lock file only if it parses as one."""
    import hashlib

    import yaml

    def hide(root: Path) -> None:
        train = root / "tiny" / "project" / "train.py"
        train.write_text(train.read_text() + "\nLR_SCALE = 1.1\n")
        record = root / "tiny" / "records" / "tiny.yaml"
        data = yaml.safe_load(record.read_text())
        entry = {"path": "tiny/project/train.py", "checksum": "sha256:" + hashlib.sha256(train.read_bytes()).hexdigest(), "format": "pip-requirements"}
        data["source"]["lock_files"] = [entry]
        record.write_text(yaml.safe_dump(data, sort_keys=False))

    base, head = commit(repo, hide)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")], result.output
    assert "invalid record: tiny/records/tiny.yaml:" in result.output and "changed: train.py" in result.output  # the record that named it, not only its sibling


def test_a_record_moved_out_of_the_records_globs_is_not_a_way_out(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    """Moved where the base's globs do not look, a record's pins would go unwatched from the next
    pull request on: the move itself fails."""
    from support import git

    def move(root: Path) -> None:
        (root / "retired").mkdir()
        git(root, "mv", "tiny/records/tiny.yaml", "retired/tiny.yaml")

    base, head = commit(repo, move)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")], result.output
    assert "tiny/records/tiny.yaml: a run record the base holds is gone at the head" in result.output


def test_a_gate_run_with_repo_naming_the_configs_subfolder_validates_the_head(
    cli: Run, github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gate --repo ml` (the folder holding .reprogate.yaml) used to validate ml/ml/… and find nothing."""
    import json
    import shutil

    from support import EXAMPLES, git
    from support.gate import gate_env

    top = tmp_path / "mono"
    shutil.copytree(EXAMPLES, top / "ml")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "base")
    train = top / "ml" / "tiny" / "project" / "train.py"
    base, head = commit(top, lambda r: train.write_text(train.read_text() + "\nLR_SCALE = 1.1\n"))
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pr_event("opened", base, head)))
    for key, value in gate_env(github, tmp_path, "pull_request", event).items():
        monkeypatch.setenv(key, value)
    result = cli("gate", "--repo", str(top / "ml"))
    assert result.exit_code == 1 and statuses(github, head) == [("reprogate/reproduction", "failure")], result.output
    assert "ml/tiny/records/tiny.yaml" in result.output and "train.py" in result.output


def test_the_comment_names_invalid_records_and_why_a_rebuild_was_asked_for(run_gate: Run, github: FakeGitHub, repo: Path) -> None:
    commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==1.26.4\n"))
    base, head = commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==2.4.6\n"))
    run_gate(pr_event("opened", base, head))
    why = next(line for line in github.comments[-1]["body"].splitlines() if line.startswith("Why: "))
    assert "pinned inputs changed" in why and "pins.lock" in why

    def raise_lr(root: Path) -> None:
        train = root / "tiny" / "project" / "train.py"
        train.write_text(train.read_text() + "\n# lr * 1.1\n")

    base, head = commit(repo, raise_lr)
    run_gate(pr_event("synchronize", base, head))
    body = github.comments[-1]["body"]
    assert "**2 invalid records**" in body and "train.py" in body and "init FOLDER --force" in body


# `reprogate detect` alone reads the records too: every path a base record pins is watched, with
# its layer, and the change names the record (issue 25, item 1).


def detected(cli: Run, repo: Path, base: str, *extra: str) -> dict:
    import json

    done = cli("detect", "--repo", str(repo), "--base", base, "--head", "HEAD", "--format", "json", *extra)
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


def test_detect_names_a_code_change_in_the_pinned_folder_and_the_record(cli: Run, repo: Path) -> None:
    base, _ = commit(repo, lambda r: (r / "tiny" / "project" / "train.py").write_text((r / "tiny" / "project" / "train.py").read_text() + "# lr * 1.1\n"))
    found = detected(cli, repo, base)
    assert found["rebuild_required"] is True and found["layers"] == ["source"]
    assert {
        "layer": "source",
        "path": "tiny/project/train.py",
        "kind": "pinned",
        "detail": "changed; tiny/records/tiny.yaml pins it (source.path)",
        "record": "tiny/records/tiny.yaml",
    } in found["changes"]["source"]
    assert sorted(c["record"] for c in found["changes"]["source"]) == ["tiny/records/tiny-2node.yaml", "tiny/records/tiny.yaml"]  # both records pin the folder
    text = cli("detect", "--repo", str(repo), "--base", base).output
    assert "source:\n  tiny/project/train.py: changed; tiny/records/tiny.yaml pins it (source.path)" in text and "rebuild required: yes" in text


def test_detect_names_a_flipped_in_repo_shard_as_a_dataset_change(cli: Run, repo: Path) -> None:
    base, _ = commit(repo, flip_shard)
    [change] = [c for c in detected(cli, repo, base)["changes"]["dataset"] if c["record"] == "tiny/records/tiny.yaml"]
    assert change["path"] == "tiny/data/shard-002.txt" and change["record"] == "tiny/records/tiny.yaml"
    assert change["detail"] == "changed; tiny/records/tiny.yaml pins it (dataset.manifest.path -> shards[2])"


def test_detect_watches_a_lock_under_any_name_and_marks_known_ones_with_their_record(cli: Run, repo: Path) -> None:
    commit(repo, lambda r: pin_lock(r, "pins.lock", "numpy==1.26.4\n"))
    base, _ = commit(repo, lambda r: (r / "tiny" / "pins.lock").write_text("numpy==2.4.6\n"))
    [change] = detected(cli, repo, base)["changes"]["framework"]
    assert change["path"] == "tiny/pins.lock" and change["kind"] == "pinned" and "source.lock_files[0].path" in change["detail"]

    commit(repo, lambda r: pin_lock(r, "requirements-pinned.txt", "numpy==1.26.4\n"))
    base, _ = commit(repo, lambda r: (r / "tiny" / "requirements-pinned.txt").write_text("numpy==2.4.6\n"))
    [change] = detected(cli, repo, base)["changes"]["framework"]
    assert (change["kind"], change["subject"], change["record"]) == ("version", "numpy", "tiny/records/tiny.yaml")  # the detector's detail, and who pins it
    assert "numpy 1.26.4 -> 2.4.6 (pinned by tiny/records/tiny.yaml)" in cli("detect", "--repo", str(repo), "--base", base).output


def test_watch_ignore_does_not_hide_what_a_record_pins(cli: Run, repo: Path) -> None:
    config = repo / ".reprogate.yaml"
    config.write_text(config.read_text().replace("watch:\n", "watch:\n  ignore: ['tiny/project/**', '*.py']\n"))
    commit(repo, lambda r: None)
    base, _ = commit(repo, lambda r: (r / "tiny" / "project" / "train.py").write_text("print('changed')\n"))
    assert {c["path"] for c in detected(cli, repo, base)["changes"]["source"]} == {"tiny/project/train.py"}


def test_detect_reads_records_from_the_base_so_a_pull_request_cannot_disown_a_file(cli: Run, repo: Path) -> None:
    import yaml

    def disown(root: Path) -> None:
        record = root / "tiny" / "records" / "tiny.yaml"
        data = yaml.safe_load(record.read_text())
        data["source"]["path"] = "elsewhere"
        record.write_text(yaml.safe_dump(data, sort_keys=False))
        (root / "tiny" / "project" / "train.py").write_text("print('changed')\n")

    base, _ = commit(repo, disown)
    found = detected(cli, repo, base)
    assert "tiny/records/tiny.yaml" in {c["record"] for c in found["changes"]["source"] if c["path"] == "tiny/project/train.py"} and found["changes"]["records"]


def test_detect_with_the_config_in_a_subfolder_names_repository_top_paths(cli: Run, tmp_path: Path) -> None:
    import shutil

    from support import EXAMPLES, git

    root = tmp_path / "mono"
    shutil.copytree(EXAMPLES, root / "ml")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base, _ = commit(root, lambda r: (r / "ml" / "tiny" / "project" / "train.py").write_text("print('changed')\n"))
    found = detected(cli, root, base, "--config", str(root / "ml" / ".reprogate.yaml"))
    assert ("ml/tiny/project/train.py", "ml/tiny/records/tiny.yaml") in {(c["path"], c["record"]) for c in found["changes"]["source"]}


def test_detect_of_a_docs_only_change_needs_no_rebuild(cli: Run, repo: Path) -> None:
    base, _ = docs_only(repo)
    found = detected(cli, repo, base)
    assert found["rebuild_required"] is False and found["layers"] == []


def test_detect_takes_the_bases_configuration_so_a_pull_request_cannot_unwatch_what_it_changes(cli: Run, repo: Path) -> None:
    def unwatch(root: Path) -> None:
        config = root / ".reprogate.yaml"
        config.write_text(config.read_text().replace("  - tiny/records/*.yaml\n", "").replace("watch:\n", "watch:\n  ignore: ['**']\n"))
        (root / "tiny" / "project" / "train.py").write_text("print('changed')\n")

    base, _ = commit(repo, unwatch)
    found = detected(cli, repo, base)
    assert found["rebuild_required"] is True and "tiny/project/train.py" in {c["path"] for c in found["changes"]["source"]}
    assert any(".reprogate.yaml changed in this diff" in note for note in found["notes"])


def test_a_changed_reference_trace_is_a_rebuild_required_change_and_a_linked_record_no_traceback(cli: Run, repo: Path) -> None:
    trace = repo / "tiny" / "reference" / "trace.jsonl"
    base, _ = commit(repo, lambda r: trace.write_text(trace.read_text() + "\n"))
    found = detected(cli, repo, base)
    assert found["rebuild_required"] is True and [c["kind"] for c in found["changes"]["records"] if c["path"] == "tiny/reference/trace.jsonl"] == ["reference"]

    def link(root: Path) -> None:
        record = root / "tiny" / "records" / "tiny.yaml"
        (root / "tiny" / "records" / "evil.yaml").write_text(record.read_text())
        record.unlink()
        record.symlink_to("evil.yaml")

    base, _ = commit(repo, link)
    found = detected(cli, repo, base)
    assert [c["kind"] for c in found["changes"]["records"] if c["path"] == "tiny/records/tiny.yaml"] == ["unparseable"]
    refused = cli("rebuild", str(repo / "tiny" / "records" / "tiny.yaml"), "--contract-from", base, "--out", str(repo.parent / "out"))
    assert refused.exit_code == 2 and "symbolic link" in refused.output and "Traceback" not in refused.output
