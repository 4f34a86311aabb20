"""`capture --into RECORD`: the record itself is not a change to the source, every checksum capture
owns is refreshed (lock files and the build recipe), and software.determinism is the training
process's (its reference trace's meta), not the CLI's."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import EXAMPLES, git

from reprogate.core.canonical import file_digest
from reprogate.core.documents import load_document
from reprogate.runtime.trace import leading_meta_events

Cli = Callable[..., Result]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_the_record_being_filled_does_not_make_the_source_dirty(cli: Cli, repo: Path) -> None:
    record = repo / "records" / "behavioral.yaml"
    record.write_text(record.read_text().replace("metadata:\n", "# edited by hand, not committed\nmetadata:\n", 1))
    for _ in range(2):  # the second run sees the record capture itself rewrote
        result = cli("capture", "--into", str(record), "--root", str(repo), "--no-framework")
        assert result.exit_code == 0, result.output
        source = load_document(record).data["source"]
        assert source["dirty"] is False and "diff_digest" not in source, source
    (repo / "config" / "c19.yaml").write_text((repo / "config" / "c19.yaml").read_text().replace("layers: 32", "layers: 48"))
    cli("capture", "--into", str(record), "--root", str(repo), "--no-framework")
    source = load_document(record).data["source"]
    assert source["dirty"] is True and source["diff_digest"].startswith("sha256:"), "a real change still counts"


def test_every_checksum_capture_owns_is_refreshed_the_build_recipe_too(cli: Cli, repo: Path) -> None:
    record = repo / "records" / "drill.yaml"
    (repo / "Dockerfile").write_text((repo / "Dockerfile").read_text() + "\nRUN echo bump\n")
    (repo / "requirements.txt").write_text((repo / "requirements.txt").read_text() + "\n")
    result = cli("capture", "--into", str(record), "--root", str(repo), "--no-framework")
    assert result.exit_code == 0, result.output
    source = load_document(record).data["source"]
    assert source["build_recipe"]["checksum"] == file_digest(repo / "Dockerfile")
    assert "source.build_recipe Dockerfile: checksum" in result.output
    assert {e["path"]: e["checksum"] for e in source["lock_files"]}["requirements.txt"] == file_digest(repo / "requirements.txt")
    check = cli("validate", str(record))
    assert "checksum-mismatch" not in check.output, check.output


def test_determinism_comes_from_the_training_process_not_the_cli(cli: Cli, repo: Path) -> None:
    torch = pytest.importorskip("torch")
    record = repo / "tiny" / "records" / "tiny.yaml"
    trace = repo / "tiny" / "reference" / "trace.jsonl"
    training = next(m for m in leading_meta_events(trace) if m.rank == 0).determinism
    assert training is not None and training["deterministic_algorithms"] is True
    # this process differs from training (whatever an earlier test in this worker left set)
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(False)
    try:
        result = cli("capture", "--into", str(record), "--root", str(repo / "tiny" / "project"))
    finally:
        torch.use_deterministic_algorithms(before)
    assert result.exit_code == 0, result.output
    software = load_document(record).data["software"]
    assert software["determinism"] == training and software["framework"]["name"] == "torch"
    assert "software.determinism from the training process" in result.output
    check = cli("validate", str(record))
    assert check.exit_code == 0, check.output


def test_without_a_reference_trace_the_clis_determinism_is_not_written(cli: Cli, repo: Path) -> None:
    pytest.importorskip("torch")
    record = repo / "records" / "startup.yaml"
    result = cli("capture", "--into", str(record), "--root", str(repo))
    assert result.exit_code == 0, result.output
    assert "determinism" not in load_document(record).data["software"]
    assert "software.determinism left out: the record has no reference trace" in result.output
