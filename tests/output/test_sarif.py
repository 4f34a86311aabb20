"""`validate --format sarif` and `detect --format sarif`: logs valid against the official SARIF
2.1.0 schema (vendored in tests/fixtures/sarif, its source in SOURCE.md), with a rule for each
finding code (id, short description, help text) and each result at its file, line and column."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import Result
from support import REPO, git

Cli = Callable[..., Result]
SCHEMA = json.loads((REPO / "tests" / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def valid_sarif(text: str) -> dict[str, Any]:
    log = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    return log


def test_the_schema_is_the_official_one() -> None:
    assert SCHEMA["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    with pytest.raises(jsonschema.ValidationError):  # the check can fail: a level SARIF does not know
        jsonschema.Draft4Validator(SCHEMA).validate(
            {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {"text": "m"}, "level": "notice"}]}]}
        )


def test_validate_findings_are_results_at_file_line_and_column(cli: Cli, project: Path) -> None:
    lock = project / "requirements.txt"
    lock.write_text(lock.read_text() + "six==1.17.0\n")  # drift: a notice at each record's lock pin
    record = project / "records" / "bitwise.yaml"
    record.write_text(record.read_text().replace("level: bitwise", "level: bitwize", 1))  # an error
    result = cli("validate", "--format", "sarif", "records/", cwd=project)
    assert result.exit_code == 1, result.output + result.stderr
    log = valid_sarif(result.output)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "reprogate" and rules
    assert all(r["id"] and r["shortDescription"]["text"] and r["help"]["text"] for r in rules)
    assert len({r["id"] for r in rules}) == len(rules)
    results = run["results"]
    assert {r["level"] for r in results} >= {"error", "note"}
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    drift = [
        r for r in results if r["ruleId"] == "environment-drift" and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "records/bitwise.yaml"
    ]
    assert drift, [r["ruleId"] for r in results]
    where = drift[0]["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert where["region"] == {"startLine": 28, "startColumn": 7}  # as the text format says: records/bitwise.yaml:28:7
    bad = [r for r in results if r["level"] == "error"]
    assert any(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "records/bitwise.yaml" for r in bad)


def test_a_passing_validate_has_no_error_results(cli: Cli, project: Path) -> None:
    result = cli("validate", "--format", "sarif", "records/", cwd=project)
    assert result.exit_code == 0, result.output + result.stderr
    results = valid_sarif(result.output)["runs"][0]["results"]
    assert results and all(r["level"] != "error" for r in results)  # the example's warnings, as text shows them


def test_a_file_name_from_a_pull_request_stays_one_uri(cli: Cli, project: Path) -> None:
    odd = project / "records" / "a b#c%.yaml"
    odd.write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
    result = cli("validate", "--format", "sarif", "records/", cwd=project)
    log = valid_sarif(result.output)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"] if r.get("locations")}
    assert "records/a%20b%23c%25.yaml" in uris


def test_detect_changes_are_results_with_rules(cli: Cli, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "requirements.txt").write_text("torch==2.4.0\nnumpy==1.26.4\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "requirements.txt").write_text("torch==2.5.1\nnumpy==1.26.4\n")
    git(repo, "commit", "-qam", "bump")
    result = cli("detect", "--base", "HEAD~1", "--head", "HEAD", "--repo", str(repo), "--format", "sarif")
    assert result.exit_code == 0, result.output + result.stderr
    run = valid_sarif(result.output)["runs"][0]
    [found] = [r for r in run["results"] if "torch" in r["message"]["text"]]
    assert found["level"] == "warning" and found["ruleId"].startswith("framework-")
    assert found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "requirements.txt"
    rule = run["tool"]["driver"]["rules"][found["ruleIndex"]]
    assert rule["id"] == found["ruleId"] and "rebuild" in rule["help"]["text"]
    assert run["automationDetails"]["id"] == "reprogate/detect/"
