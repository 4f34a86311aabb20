"""The schemas are standard JSON Schema 2020-12, documented field by field, and cover DESIGN.md."""

from __future__ import annotations

import importlib.util
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
    missing = [where for where, sub in properties(schema) if sub is not True and not sub.get("description")]
    assert missing == []


def declarations(node: Any, path: str = "") -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every (path, name, enclosing schema) where `properties` maps a name to bare `true`."""
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items() if isinstance(node.get("properties"), dict) else ():
            if sub is True:
                yield path, name, node
        for key, value in node.items():
            yield from declarations(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from declarations(value, f"{path}[{i}]")


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_a_bare_true_property_only_declares_a_required_name(path: Path) -> None:
    """`"x": true` carries no description because it constrains nothing: it is there so that a
    `required: [x]` beside it names a declared property (Ajv's strict mode); x is documented where
    its value is described. Anywhere else a bare `true` would be an undocumented property."""
    schema = json.loads(path.read_text())
    stray = [
        f"{where}.{name}"
        for where, name, node in declarations(schema)
        if name not in node.get("required", []) or node.get("additionalProperties", True) is not True
    ]
    assert stray == []


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


def _bundler() -> Any:
    spec = importlib.util.spec_from_file_location("bundle_schemas", REPO / "tools" / "bundle_schemas.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("target", ["run-record.schema.json", "capture.schema.json"])
def test_bundled_schemas_hold_a_fresh_copy_of_what_they_embed(target: str) -> None:
    """The embedded copy keeps each file self-contained; refresh with tools/bundle_schemas.py."""
    bundler = _bundler()
    _, key, embedded = next(b for b in bundler.BUNDLES if b[0] == target)
    current = json.loads((REPO / "schemas" / target).read_text())
    fresh = bundler.bundled(current, key, embedded, json.loads((REPO / "schemas" / embedded).read_text()))
    assert current == fresh, "stale copy: run python tools/bundle_schemas.py"


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_ref_is_a_local_pointer_that_resolves(path: Path) -> None:
    """Editors that lack embedded-resource support resolve only plain JSON Pointers in the file."""
    schema = json.loads(path.read_text())
    for ref in refs(schema):
        assert ref.startswith("#/"), ref
        node: Any = schema
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert isinstance(node, (dict, bool)), ref


def test_bundler_rewrites_cross_file_and_embedded_local_refs() -> None:
    bundler = _bundler()
    target = {"$id": "t", "properties": {"a": {"$ref": bundler.BASE + "e.json#/$defs/x"}}, "$defs": {"k": {}}}
    embedded = {"$schema": "s", "$id": bundler.BASE + "e.json", "$ref": "#/$defs/x", "$defs": {"x": {"$ref": "#"}}}
    once = bundler.bundled(target, "k", "e.json", embedded)
    assert once["properties"]["a"]["$ref"] == "#/$defs/k/$defs/x"
    assert once["$defs"]["k"] == {"$ref": "#/$defs/k/$defs/x", "$defs": {"x": {"$ref": "#/$defs/k"}}}
    assert bundler.bundled(once, "k", "e.json", embedded) == once
