"""`reprogate audit --sample N --seed S`: a reproducible monthly sample, and in-repository
artifacts checked as well as remote ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result

Cli = Callable[..., Result]


def _offline(project: Path) -> Path:
    """The example project without the records whose images live on an outside registry (the
    tests reach loopback only); what is left: startup.yaml, tiny.yaml and tiny-2node.yaml, four copies of startup.yaml, and the
    integration examples' four records (argparse, transformers, lightning, mlflow)."""
    for name in ("behavioral", "bitwise", "drill", "statistical"):
        (project / "records" / f"{name}.yaml").unlink()
    for i in range(4):
        (project / "records" / f"startup-{i}.yaml").write_text((project / "records" / "startup.yaml").read_text())
    return project


def _sampled(result: Result) -> str:
    return next(line for line in result.stderr.splitlines() if line.startswith("sampled "))


def test_the_same_seed_picks_the_same_records_and_another_seed_others(cli: Cli, project: Path) -> None:
    project = _offline(project)
    first = cli("audit", "--sample", "2", "--seed", "202611", str(project), cwd=project)
    again = cli("audit", "--sample", "2", "--seed", "202611", str(project), cwd=project)
    assert first.exit_code == 0, first.output
    assert _sampled(first) == _sampled(again) and _sampled(first).startswith("sampled 2 of 11 record(s) with seed 202611")
    picks = {_sampled(cli("audit", "--sample", "2", "--seed", str(seed), str(project), cwd=project)).split(": ", 1)[1] for seed in range(8)}
    assert len(picks) > 1


def test_an_in_repository_artifact_that_changed_fails_the_audit(cli: Cli, project: Path) -> None:
    trace = project / "tiny" / "reference" / "trace.jsonl"
    trace.write_text(trace.read_text() + "\n")
    result = cli("audit", str(project / "tiny" / "records" / "tiny.yaml"), cwd=project)
    assert result.exit_code == 1
    assert "reference.trace tiny/reference/trace.jsonl: present, but it no longer matches its checksum" in result.output
