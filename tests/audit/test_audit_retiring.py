"""`reprogate audit --retiring TARGET`: which records lose an input if a registry, bucket prefix or
dataset snapshot goes, checked on the example records with real registries (docker-registry on
loopback, images pushed with skopeo) and a dataset folder next to the manifest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record, require_tool
from support.registry import Registry, start_registry

from reprogate.core.documents import load_document

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
        "status": "lost",
        "copies": [],
        "asked": [],
        "repoint": None,
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
    assert f"kept, the same digest at {second.host}/example-org/decoder-train@{digest} (--mirror) (checked now)" in result.stdout
    assert f"reprogate rebuild records/bitwise.yaml --image {second.host}/example-org/decoder-train@{digest}" in result.stdout, (
        "kept only on a mirror: the report says how to rebuild from it"
    )
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
    # a copy of the snapshot: a second manifest whose namespace is a local dataset folder, holding
    # files of the stated sizes (sparse: the sizes are what the audit checks without --deep)
    manifest = (project / "data" / "d77.manifest.yaml").read_text()
    copy = project.parent / "copy"  # outside the folder audited: its files are no documents
    (project / "data" / "copy.manifest.yaml").write_text(
        manifest.replace("id: D-77", "id: D-77-copy").replace("namespace: s3://example-datasets/d77/v3/", f"namespace: {copy}")
    )
    listed = load_document(project / "data" / "d77.manifest.yaml").data
    for entry in [*listed["shards"], *listed["files"]]:
        placed = copy / entry["name"]
        placed.parent.mkdir(parents=True, exist_ok=True)
        with placed.open("wb") as fh:
            fh.truncate(entry["bytes"])
    result = cli("audit", "--retiring", "s3://example-datasets/d77/", str(project), cwd=project)
    assert result.exit_code == 0, result.output
    assert f"kept, the same digest at {(copy / 'shards' / 'train-00000.jsonl.zst').resolve()}" in result.stdout
    assert f"--dataset-root {copy.resolve()}" in result.stdout
    # retiring the copy's folder: no record addresses it (only the second manifest lists it)
    assert cli("audit", "--retiring", str(copy), str(project), cwd=project).exit_code == 0


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


def test_a_copy_manifest_over_an_empty_folder_keeps_nothing(cli: Cli, project: Path) -> None:
    """The runbook's case: a second manifest names a local copy of the snapshot, but the copy was
    never made. The old audit counted the manifest's word as a copy ("kept", exit 0)."""
    manifest = (project / "data" / "d77.manifest.yaml").read_text()
    copy = project.parent / "copy"
    copy.mkdir()
    (project / "data" / "copy.manifest.yaml").write_text(
        manifest.replace("id: D-77", "id: D-77-copy").replace("namespace: s3://example-datasets/d77/v3/", f"namespace: {copy}")
    )
    report = _json(cli("audit", "--retiring", "s3://example-datasets/d77/", "--format", "json", str(project), cwd=project))
    assert report["exit_code"] == 1 and all(i["lost"] for r in report["records"] for i in r["inputs"]), report["summary"]
    first = report["records"][0]["inputs"][0]
    assert first["copies"] == [] and first["asked"][0]["status"] == "absent" and first["asked"][0]["why"] == "no such file"
    # a copy of the wrong size keeps nothing either
    entry = load_document(project / "data" / "d77.manifest.yaml").data["shards"][0]
    placed = copy / entry["name"]
    placed.parent.mkdir(parents=True)
    placed.write_bytes(b"x" * 10)
    report = _json(cli("audit", "--retiring", "s3://example-datasets/d77/", "--format", "json", str(project), cwd=project))
    assert f"10 bytes there, the record states {entry['bytes']}" in report["records"][0]["inputs"][0]["asked"][0]["why"]


