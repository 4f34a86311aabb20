"""The repository's own promises: README set-up lines, CI script, workflows that lint clean."""

from __future__ import annotations

import subprocess

from conftest import REPO, require_tool


def setup_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_setup_lines() -> None:
    lines = setup_lines()
    assert len(lines) == 2
    assert "reprogate " in lines[0] and "pytest" in lines[1]


def test_ci_runs_the_readme_test_line_verbatim() -> None:
    assert setup_lines()[1] in (REPO / ".ci" / "run").read_text()


def test_workflows_match_githubs_schema() -> None:
    workflows = sorted(str(p) for p in (REPO / ".github" / "workflows").glob("*.yml"))
    result = subprocess.run([require_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *workflows], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_pass_zizmor_offline() -> None:
    result = subprocess.run([require_tool("zizmor"), "--offline", "--no-progress", str(REPO / ".github" / "workflows")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
