"""`dataset from-dvc` keeps where an import came from, and tells data from a pipeline's stage
outputs: a trained model.pkl is never a dataset shard."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from support import FIXTURES

from reprogate.core.documents import load_document
from reprogate.datasets import manifest_digest

Cli = Callable[..., Result]
DVC = FIXTURES / "dvc"


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    """example-get-started's pipeline: its dvc.lock, and the .dvc file of its imported input."""
    root = tmp_path / "get-started"
    shutil.copytree(DVC / "pipeline", root)
    shutil.copytree(DVC / "import" / "data", root / "data")
    return root


def manifest(cli: Cli, dvc_file: Path, out: Path, *args: str) -> tuple[Result, dict]:
    result = cli("dataset", "from-dvc", str(dvc_file), "-o", str(out), *args)
    return result, (load_document(out).data if out.exists() else {})


def test_an_import_keeps_its_source_repository_and_locked_revision(cli: Cli, tmp_path: Path) -> None:
    result, found = manifest(cli, DVC / "import" / "data" / "data.xml.dvc", tmp_path / "m.yaml")
    assert result.exit_code == 0, result.output
    assert found["source"]["imports"] == [
        {
            "out": "data.xml",
            "repository": "https://github.com/iterative/dataset-registry",
            "path": "get-started/data.xml",
            "rev_lock": "f59388cd04276e75d70b2136597aaa27e7937cc3",
        }
    ]
    assert found["shards"] == [{"name": "data.xml", "bytes": 14445097, "checksum": "md5:22a1a2931c8370d3aeedd7183606fd7f"}]
    assert found["digest"] == manifest_digest(found), "the provenance is part of what the digest pins"
    assert cli("validate", str(tmp_path / "m.yaml")).exit_code == 0


def test_credentials_in_an_import_url_are_not_kept(cli: Cli, tmp_path: Path) -> None:
    dvc_file = tmp_path / "data.xml.dvc"
    dvc_file.write_text((DVC / "import" / "data" / "data.xml.dvc").read_text().replace("https://github.com", "https://oauth2:hunter2hunter2@github.com"))
    result, found = manifest(cli, dvc_file, tmp_path / "m.yaml")
    assert result.exit_code == 0 and "hunter2" not in (tmp_path / "m.yaml").read_text()
    assert found["source"]["imports"][0]["repository"] == "https://github.com/iterative/dataset-registry"


def test_a_pipelines_data_is_its_dvc_tracked_input_not_its_stage_outputs(cli: Cli, pipeline: Path) -> None:
    result, found = manifest(cli, pipeline / "dvc.lock", pipeline / "m.yaml")
    assert result.exit_code == 0, result.output
    assert [s["name"] for s in found["shards"]] == ["data/data.xml"]
    assert "stage outputs, not data:" in result.output and "train: model.pkl" in result.output
    assert "src/train.py" in result.output, "code the pipeline reads is named as left out"


def test_a_stages_data_is_what_it_reads_that_dvc_manages(cli: Cli, pipeline: Path) -> None:
    result, found = manifest(cli, pipeline / "dvc.lock", pipeline / "m.yaml", "--stage", "train")
    assert result.exit_code == 0, result.output
    assert found["shards"] == [
        {"name": "data/features", "bytes": 1556290, "checksum": "md5:f8f5cbc3188008a7542d02d63054d9d2", "kind": "dvc-directory", "files": 2}
    ]
    assert found["source"] == {"tool": "dvc", "file": "dvc.lock", "stage": "train"}
    result, found = manifest(cli, pipeline / "dvc.lock", pipeline / "e.yaml", "--stage", "evaluate")
    assert "model.pkl" in [s["name"] for s in found["shards"]], "a stage that reads the model gets it as an input"
    assert cli("validate", str(pipeline / "m.yaml")).exit_code == 0


def test_a_pipeline_without_tracked_inputs_says_which_stage_to_name(cli: Cli, tmp_path: Path) -> None:
    shutil.copytree(DVC / "pipeline", tmp_path / "p")
    result, _ = manifest(cli, tmp_path / "p" / "dvc.lock", tmp_path / "p" / "m.yaml")
    assert result.exit_code == 1 and not (tmp_path / "p" / "m.yaml").exists()
    assert "--stage NAME" in result.output and "prepare, featurize, train, evaluate" in result.output
    result, _ = manifest(cli, tmp_path / "p" / "dvc.lock", tmp_path / "p" / "m.yaml", "--stage", "deploy")
    assert result.exit_code == 1 and "no stage 'deploy'" in result.output


def test_dvc_provenance_strips_signed_query_strings_with_the_one_redactor() -> None:
    """`dataset from-dvc` used capture's second, weaker stripper, which kept signed query strings."""
    from reprogate.datasets.dvc import _imports

    url = "https://bucket.s3.amazonaws.com/data.tar?X-Amz-Signature=abcdef0123456789&X-Amz-Credential=AKIAEXAMPLE&part=1"
    data = {"outs": [{"path": "data.tar"}], "deps": [{"path": url, "etag": "e1"}, {"path": "x", "repo": {"url": "https://user:pw@git.example/r.git"}}]}
    found = _imports(data)
    assert [f.get("url") or f.get("repository") for f in found] == ["https://bucket.s3.amazonaws.com/data.tar?part=1", "https://git.example/r.git"]
