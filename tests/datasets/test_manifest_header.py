"""reprogate/datasets/manifest_header.py: a manifest's header read once, after its schema check, into
one frozen typed value that gives back every field it was read from; a JSON Lines manifest's
shards still stream a line at a time."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import REPO

from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError
from reprogate.datasets.manifest_header import ManifestHeader, Retention, SideFile, read_manifest

EXAMPLE_MANIFESTS = sorted((REPO / "examples").rglob("*.manifest.yaml"))
D77 = REPO / "examples" / "data" / "d77.manifest.yaml"


def header_of(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "shards"}


def as_lines(data: dict[str, Any], path: Path, shards: list[Any] | None = None) -> Path:
    lines = [header_of(data), *(data["shards"] if shards is None else shards)]
    path.write_text("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("path", EXAMPLE_MANIFESTS, ids=lambda p: str(p.relative_to(REPO / "examples")))
def test_the_header_of_every_example_manifest_gives_back_every_field(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    loaded = read_manifest(path)
    assert loaded.header.to_json() == header_of(data)
    assert [(s.name, s.bytes) for s in loaded.shards()] == [(s["name"], s["bytes"]) for s in data["shards"]]


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_the_other_forms_read_into_the_same_header(tmp_path: Path, form: str) -> None:
    data = yaml.safe_load(D77.read_text())
    path = tmp_path / f"d77.{form}"
    if form == "json":
        path.write_text(json.dumps(data))
    else:
        as_lines(data, path)
    loaded = read_manifest(path)
    assert loaded.header == read_manifest(D77).header and loaded.streamed == (form == "jsonl")
    assert [s.name for s in loaded.shards()] == [s["name"] for s in data["shards"]]


def test_the_fields_are_typed_and_frozen() -> None:
    header = read_manifest(D77).header
    assert (header.id, header.version, header.algorithm, header.namespace) == ("D-77", "3", "sha256", "s3://example-datasets/d77/v3/")
    assert header.files[0] == SideFile("tokenizer", "tokenizer/tokenizer.json", header.files[0].checksum, 2113710)
    assert isinstance(header.retention, Retention) and header.retention.expires is not None
    assert set(header.sections) == {"filtering", "split", "sampling_weights", "preprocessing"} & set(yaml.safe_load(D77.read_text()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        header.id = "D-78"  # type: ignore[misc]
    with pytest.raises(TypeError):
        header.sections["split"]["method"] = "hash"  # type: ignore[index]
    assert isinstance(header.sections["filtering"]["rules"], tuple)


def test_json_lines_shards_stream_and_a_damaged_line_is_named_when_it_is_reached(tmp_path: Path) -> None:
    data = yaml.safe_load(D77.read_text())
    shards = [*data["shards"][:2], {"name": "shards/bad", "checksum": data["shards"][2]["checksum"]}, *data["shards"][3:]]
    loaded = read_manifest(as_lines(data, tmp_path / "d77.jsonl", shards))  # the header checks; no shard is read yet
    assert loaded.header.id == "D-77"
    stream = loaded.shards()
    assert [next(stream).name, next(stream).name] == [s["name"] for s in data["shards"][:2]]
    with pytest.raises(DocumentError) as refused:
        next(stream)
    assert refused.value.exit_code == ExitCode.FAILED
    finding = refused.value.diagnostics[0]
    assert finding.location.line == 4 and finding.field is not None and finding.field.startswith("shards[2]") and "bytes" in finding.message


def test_a_header_of_the_wrong_shape_is_refused_naming_the_field(tmp_path: Path) -> None:
    data = {**yaml.safe_load(D77.read_text()), "algorithm": "crc32"}
    with pytest.raises(DocumentError) as refused:
        read_manifest(as_lines(data, tmp_path / "d77.jsonl"))
    assert refused.value.exit_code == ExitCode.FAILED and refused.value.diagnostics[0].field == "algorithm"
    other = tmp_path / "record.yaml"
    other.write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
    with pytest.raises(DocumentError, match="not a dataset manifest"):
        read_manifest(other)


def test_a_header_is_built_only_from_checked_data() -> None:
    minimal = ManifestHeader.of({"id": "x", "algorithm": "md5", "shards": []})
    assert minimal == ManifestHeader("x", "md5") and minimal.to_json() == {"id": "x", "algorithm": "md5"}
