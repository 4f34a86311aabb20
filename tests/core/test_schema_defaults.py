"""The `default`s the schemas show in editors are the ones the code applies: a test per default,
and every default in the configuration schema is in the table (so a new one cannot drift)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import REPO

from reprogate import __version__
from reprogate.core.config import Config
from reprogate.core.seedstats import POWER

SCHEMAS = REPO / "schemas"
CONFIG_DEFAULTS = {
    ("ignore_dependency_groups",): "ignore_dependency_groups",
    ("labels", "rebuild"): "rebuild_label",
    ("labels", "baseline"): "baseline_label",
    ("status", "context"): "status_context",
    ("status", "baseline_context"): "baseline_context",
    ("status", "creator"): "status_creator",
    ("rebuild", "workflow"): "rebuild_workflow",
}


def defaults(node: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every `default` under a schema's properties, by property path."""
    found: dict[tuple[str, ...], Any] = {}
    if isinstance(node, dict):
        if "default" in node:
            found[path] = node["default"]
        for name, sub in (node.get("properties") or {}).items():
            found.update(defaults(sub, path + (name,)))
    return found


def test_the_configuration_schema_defaults_are_the_code_defaults(tmp_path: Path) -> None:
    schema = json.loads((SCHEMAS / "config.schema.json").read_text())
    found = defaults(schema)
    assert set(found) == set(CONFIG_DEFAULTS), "a default in the schema with no counterpart in this table"
    code = Config(folder=tmp_path)
    for path, attribute in CONFIG_DEFAULTS.items():
        value = getattr(code, attribute)
        assert found[path] == (list(value) if isinstance(value, tuple) else value), path  # the frozen value holds a list as a tuple


def test_the_run_record_schema_defaults_are_the_code_defaults() -> None:
    schema = json.loads((SCHEMAS / "run-record.schema.json").read_text())
    contract = schema["$defs"]["contract"]["properties"]
    assert contract["metric"]["properties"]["detect"]["properties"]["power"]["default"] == POWER
    assert schema["$defs"]["job"]["properties"]["config"]["properties"]["hash_of"]["default"] == "file"
    assert schema["properties"]["semantics"]["examples"] == [".".join(__version__.split(".")[:2])]
