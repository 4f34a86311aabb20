"""Findings as a SARIF 2.1.0 log, for GitHub code scanning (`github/codeql-action/upload-sarif`).

A step's annotations stop at 10 errors and 10 warnings; code scanning keeps every result, shows
it on the pull request's diff and remembers it across runs. `validate` and `detect` render their
findings here (`--format sarif`), so the two produce one shape: one run, the tool `reprogate`,
one reporting descriptor per finding code and one result per finding.

A descriptor says what its code checks, the same for every result under it (code scanning
shows one rule text for all of a rule's alerts): the command's own words for the code where it
has them (`RuleText`), else words made from the code — never one finding's message or hint.
Each result carries its own message and what to do about it. Each result sits at its file,
line and column, the path relative to the repository root (`%SRCROOT%`, the folder code scanning
matches paths against: the git checkout's top, not the folder the command ran in, which the
action's `working-directory:` may move), percent-encoded byte by byte so that a file name that is
not UTF-8 still names that file. The run's `automationDetails.id` (`reprogate/validate/`) keeps
the two commands' alerts apart; upload-sarif's `category` input is then ignored, so a workflow
sets neither. tests/output/test_sarif.py holds the log to the official schema.
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
from reprogate.core.git import GitError, run_git
from reprogate.output.result import CommandResult

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/reprogate/reprogate"
DOCS = {command: f"{INFORMATION_URI}/blob/main/docs/{command}.md" for command in ("validate", "detect")}
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}


@dataclass(frozen=True)
class RuleText:
    """What a reporting descriptor says about a finding code: the same for every finding of it."""

    short: str  # one line: what the rule checks
    help: str = ""  # what to do, in general; empty: each result's own message says it


def repository_root(folder: Path) -> Path:
    """The top of the git checkout `folder` lies in (what code scanning's paths start at); the
    folder itself outside a checkout."""
    try:
        found = run_git(folder, "rev-parse", "--show-toplevel", check=False)
    except GitError:
        return folder.resolve()
    top = os.fsdecode(found.stdout.rstrip(b"\n")) if found.returncode == 0 else ""
    return Path(top).resolve() if top else folder.resolve()


def _uri(path: str) -> str:
    """A path as a URI reference: every byte outside the unreserved set and `/` percent-encoded,
    from the file name's own bytes (a name that is not UTF-8 keeps them, not U+FFFD)."""
    return quote(os.fsencode(path), safe="/")


def artifact_location(path: str, base: Path | None = None, root: Path | None = None) -> dict[str, str]:
    """A finding's path as a SARIF artifactLocation. `path` is relative to `base` (the folder the
    command read it from; default the current folder) or absolute; inside `root` (the repository
    root; default `base`'s) it is relative to %SRCROOT%, normalized; outside it an absolute file:
    URI without %SRCROOT%, so no relative URI climbs out of the checkout. Characters a URI cannot
    carry are percent-encoded, so a file name from a pull request (spaces, `%`, `#`, newlines)
    stays one path."""
    base = (base or Path.cwd()).resolve()
    root = (root or repository_root(base)).resolve()
    text = path.replace(os.sep, "/")
    absolute = posixpath.normpath(posixpath.join(base.as_posix(), text))
    top = root.as_posix()
    if absolute == top or absolute.startswith(top.rstrip("/") + "/"):
        return {"uri": _uri(posixpath.relpath(absolute, top)), "uriBaseId": "%SRCROOT%"}
    return {"uri": "file://" + _uri(absolute)}


def artifact_uri(path: str, base: Path | None = None, root: Path | None = None) -> str:
    """The URI of `artifact_location`."""
    return artifact_location(path, base, root)["uri"]


def _words(code: str) -> str:
    return code.replace(".", ": ").replace("-", " ").replace("_", " ")


def _descriptor(command: str, code: str, severity: Severity, known: RuleText | None) -> dict[str, Any]:
    """The rule of a code: its RuleText, or words made from the code; nothing from a finding."""
    short = known.short if known else f"reprogate {command}: {_words(code)}"
    help_text = (known.help if known and known.help else "") or (
        f"A finding of `reprogate {command}` ({code}). Each result says what it found in that file and what to do about it."
    )
    return {
        "id": code,
        "name": "".join(part.capitalize() for part in code.replace("_", "-").replace(".", "-").split("-") if part) or "Finding",
        "shortDescription": {"text": short},
        "fullDescription": {"text": short},
        "help": {"text": help_text},
        "helpUri": DOCS.get(command, INFORMATION_URI),
        "defaultConfiguration": {"level": LEVELS[severity]},
    }


def _result(d: Diagnostic, rule_index: int, command: str, base: Path, root: Path) -> dict[str, Any]:
    text = d.message + (f" (field {d.field})" if d.field else "") + (f". What to do: {d.hint}" if d.hint else "")
    result: dict[str, Any] = {
        "ruleId": d.code or command,
        "ruleIndex": rule_index,
        "level": LEVELS[d.severity],
        "message": {"text": text},
    }
    if d.path:
        physical: dict[str, Any] = {"artifactLocation": artifact_location(d.path, base, root)}
        if d.location.line > 0:  # line 0: about the file as a whole (no region)
            physical["region"] = {"startLine": d.location.line, **({"startColumn": d.location.col} if d.location.col > 0 else {})}
        result["locations"] = [{"physicalLocation": physical}]
    if d.field:
        result["properties"] = {"field": d.field}
    return result


def sarif_log(
    command: str, findings: Sequence[Diagnostic], rules: Mapping[str, RuleText] | None = None, base: Path | None = None, root: Path | None = None
) -> dict[str, Any]:
    """The SARIF log of one command's findings: rules in the order their codes first appear.
    Findings' paths are relative to `base` (default: the current folder)."""
    rules = rules or {}
    base = (base or Path.cwd()).resolve()
    root = (root or repository_root(base)).resolve()
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for d in findings:
        code = d.code or command
        if code not in index:
            descriptors.append(_descriptor(command, code, d.severity, rules.get(code)))
            index[code] = len(descriptors) - 1
        results.append(_result(d, index[code], command, base, root))
    log = {
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
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _root_uri(root), "description": {"text": "The root of the repository checkout."}}},
                "results": results,
            }
        ],
    }
    valid: dict[str, Any] = _unicode(log)
    return valid


