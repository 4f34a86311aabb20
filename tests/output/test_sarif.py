"""`validate --format sarif` and `detect --format sarif`: logs valid against the official SARIF
2.1.0 schema (vendored in tests/fixtures/sarif, its source in SOURCE.md), with a rule for each
finding code (id, short description, help text) and each result at its file, line and column."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
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


def results_by_rule(log: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for r in log["runs"][0]["results"]:
        found.setdefault(r["ruleId"], []).append(r)
    return found


def test_a_rule_says_what_its_code_checks_and_each_result_its_own_advice(cli: Cli, project: Path) -> None:
    """Two findings of one code with different advice: code scanning shows one rule text for both
    alerts, so it must be the code's, not the first finding's ("did you mean 'bitwise'?" on an
    alert about `direction`)."""
    for name, level, typo in (("bitwise", "bitwise", "bitwize"), ("behavioral", "behavioral", "behaviorl")):
        record = project / "records" / f"{name}.yaml"
        record.write_text(record.read_text().replace(f"level: {level}", f"level: {typo}", 1))
        assert typo in record.read_text()
    log = valid_sarif(cli("validate", "--format", "sarif", "records/bitwise.yaml", "records/behavioral.yaml", cwd=project).output)
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    enum = results_by_rule(log)["schema.enum"]
    assert len(enum) == 2
    hints = {"did you mean 'bitwise'?", "did you mean 'behavioral'?"}
    assert {h for h in hints for r in enum if h in r["message"]["text"]} == hints, "each result carries its own advice"
    assert all(sum(h in r["message"]["text"] for h in hints) == 1 for r in enum)
    rule = rules["schema.enum"]
    described = " ".join((rule["shortDescription"]["text"], rule["fullDescription"]["text"], rule["help"]["text"]))
    assert not any(h in described for h in hints) and "bitwize" not in described and "behaviorl" not in described
    for r in log["runs"][0]["tool"]["driver"]["rules"]:  # no rule text is one finding's message
        assert all(r["help"]["text"] not in res["message"]["text"] for res in results_by_rule(log)[r["id"]]), r["id"]


def test_paths_are_relative_to_the_repository_root_from_any_working_directory(cli: Cli, project: Path) -> None:
    """The action's `working-directory: records` runs validate in a subfolder; code scanning
    matches paths from the checkout's root."""
    git(project, "init", "-q", "-b", "main")
    record = project / "records" / "bitwise.yaml"
    record.write_text(record.read_text().replace("level: bitwise", "level: bitwize", 1))
    log = valid_sarif(cli("validate", "--format", "sarif", "bitwise.yaml", cwd=project / "records").output)
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"] for loc in r.get("locations", [])}
    assert uris == {"records/bitwise.yaml"}
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"


def detect_repo(tmp_path: Path, before: dict[str, str], after: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for files in (before, after):
        for name, body in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(body)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "change", "--allow-empty")
    return repo


def test_detect_places_each_change_on_its_line(cli: Cli, tmp_path: Path) -> None:
    dockerfile = "# syntax=docker/dockerfile:1\nARG PY=3.11\nFROM nvidia/cuda:{cuda}-devel-ubuntu22.04 AS build\nRUN pip install torch=={torch}\n"
    manifest = (REPO / "examples" / "data" / "d77.manifest.yaml").read_text()
    shard = "sha256:55aa41015ed42e6ba1fd2834a8d94ce1aa87cb23c85b257deb104dcbb43d29e6"
    assert manifest.count(shard) == 1
    workflow = "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n  gpu:\n    runs-on: [self-hosted, {gpu}]\n"
    repo = detect_repo(
        tmp_path,
        {
            "requirements.txt": "numpy==1.26.4\ntorch==2.4.0\n",
            "docker/Dockerfile": dockerfile.format(cuda="11.8.0", torch="2.4.0"),
            "data/d77.manifest.yaml": manifest,
            ".github/workflows/ci.yml": workflow.format(gpu="a100"),
        },
        {
            "requirements.txt": "numpy==1.26.4\ntorch==2.5.1\n",
            "docker/Dockerfile": dockerfile.format(cuda="12.4.1", torch="2.5.1"),
            "data/d77.manifest.yaml": manifest.replace(shard, "sha256:" + "e" * 64),
            ".github/workflows/ci.yml": workflow.format(gpu="h100"),
        },
    )
    log = valid_sarif(cli("detect", "--base", "HEAD~1", "--head", "HEAD", "--repo", str(repo), "--format", "sarif", cwd=repo / "docker").output)
    placed = {}
    for r in log["runs"][0]["results"]:
        where = r["locations"][0]["physicalLocation"]
        placed[(where["artifactLocation"]["uri"], r["message"]["text"].split(" ", 1)[0].rstrip(":"))] = where.get("region", {}).get("startLine")
    shard_line = manifest.splitlines().index("  - name: shards/train-00001.jsonl.zst") + 1
    assert placed[("requirements.txt", "torch")] == 2, placed
    assert placed[("docker/Dockerfile", "FROM")] == 3 and placed[("docker/Dockerfile", "CUDA")] == 3
    assert placed[("docker/Dockerfile", "torch")] == 4
    assert placed[(".github/workflows/ci.yml", "jobs.gpu.runs-on")] == 6
    assert any(uri == "data/d77.manifest.yaml" and line in (shard_line, shard_line + 2) for (uri, _), line in placed.items()), placed
    assert all(line != 1 for line in placed.values()), "no result is put at line 1 for want of its line"


def test_a_file_name_that_is_not_utf8_is_escaped_byte_by_byte(cli: Cli, tmp_path: Path) -> None:
    name = os.fsdecode(b"records/caf\xe9.yaml")
    repo = detect_repo(tmp_path, {"README.md": "x\n"}, {})
    (repo / "records").mkdir()
    Path(repo, name).write_text("apiVersion: reprogate/v1\nkind: RunRecord\n")
    result = cli("validate", "--format", "sarif", "records/", cwd=repo)
    assert result.exit_code == 1, result.output
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in valid_sarif(result.output)["runs"][0]["results"] for loc in r.get("locations", [])}
    assert uris == {"records/caf%E9.yaml"}
    docker = os.fsdecode(b"Dockerfile.\xe9")
    Path(repo, docker).write_text("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a Dockerfile under a Latin-1 name")
    found = valid_sarif(cli("detect", "--base", "HEAD~1", "--head", "HEAD", "--repo", str(repo), "--format", "sarif").output)["runs"][0]["results"]
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in found if "Dockerfile" in str(r)} == {"Dockerfile.%E9"}


def test_the_example_workflow_sets_no_category_that_upload_sarif_would_ignore() -> None:
    workflow = yaml.safe_load((REPO / "examples" / "workflows" / "reprogate-gate.yml").read_text())
    uploads = [s for job in workflow["jobs"].values() for s in job.get("steps", []) if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")]
    assert uploads and all("category" not in (s.get("with") or {}) for s in uploads), "the log's automationDetails.id decides the category"
