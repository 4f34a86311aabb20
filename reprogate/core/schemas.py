"""Find the JSON Schemas reprogate ships and build validators for them.

The schemas live in `schemas/` at the repository root so editors and check-jsonschema can point at
them, and the wheel carries the same files as `reprogate/schemas/`. An installed package finds its
own copy; a source checkout (editable install, tests) falls back to the repository's folder.
"""

from __future__ import annotations

import datetime
import functools
import json
from pathlib import Path
from typing import Any

from reprogate import __version__

API_VERSION = "reprogate/v1"

# kind -> schema file name. Adding a document kind is one line here and one schema file.
SCHEMA_FILES: dict[str, str] = {
    "RunRecord": "run-record.schema.json",
    "DatasetManifest": "dataset-manifest.schema.json",
    "Config": "config.schema.json",
    "EnvironmentCapture": "capture.schema.json",
    "Verdict": "verdict.schema.json",
    "Detection": "detect.schema.json",
    "Cluster": "cluster.schema.json",
}


# Where each release's schemas are published: the repository at the release's tag. Editors read
# it from the `yaml-language-server` modeline init writes; SchemaStore's catalog entry for
# .reprogate.yaml (tools/schemastore/catalog.json) points at the default branch's copy.
PUBLISHED = "https://raw.githubusercontent.com/reprogate/reprogate/{ref}/schemas/{file}"


def published_url(kind: str, ref: str | None = None) -> str:
    """The schema of `kind` as this release published it (ref: a tag or branch; default v<version>)."""
    return PUBLISHED.format(ref=ref or f"v{__version__}", file=SCHEMA_FILES[kind])


def modeline(kind: str) -> str:
    """The first line of a YAML file that tells editors (the YAML language server) its schema."""
    return f"# yaml-language-server: $schema={published_url(kind)}\n"


def schema_dir() -> Path:
    """The folder holding the schema files, installed copy first."""
    package = Path(__file__).resolve().parent.parent  # reprogate/
    for candidate in (package / "schemas", package.parent / "schemas"):
        if (candidate / SCHEMA_FILES["RunRecord"]).is_file():
            return candidate
    raise FileNotFoundError(f"reprogate's schemas are missing (looked in {package / 'schemas'} and {package.parent / 'schemas'}); reinstall the package")


@functools.cache
def load_schema(kind: str) -> dict[str, Any]:
    with open(schema_dir() / SCHEMA_FILES[kind], encoding="utf-8") as fh:
        schema: dict[str, Any] = json.load(fh)
        return schema


@functools.cache
def validator(kind: str) -> Any:
    """A compiled Draft 2020-12 validator for a kind, with the sibling schemas registered so
    cross-file `$ref`s (a record's inline dataset manifest) resolve without any network access."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [(s["$id"], Resource.from_contents(s)) for s in (load_schema(k) for k in SCHEMA_FILES)]
    registry = Registry().with_resources(resources)
    return Draft202012Validator(load_schema(kind), registry=registry, format_checker=_format_checker())


def _format_checker() -> Any:
    """Assert `date` and `date-time` with the standard library, so a pattern-shaped but impossible
    date (2026-02-31) is caught without optional format packages."""

    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())

    @checker.checks("date", raises=ValueError)
    def _date(value: object) -> bool:
        return not isinstance(value, str) or bool(datetime.date.fromisoformat(value))

    @checker.checks("date-time", raises=ValueError)
    def _date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        text = value.replace("t", "T").replace(" ", "T")
        text = text[:-1] + "+00:00" if text[-1:] in "zZ" else text
        return datetime.datetime.fromisoformat(text).tzinfo is not None

    return checker
