"""`reprogate audit --retiring TARGET`: which records lose an input if a registry, bucket prefix or
dataset snapshot goes, checked on the example records with real registries (docker-registry on
loopback, images pushed with skopeo) and a dataset folder next to the manifest."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record, require_tool
from support.registry import Registry, start_registry

Cli = Callable[..., Result]


@pytest.fixture
def registries(tmp_path: Path) -> Iterator[tuple[Registry, Registry]]:
    require_tool("docker-registry")
    require_tool("skopeo")
    first, second = start_registry(tmp_path / "first"), start_registry(tmp_path / "second")
    yield first, second
    first.stop()
    second.stop()


def _in_registry(project: Path, registry: Registry, record: str = "bitwise") -> str:
    """Put the example's image into `registry` and point `record` at it; the pushed digest."""
    registry.push("example-org/decoder-train", "v1", "decoder-train payload")
    digest = registry.inspect_digest("example-org/decoder-train:v1")

    def point(data: dict[str, Any]) -> None:
        data["container"].update(registry=registry.host, digest=digest)

    edit_record(project / "records" / f"{record}.yaml", point)
    return digest


def _json(result: Result) -> dict[str, Any]:
    return json.loads(result.stdout)


def test_retiring_the_registry_names_the_records_and_the_digests_they_lose(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    first, _ = registries
    digest = _in_registry(project, first)
    result = cli("audit", "--retiring", first.host, str(project / "records"), cwd=project)
    assert result.exit_code == 1, result.output
    assert f"container.digest: image {first.host}/example-org/decoder-train@{digest}: LOST" in result.stdout
    report = _json(cli("audit", "--retiring", first.host, "--format", "json", str(project / "records"), cwd=project))
    assert [r["file"].rsplit("/", 1)[-1] for r in report["records"]] == ["bitwise.yaml"]  # the others live on ghcr.io
    assert report["records"][0]["inputs"][0] | {"line": 0} == {
        "field": "container.digest",
        "line": 0,
        "kind": "image",
        "location": f"{first.host}/example-org/decoder-train",
        "digest": digest,
        "bytes": None,
        "dataset": None,
        "lost": True,
        "copies": [],
    }
    # a namespace of another host covers nothing of it; a prefix must end on a path boundary
    assert cli("audit", "--retiring", f"{first.host}/example", str(project / "records"), cwd=project).exit_code == 0


def test_a_second_registry_holding_the_same_digest_makes_the_loss_go_away(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    first, second = registries
    digest = _in_registry(project, first)
    second.push("example-org/decoder-train", "v1", "decoder-train payload")  # the same bytes: the same digest
    assert second.inspect_digest("example-org/decoder-train:v1") == digest
    result = cli("audit", "--retiring", first.host, "--mirror", second.host, str(project / "records"), cwd=project)
    assert result.exit_code == 0, result.output
    assert f"kept, the same digest at {second.host}/example-org/decoder-train@{digest} (--mirror, checked now)" in result.stdout
    # a mirror that lacks the digest keeps nothing
    other = _in_registry(project, first, "behavioral")
    assert other == digest
    second.delete("example-org/decoder-train", digest)
    assert cli("audit", "--retiring", first.host, "--mirror", second.host, str(project / "records"), cwd=project).exit_code == 1


def test_another_record_addressing_the_digest_elsewhere_is_a_copy(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    first, second = registries
    digest = _in_registry(project, first)
    _in_registry(project, second, "behavioral")  # the same image, recorded in the second registry
    report = _json(cli("audit", "--retiring", first.host, "--format", "json", str(project / "records"), cwd=project))
    assert report["exit_code"] == 0
    (kept,) = report["records"][0]["inputs"]
    assert kept["digest"] == digest and not kept["lost"]
    assert kept["copies"][0].startswith(f"{second.host}/example-org/decoder-train (") and "behavioral.yaml: container.digest" in kept["copies"][0]


def test_retiring_a_dataset_snapshot_lists_every_shard_and_a_local_copy_keeps_them(cli: Cli, project: Path) -> None:
    records = str(project / "records")
    report = _json(cli("audit", "--retiring", "D-77@3", "--format", "json", records, cwd=project))
    assert report["exit_code"] == 1
    losing = {r["file"].rsplit("/", 1)[-1]: r for r in report["records"]}
    assert set(losing) == {"drill.yaml", "behavioral.yaml"}
    inputs = losing["drill.yaml"]["inputs"]
    assert len(inputs) == 10 and {i["kind"] for i in inputs} == {"shard", "dataset-file"}
    assert inputs[0]["location"] == "s3://example-datasets/d77/v3/shards/train-00000.jsonl.zst" and inputs[0]["bytes"] == 268435456
    assert cli("audit", "--retiring", "D-77@2", records, cwd=project).exit_code == 0  # another snapshot
    # a copy of the snapshot: a second manifest whose namespace is a local dataset folder
    manifest = (project / "data" / "d77.manifest.yaml").read_text()
    (project / "data" / "copy").mkdir()
    (project / "data" / "copy.manifest.yaml").write_text(
        manifest.replace("id: D-77", "id: D-77-copy").replace("namespace: s3://example-datasets/d77/v3/", "namespace: copy")
    )
    result = cli("audit", "--retiring", "s3://example-datasets/d77/", str(project), cwd=project)
    assert result.exit_code == 0, result.output
    assert f"kept, the same digest at {(project / 'data' / 'copy' / 'shards' / 'train-00000.jsonl.zst').resolve()}" in result.stdout
    # retiring the local folder now: the s3 namespace still holds every shard
    assert cli("audit", "--retiring", str(project / "data" / "copy"), str(project), cwd=project).exit_code == 0


def test_a_uri_prefix_covers_traces_and_artifacts_and_the_repository_copy_keeps_one(cli: Cli, project: Path) -> None:
    tiny = project / "tiny" / "records" / "tiny.yaml"
    trace = project / "tiny" / "reference" / "trace.jsonl"
    assert cli("audit", "--retiring", "https://artifacts.example.com/", str(tiny), cwd=project).exit_code == 0  # addresses nothing there

    def remote_too(data: dict[str, Any]) -> None:
        data["reference"]["trace"]["uri"] = "https://artifacts.example.com/traces/tiny.jsonl"

    edit_record(tiny, remote_too)
    result = cli("audit", "--retiring", "https://artifacts.example.com/traces", str(tiny), cwd=project)
    assert result.exit_code == 0, result.output
    assert (
        "reference.trace: trace https://artifacts.example.com/traces/tiny.jsonl" in result.stdout and "kept, the same digest at the repository" in result.stdout
    )
    trace.write_text(trace.read_text() + "\n")  # the repository's copy no longer holds those bytes
    assert cli("audit", "--retiring", "https://artifacts.example.com/traces", str(tiny), cwd=project).exit_code == 1


def test_github_format_annotates_each_lost_input_on_its_line(cli: Cli, project: Path) -> None:
    result = cli("audit", "--retiring", "ghcr.io/example-org/vision-train", "--format", "github", str(project / "records"), cwd=project)
    assert result.exit_code == 1
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert "file=" in annotation and "statistical.yaml" in annotation and ",line=" in annotation and "LOST" in annotation


def test_bad_combinations_are_refused_with_exit_2(cli: Cli, project: Path) -> None:
    records = str(project / "records")
    assert cli("audit", "--retiring", "ghcr.io", "--sample", "2", records, cwd=project).exit_code == 2
    assert cli("audit", "--mirror", "127.0.0.1:1", records, cwd=project).exit_code == 2
    assert cli("audit", "--retiring", " ", records, cwd=project).exit_code == 2


def test_the_retention_review_speaks_json_and_github_too(cli: Cli, project: Path) -> None:
    tiny = str(project / "tiny" / "records" / "tiny.yaml")
    report = _json(cli("audit", "--format", "json", tiny, cwd=project))
    assert report["exit_code"] == 0
    entry = next(e for e in report["entries"] if e["field"] == "reference.trace")
    assert entry["file"].endswith("tiny/records/tiny.yaml") and entry["status"] == "present" and entry["line"] > 1
    trace = project / "tiny" / "reference" / "trace.jsonl"
    trace.write_text(trace.read_text() + "\n")
    result = cli("audit", "--format", "github", tiny, cwd=project)
    assert result.exit_code == 1
    assert any(line.startswith("::error ") and "no longer matches its checksum" in line for line in result.stdout.splitlines())
