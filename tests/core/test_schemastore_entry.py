"""The configuration schema is ready for SchemaStore: the catalog entry (tools/schemastore/) is valid
against SchemaStore's own catalog schema, matches the file name reprogate reads, and points at a
schema this repository holds; run records get a modeline from init instead (a test per promise)."""

from __future__ import annotations

import fnmatch
import json

import jsonschema
from support import REPO

from reprogate import __version__
from reprogate.core.config import CONFIG_NAME
from reprogate.core.schemas import SCHEMA_FILES, modeline, published_url

ENTRY = json.loads((REPO / "tools" / "schemastore" / "catalog.json").read_text())


def test_the_catalog_entry_is_valid_for_schemastore() -> None:
    schema = json.loads((REPO / "tests" / "fixtures" / "schemastore" / "schema-catalog.json").read_text())
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(ENTRY)


def test_the_entry_matches_the_configuration_file_and_points_at_its_schema() -> None:
    (entry,) = ENTRY["schemas"]
    assert any(fnmatch.fnmatch(CONFIG_NAME, pattern) for pattern in entry["fileMatch"])
    assert not any(fnmatch.fnmatch("records/tiny.yaml", pattern) for pattern in entry["fileMatch"]), "run records have no fixed name"
    assert entry["url"] == published_url("Config", "main")
    assert entry["url"].endswith("/schemas/" + SCHEMA_FILES["Config"]) and (REPO / "schemas" / SCHEMA_FILES["Config"]).is_file()


def test_the_modeline_names_this_releases_schema() -> None:
    line = modeline("RunRecord")
    assert line == f"# yaml-language-server: $schema=https://raw.githubusercontent.com/reprogate/reprogate/v{__version__}/schemas/run-record.schema.json\n"
