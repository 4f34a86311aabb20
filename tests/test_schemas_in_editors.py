"""Our schemas work in the JavaScript tools users point at them: Ajv 2020 compiles each in strict
mode, and VS Code's JSON language service validates a record offline, quiet on a valid one and
pointing at the line of a wrong value. The node side is tests/support/schema_in_editor.mjs; .ci/run
installs its npm packages into .ci/npm, and REPROGATE_SCHEMA_NPM points at another node_modules."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import EXAMPLES, REPO, require_tool

SCHEMAS = sorted((REPO / "schemas").glob("*.schema.json"))
NODE_MODULES = Path(os.environ.get("REPROGATE_SCHEMA_NPM", REPO / ".ci" / "npm" / "node_modules"))
PACKAGES = ("ajv", "ajv-formats", "vscode-json-languageservice")
SCRIPT = REPO / "tests" / "support" / "schema_in_editor.mjs"


def node(*args: str) -> Any:
    """Run the node side, skipping (failing under CI=true) without node or the npm packages."""
    exe = require_tool("node")
    missing = [p for p in PACKAGES if not (NODE_MODULES / p / "package.json").is_file()]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{', '.join(missing)} missing from {NODE_MODULES} under CI=true; .ci/run must install them")
        pytest.skip(f"npm packages not installed in {NODE_MODULES}: {', '.join(missing)}")
    done = subprocess.run([exe, str(SCRIPT), str(NODE_MODULES), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_ajv_2020_strict_compiles_the_schema(path: Path) -> None:
    """Strict mode rejects what 2020-12 allows but often hides a slip: a `required` name that
    no `properties` declares, a type-specific keyword without its `type`, a union type."""
    [result] = node("ajv", str(path))
    assert result == {"schema": path.name, "error": None}


def record_json(tmp_path: Path, change: Any = None) -> Path:
    """The tiny example's record as indented JSON text, optionally edited first."""
    data = yaml.safe_load((EXAMPLES / "tiny" / "records" / "tiny.yaml").read_text())
    if change:
        change(data)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return path


def editor(schema: Path, document: Path) -> dict[str, Any]:
    result = node("editor", str(schema), str(document))
    assert result["requests"] == [schema.as_uri()], "the editor fetched something beyond the schema file itself"
    return result


def test_the_editor_accepts_the_example_record_without_a_diagnostic(tmp_path: Path) -> None:
    result = editor(REPO / "schemas" / "run-record.schema.json", record_json(tmp_path))
    assert result["diagnostics"] == []


def test_the_editor_marks_the_line_of_an_unknown_contract_level(tmp_path: Path) -> None:
    document = record_json(tmp_path, lambda d: d["contract"].__setitem__("level", "bitwize"))
    lines = document.read_text().splitlines()
    level_line = next(i for i, line in enumerate(lines, 1) if line.strip().startswith('"level": "bitwize"'))
    result = editor(REPO / "schemas" / "run-record.schema.json", document)
    assert [d["line"] for d in result["diagnostics"]] == [level_line], result["diagnostics"]


def test_the_editor_resolves_the_embedded_manifest_inside_a_capture_schema(tmp_path: Path) -> None:
    """The capture schema embeds the record, which embeds the manifest: two levels of copies whose
    refs must all resolve inside the one file. The language service reports an unresolvable ref
    on line 1 of any document, whatever it holds."""
    document = tmp_path / "capture.json"
    document.write_text("{}\n")
    result = editor(REPO / "schemas" / "capture.schema.json", document)
    assert not [d for d in result["diagnostics"] if "can not be resolved" in d["message"]], result["diagnostics"]