def _unicode(node: Any) -> Any:
    """`node` with every string valid Unicode: a lone surrogate (a byte of a file name that is not
    UTF-8, kept by os.fsdecode, in a message that quotes the name) would be written as `\\udcff`,
    which JSON's grammar allows but I-JSON (RFC 7493) and strict readers refuse; it is written as
    the byte it stands for, `\\xff` (any other lone surrogate as `\\ud800`)."""
    if isinstance(node, str):
        try:
            node.encode("utf-8")
        except UnicodeEncodeError:
            return "".join(_escaped(c) for c in node)
        return node
    if isinstance(node, dict):
        return {_unicode(key): _unicode(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_unicode(value) for value in node]
    return node


def _escaped(c: str) -> str:
    point = ord(c)
    if 0xDC80 <= point <= 0xDCFF:  # os.fsdecode's escape of the byte point - 0xDC00
        return f"\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}" if 0xD800 <= point <= 0xDFFF else c


def _root_uri(root: Path) -> str:
    return "file://" + _uri(root.as_posix().rstrip("/") + "/")


def render_sarif(
    command: str, code: ExitCode, findings: Sequence[Diagnostic], rules: Mapping[str, RuleText] | None = None, base: Path | None = None
) -> CommandResult:
    """The log as the command's stdout; the exit code stays the command's (a SARIF step that
    uploads on failure uses `if: always()`)."""
    return CommandResult(code, [json.dumps(sarif_log(command, findings, rules, base), indent=2)])


__all__ = ["LEVELS", "SCHEMA", "RuleText", "artifact_location", "artifact_uri", "render_sarif", "repository_root", "sarif_log"]
