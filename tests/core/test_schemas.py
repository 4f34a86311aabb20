"""The schemas are standard JSON Schema 2020-12, documented field by field, and cover DESIGN.md."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from support import EXAMPLES, REPO, require_tool

from reprogate.core.schemas import SCHEMA_FILES, load_schema, schema_dir

SCHEMAS = sorted((REPO / "schemas").glob("*.schema.json"))


def properties(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (path, schema) under a `properties` or `patternProperties` keyword."""
    if isinstance(node, dict):
        for keyword in ("properties", "patternProperties"):
            for name, sub in node.get(keyword, {}).items():
                yield f"{path}.{name}", sub
        for key, value in node.items():
            yield from properties(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from properties(value, f"{path}[{i}]")


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_is_valid_2020_12_with_an_id(path: Path) -> None:
    schema = json.loads(path.read_text())
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(path.name)


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_property_has_a_description(path: Path) -> None:
    schema = json.loads(path.read_text())
    missing = [where for where, sub in properties(schema) if not sub.get("description")]
    assert missing == []


def test_record_schema_covers_every_section_of_the_design() -> None:
    record = load_schema("RunRecord")
    sections = {"contract", "container", "source", "host", "devices", "software", "dataset", "seeds", "state", "execution", "job", "reference", "baseline"}
    assert sections <= set(record["properties"])
    defs = record["$defs"]
    assert {"level", "steps", "tolerance", "tensors", "metric", "envelope", "lifetime"} <= set(defs["contract"]["properties"])
    assert {"gpu_models", "nodes", "driver_branch", "framework", "os", "topology_changes"} <= set(defs["contract"]["properties"]["envelope"]["properties"])
    assert {"registry", "repository", "digest", "tag", "platform", "base_images", "runtime", "inventory"} <= set(defs["container"]["else"]["properties"])
    assert {"commit", "dirty", "diff_digest", "build_recipe", "lock_files", "compiler_flags", "job_start_installs"} <= set(defs["source"]["properties"])
    assert {
        "world_size",
        "nodes",
        "rank_mapping",
        "batch_per_rank",
        "gradient_accumulation",
        "precision",
        "optimizer",
        "scheduler",
        "dataloader_workers",
        "drop_last",
        "elastic",
        "collective",
        "env",
        "job_spec",
        "topology_capture",
    } <= set(defs["execution"]["properties"])
    assert {"trace", "metric", "preflight"} <= set(defs["reference"]["properties"])
    manifest = load_schema("DatasetManifest")["$defs"]["manifestBody"]["properties"]
    assert {"files", "filtering", "split", "sampling_weights", "preprocessing", "streaming", "retention"} <= set(manifest)


def test_installed_lookup_finds_the_repository_schemas_in_a_checkout() -> None:
    assert (schema_dir() / SCHEMA_FILES["RunRecord"]).read_bytes() == (REPO / "schemas" / "run-record.schema.json").read_bytes()


def example_documents() -> list[Path]:
    return sorted(EXAMPLES.glob("records/*.yaml")) + [EXAMPLES / "data" / "d77.manifest.yaml"]


def test_check_jsonschema_agrees_examples_are_valid_and_broken_ones_are_not(tmp_path: Path) -> None:
    """An independent validator reading our schema files gives the same answer we do."""
    exe = require_tool("check-jsonschema")
    records = sorted(EXAMPLES.glob("records/*.yaml"))
    ok = subprocess.run([exe, "--schemafile", str(REPO / "schemas" / "run-record.schema.json"), *map(str, records)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text((EXAMPLES / "records" / "drill.yaml").read_text().replace("level: statistical", "level: roughly"))
    bad = subprocess.run([exe, "--schemafile", str(REPO / "schemas" / "run-record.schema.json"), str(broken)], capture_output=True, text=True)
    assert bad.returncode == 1
    manifest = subprocess.run(
        [exe, "--schemafile", str(REPO / "schemas" / "dataset-manifest.schema.json"), str(EXAMPLES / "data" / "d77.manifest.yaml")],
        capture_output=True,
        text=True,
    )
    assert manifest.returncode == 0, manifest.stdout


def test_run_record_schema_bundles_the_current_dataset_manifest_schema() -> None:
    """The embedded copy keeps the record schema self-contained; refresh with tools/bundle_schemas.py."""
    embedded = load_schema("RunRecord")["$defs"]["datasetManifestSchema"]
    assert embedded == load_schema("DatasetManifest"), "stale copy: run python tools/bundle_schemas.py"
    assert load_schema("EnvironmentCapture")["$defs"]["runRecordSchema"] == load_schema("RunRecord"), "stale copy: run python tools/bundle_schemas.py"
