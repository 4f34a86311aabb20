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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
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


def artifact_uri(path: str) -> str:
    """A finding's path as a SARIF artifact URI: relative paths stay relative (to %SRCROOT%, the
    checkout) with `./` dropped; an absolute path becomes a file: URI. Characters a URI cannot
    carry are percent-encoded, so a file name from a pull request stays one path."""
    if os.path.isabs(path):
        return "file://" + quote(PurePosixPath(path).as_posix())
    parts = [part for part in PurePosixPath(path.replace(os.sep, "/")).parts if part != "."]
    return quote("/".join(parts) or ".")


def _result(d: Diagnostic, rule_index: int, command: str) -> dict[str, Any]:
    text = d.message + (f" (field {d.field})" if d.field else "")
    result: dict[str, Any] = {
        "ruleId": d.code or command,
        "ruleIndex": rule_index,
        "level": LEVELS[d.severity],
        "message": {"text": text},
    }
    if d.path:
        location = {"uri": artifact_uri(d.path)}
        if not os.path.isabs(d.path):
            location["uriBaseId"] = "%SRCROOT%"
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


__all__ = ["LEVELS", "SCHEMA", "RuleText", "artifact_uri", "render_sarif", "sarif_log"]
