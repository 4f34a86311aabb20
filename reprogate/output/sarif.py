"""Findings as a SARIF 2.1.0 log, for GitHub code scanning (`github/codeql-action/upload-sarif`).

A step's annotations stop at 10 errors and 10 warnings; code scanning keeps every result, shows
it on the pull request's diff and remembers it across runs. `validate` and `detect` render their
findings here (`--format sarif`), so the two produce one shape: one run, the tool `reprogate`,
one reporting descriptor per finding code (its help text the finding's hint, or its message),
and each result at its file, line and column, the path relative to the repository
(`%SRCROOT%`) as code scanning matches paths. tests/output/test_sarif.py holds the log to the
official schema.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from reprogate import __version__
from reprogate.core.diagnostics import Diagnostic, ExitCode, Severity
from reprogate.output.result import CommandResult

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/reprogate/reprogate"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}


@dataclass(frozen=True)
class RuleText:
    """What a reporting descriptor says about a finding code beyond the finding itself."""

    short: str  # one line: what the rule checks
    help: str = ""  # what to do; empty: the first finding's hint (or message) stands in


def artifact_location(path: str) -> dict[str, str]:
    """A finding's path as a SARIF artifactLocation. A path inside the folder reprogate runs in
    (the checkout) is relative to %SRCROOT%, normalized (`./` and `a/..` dropped), also when it
    was given absolute; one outside it (`../x`, `/etc/x`) is an absolute file: URI without
    %SRCROOT%, so no relative URI climbs out of the checkout. Characters a URI cannot carry are
    percent-encoded, so a file name from a pull request (spaces, `%`, `#`, newlines) stays one path."""
    text = path.replace(os.sep, "/")
    if not posixpath.isabs(text):
        text = posixpath.normpath(text)
        if text != ".." and not text.startswith("../"):
            return {"uri": quote(text), "uriBaseId": "%SRCROOT%"}
    absolute = posixpath.normpath(posixpath.join(Path.cwd().as_posix(), text))
    root = Path.cwd().as_posix()
    if absolute == root or absolute.startswith(root.rstrip("/") + "/"):
        return {"uri": quote(posixpath.relpath(absolute, root)), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + quote(absolute)}


def artifact_uri(path: str) -> str:
    """The URI of `artifact_location`."""
    return artifact_location(path)["uri"]


def _result(d: Diagnostic, rule_index: int, command: str) -> dict[str, Any]:
    text = d.message + (f" (field {d.field})" if d.field else "")
    result: dict[str, Any] = {
        "ruleId": d.code or command,
        "ruleIndex": rule_index,
        "level": LEVELS[d.severity],
        "message": {"text": text},
    }
    if d.path:
        location = artifact_location(d.path)
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": {"startLine": max(1, d.location.line), "startColumn": max(1, d.location.col)},
                }
            }
        ]
    if d.field:
        result["properties"] = {"field": d.field}
    return result


def sarif_log(command: str, findings: Sequence[Diagnostic], rules: Mapping[str, RuleText] | None = None) -> dict[str, Any]:
    """The SARIF log of one command's findings: rules in the order their codes first appear."""
    rules = rules or {}
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for d in findings:
        code = d.code or command
        if code not in index:
            known = rules.get(code)
            help_text = (known.help if known and known.help else "") or d.hint or d.message
            descriptors.append(
                {
                    "id": code,
                    "name": "".join(part.capitalize() for part in code.replace("_", "-").split("-") if part) or "Finding",
                    "shortDescription": {"text": known.short if known else code.replace("-", " ")},
                    "fullDescription": {"text": known.short if known else d.message},
                    "help": {"text": help_text},
                    "defaultConfiguration": {"level": LEVELS[d.severity]},
                }
            )
            index[code] = len(descriptors) - 1
        results.append(_result(d, index[code], command))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "reprogate",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "automationDetails": {"id": f"reprogate/{command}/"},
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "The repository checkout the command ran in."}}},
                "results": results,
            }
        ],
    }


def render_sarif(command: str, code: ExitCode, findings: Sequence[Diagnostic], rules: Mapping[str, RuleText] | None = None) -> CommandResult:
    """The log as the command's stdout; the exit code stays the command's (a SARIF step that
    uploads on failure uses `if: always()`)."""
    return CommandResult(code, [json.dumps(sarif_log(command, findings, rules), indent=2)])


__all__ = ["LEVELS", "SCHEMA", "RuleText", "artifact_location", "artifact_uri", "render_sarif", "sarif_log"]