def _tiny_copy(project: Path) -> Path:
    """The tiny example's dataset copied to a folder outside its repository, with a manifest in the repository naming it."""
    copy = project.parent / "elsewhere" / "tiny-data"
    shutil.copytree(project / "tiny" / "data", copy, ignore=shutil.ignore_patterns("*.manifest.yaml", "*.py"))
    manifest = (project / "tiny" / "data" / "tiny.manifest.yaml").read_text().replace("id: tiny-markov", f"id: tiny-markov-copy\nnamespace: {copy}")
    (project / "tiny" / "copy.manifest.yaml").write_text(manifest)
    return copy


def test_deep_reads_the_copy_and_a_changed_byte_keeps_nothing(cli: Cli, project: Path) -> None:
    tiny = str(project / "tiny")
    retired = str(project / "tiny" / "data")
    copy = _tiny_copy(project)
    result = cli("audit", "--retiring", retired, tiny, cwd=project)
    assert result.exit_code == 0, result.output
    assert f"kept, the same digest at {copy / 'shard-000.txt'}" in result.stdout and "size matches" in result.stdout
    assert f"reprogate rebuild tiny/records/tiny.yaml --dataset-root {copy}" in result.stdout
    assert cli("audit", "--retiring", retired, "--deep", tiny, cwd=project).exit_code == 0
    shard = copy / "shard-001.txt"
    data = bytearray(shard.read_bytes())
    data[100] ^= 1  # the same size, other bytes
    shard.write_bytes(bytes(data))
    assert cli("audit", "--retiring", retired, tiny, cwd=project).exit_code == 0, "by size alone the copy still looks whole"
    report = _json(cli("audit", "--retiring", retired, "--deep", "--format", "json", tiny, cwd=project))
    assert report["exit_code"] == 1
    lost = [i for r in report["records"] for i in r["inputs"] if i["lost"]]
    assert len(lost) == 2, "tiny.yaml and tiny-2node.yaml each lose that shard"
    assert all(i["location"].endswith("shard-001.txt") and "its bytes are sha256:" in i["asked"][0]["why"] for i in lost)


def test_a_record_naming_the_digest_at_a_registry_that_lacks_it_keeps_nothing(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    """Another record says the image is also in the second registry; it is not. The old audit took
    that record's word ("kept", exit 0) while a plain audit of it said MISSING."""
    first, second = registries
    digest = _in_registry(project, first)

    def elsewhere(data: dict[str, Any]) -> None:
        data["container"].update(registry=second.host, digest=digest)

    edit_record(project / "records" / "behavioral.yaml", elsewhere)
    result = cli("audit", "--retiring", first.host, str(project / "records"), cwd=project)
    assert result.exit_code == 1, result.output
    assert f"LOST (no copy holds it: {second.host}/example-org/decoder-train" in result.stdout and "does not hold it (checked now)" in result.stdout
    assert cli("audit", str(project / "records" / "behavioral.yaml"), cwd=project).exit_code == 1, "plain audit agrees: it is missing there"


def test_a_copy_that_cannot_be_asked_is_unconfirmed_exit_3_not_kept(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    first, second = registries
    _in_registry(project, first)
    gone = second.host
    second.stop()
    result = cli("audit", "--retiring", first.host, "--mirror", gone, "--retries", "0", "--timeout", "1", str(project / "records"), cwd=project)
    assert result.exit_code == 3, result.output
    assert "UNCONFIRMED" in result.stdout and "kept" not in result.stdout.split("\n", 1)[1].split("retiring ", 1)[0]
    # s3:// cannot be asked: a copy there is unconfirmed, never kept
    records = str(project / "records")
    manifest = (project / "data" / "d77.manifest.yaml").read_text()
    (project / "data" / "mirror.manifest.yaml").write_text(
        manifest.replace("id: D-77", "id: D-77-mirror").replace("namespace: s3://example-datasets/d77/v3/", "namespace: s3://other-bucket/d77/v3/")
    )
    report = _json(cli("audit", "--retiring", "D-77@3", "--format", "json", records, str(project / "data"), cwd=project))
    assert report["exit_code"] == 3 and {i["status"] for r in report["records"] for i in r["inputs"]} == {"unconfirmed"}
    assert "not checked: reprogate reaches local folders and http(s), not s3://" in report["records"][0]["inputs"][0]["asked"][0]["why"]


def test_every_way_of_writing_an_image_target_covers_it_or_is_refused(cli: Cli, project: Path, registries: tuple[Registry, Registry]) -> None:
    """The old audit read a digest reference, a tag, a registry URL and an upper-case host as
    names that cover nothing, and said exit 0 for the registry about to be deleted."""
    first, _ = registries
    digest = _in_registry(project, first)
    records = str(project / "records")
    repository = f"{first.host}/example-org/decoder-train"
    for covering in (f"{repository}@{digest}", f"http://{first.host}", f"https://{first.host}/example-org", f"docker://{repository}"):
        result = cli("audit", "--retiring", covering, records, cwd=project)
        assert result.exit_code == 1 and "LOST" in result.stdout, (covering, result.output)
    other = "sha256:" + "0" * 64
    assert cli("audit", "--retiring", f"{repository}@{other}", records, cwd=project).exit_code == 0, "another digest of the repository"
    for refused, why in (
        (f"{repository}:v1", "a tag names no bytes"),
        (other, "a bare digest"),
        (f"{first.host}/Example-Org", "upper-case"),
    ):
        result = cli("audit", "--retiring", refused, records, cwd=project)
        assert result.exit_code == 2 and why in result.output, (refused, result.output)
    # a host in capitals is the same host
    assert cli("audit", "--retiring", "GHCR.IO/example-org/vision-train", records, cwd=project).exit_code == 1


def test_a_snapshot_or_export_id_of_the_manifest_names_the_snapshot(cli: Cli, project: Path) -> None:
    manifest = project / "data" / "d77.manifest.yaml"
    manifest.write_text(manifest.read_text().replace("algorithm: sha256\n", "algorithm: sha256\nstreaming: {snapshot_id: snap-2026-09, export_id: exp-0042}\n"))
    records = str(project / "records")  # the audit lists what the manifest holds; its pinned digest is validate's concern
    for name in ("snap-2026-09", "exp-0042"):
        report = _json(cli("audit", "--retiring", name, "--format", "json", records, cwd=project))
        assert report["exit_code"] == 1 and sum(len(r["inputs"]) for r in report["records"]) == 20, (name, report["summary"])


def test_a_copy_at_the_same_place_or_a_link_into_the_retired_folder_keeps_nothing(cli: Cli, project: Path) -> None:
    """Attempts to make a retirement look safe: a second manifest naming the same s3 folder under
    another id (the same bytes at the same place go with it), and a copy folder whose files are
    links into the folder being retired."""
    records = str(project / "records")
    manifest = (project / "data" / "d77.manifest.yaml").read_text()
    (project / "data" / "alias.manifest.yaml").write_text(manifest.replace("id: D-77", "id: D-77-alias"))
    report = _json(cli("audit", "--retiring", "D-77@3", "--format", "json", records, str(project / "data"), cwd=project))
    assert report["exit_code"] == 1 and all(i["lost"] for r in report["records"] for i in r["inputs"]), report["summary"]
    (project / "data" / "alias.manifest.yaml").unlink()
    tiny = str(project / "tiny")
    retired = project / "tiny" / "data"
    links = project.parent / "links"
    links.mkdir()
    for shard in sorted(retired.glob("*.txt")) + [retired / "vocab.json"]:
        (links / shard.name).symlink_to(shard)
    text = (retired / "tiny.manifest.yaml").read_text().replace("id: tiny-markov", f"id: tiny-markov-links\nnamespace: {links}")
    (project / "tiny" / "links.manifest.yaml").write_text(text)
    report = _json(cli("audit", "--retiring", str(retired), "--deep", "--format", "json", tiny, cwd=project))
    assert report["exit_code"] == 1 and all(i["lost"] for r in report["records"] for i in r["inputs"]), "a link is where it leads"
