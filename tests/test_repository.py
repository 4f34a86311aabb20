"""The repository's own promises: README set-up lines, CI script, workflows that lint clean, Python that ruff passes."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import GIT_ENV, REPO, git, require_tool


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


def five_minutes_commands() -> list[str]:
    """The commands of the README's "Five minutes on the example" block, as a reader copies them."""
    text = (REPO / "README.md").read_text()
    block = text.split("## Five minutes on the example", 1)[1].split("```console\n", 1)[1].split("```", 1)[0]
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


def test_the_readme_five_minutes_block_runs_as_written(tmp_path: Path) -> None:
    """Each command of the block in one shell, in a checkout where the first set-up line has run
    (its own rebuild made a folder too), each with the exit status the block says (0 unless its
    comment says `exit N`). The old block globbed /tmp/reprogate-rebuild-*/verdict.json, which
    names two verdicts by then, so `report` exited 2. /tmp/ reads as this test's own TMPDIR, so
    other runs' folders on the machine do not count."""
    require_tool("git")
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "examples", checkout / "examples", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(checkout, "init", "-q", "-b", "main")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-qm", "reprogate's examples")
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "reprogate").symlink_to(Path(sys.executable).parent / "reprogate")
    (tmp_path / "tmp").mkdir()
    first = setup_lines()[0].rsplit("&& ", 1)[1]
    assert first.startswith(".venv/bin/reprogate rebuild "), first
    commands = [first, *five_minutes_commands()]
    script = "".join(f'{command.replace("/tmp/", "$TMPDIR/")}\necho "::exit $?"\n' for command in commands)
    done = subprocess.run(
        ["bash", "-c", script], cwd=checkout, env={**os.environ, **GIT_ENV, "TMPDIR": str(tmp_path / "tmp")}, capture_output=True, text=True, timeout=600
    )
    said = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("::exit ")]
    wanted = [int(found.group(1)) if (found := re.search(r"#.*\bexit (\d)", command)) else 0 for command in commands]
    assert said == wanted, f"{list(zip(commands, said, strict=False))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Reproduction passed" in done.stdout, f"report printed the Markdown: {done.stdout[-3000:]}"


WORKFLOWS = sorted(str(p) for p in [*(REPO / ".github" / "workflows").glob("*.yml"), *(REPO / "examples" / "workflows").glob("*.yml")])


def test_workflows_and_the_action_match_githubs_schemas() -> None:
    result = subprocess.run([require_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *WORKFLOWS], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    action = subprocess.run(
        [require_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(REPO / "action.yml")], capture_output=True, text=True
    )
    assert action.returncode == 0, action.stdout + action.stderr


def test_workflows_and_the_action_pass_zizmor_offline() -> None:
    result = subprocess.run([require_tool("zizmor"), "--offline", "--no-progress", str(REPO / "action.yml"), *WORKFLOWS], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings" in result.stdout + result.stderr


def test_workflows_pass_actionlint_with_the_self_hosted_labels_declared() -> None:
    """actionlint (with shellcheck on the run: scripts where it is installed) finds nothing; the
    example rebuild workflows' two runner labels are declared self-hosted in .github/actionlint.yaml."""
    config = REPO / ".github" / "actionlint.yaml"
    result = subprocess.run([require_tool("actionlint"), "-config-file", str(config), "-pyflakes=", *WORKFLOWS], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    labels = yaml.safe_load(config.read_text())["self-hosted-runner"]["labels"]
    without = subprocess.run(
        [require_tool("actionlint"), "-config-file", os.devnull, "-shellcheck=", "-pyflakes=", *WORKFLOWS], capture_output=True, text=True, cwd=REPO
    )
    unknown = sorted(set(re.findall(r'label "([^"]+)" is unknown', without.stdout)))
    assert unknown == sorted(labels), "each declared label is one the examples use, and no other label is unknown"


def test_no_run_script_interpolates_an_expression() -> None:
    """${{ }} in a run: script is expanded before the shell runs (script injection); inputs go through env:."""
    from reprogate.core.documents import load_document

    def runs(node: object) -> list[str]:
        if isinstance(node, dict):
            return [v for k, v in node.items() if k == "run" and isinstance(v, str)] + [r for v in node.values() for r in runs(v)]
        if isinstance(node, list):
            return [r for v in node for r in runs(v)]
        return []

    scripts = [script for path in [*WORKFLOWS, str(REPO / "action.yml")] for script in runs(load_document(Path(path)).data)]
    assert scripts and not [s for s in scripts if "${{" in s]


def test_every_action_reference_is_pinned_to_a_full_commit() -> None:
    import re

    for path in [*WORKFLOWS, str(REPO / "action.yml")]:
        for line in Path(path).read_text().splitlines():
            if re.match(r"^\s*(-\s+)?uses:", line):
                assert re.search(r"uses:\s*[\w./-]+@[0-9a-f]{40}\b", line), f"{path}: {line.strip()}"


def ruff() -> list[str]:
    """The ruff of the dev extra, installed beside this interpreter; else one on PATH."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    return [require_tool("ruff")]


def test_ruff_check_and_ruff_format_pass() -> None:
    """The configuration is pyproject.toml's [tool.ruff]; .pre-commit-config.yaml runs the same two."""
    for command in (["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]):
        result = subprocess.run([*ruff(), *command], cwd=REPO, capture_output=True, text=True)
        assert result.returncode == 0, f"ruff {' '.join(command)} (fix with: ruff check --fix . && ruff format .)\n{result.stdout}{result.stderr}"


def test_mypy_strict_passes() -> None:
    """pyproject.toml's [tool.mypy] (strict, on reprogate/) holds at 0 errors; .pre-commit-config.yaml
    runs the same. The dev extra pins mypy and the stubs, so a missing mypy fails where CI is set
    (a developer's machine without the dev extra skips)."""
    if importlib.util.find_spec("mypy") is None:
        if "CI" in os.environ:
            pytest.fail("mypy is missing where CI is set; the dev extra pins it (pip install -e . --group dev)")
        pytest.skip("mypy not installed (it is in the dev extra)")
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and "Success" in result.stdout, f"python -m mypy (configured in pyproject.toml)\n{result.stdout}{result.stderr}"


def test_every_type_ignore_names_its_error_and_says_why() -> None:
    """A `# type: ignore` in reprogate/ silences one named mypy error and says, in a comment after
    it, why the checker is wrong there (a stub that lags the library, a base picked at run time);
    a bare or unexplained one hides whatever error comes next on that line."""
    import io
    import tokenize

    form = re.compile(r"type:\s*ignore\[[a-z-]+(, [a-z-]+)*\]  # \S.{11,}")
    unexplained = []
    for path in sorted((REPO / "reprogate").rglob("*.py")):
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.COMMENT and "type: ignore" in token.string and not form.search(token.string):
                unexplained.append(f"{path.relative_to(REPO)}:{token.start[0]}: {token.string}")
    assert not unexplained, "\n".join(unexplained)


def test_pre_commit_runs_the_ruff_the_dev_extra_pins() -> None:
    pinned = re.search(r'"ruff==([0-9.]+)"', (REPO / "pyproject.toml").read_text())
    assert pinned, "pyproject.toml's dev extra pins ruff exactly"
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    revs = [r["rev"] for r in config["repos"] if r["repo"] == "https://github.com/astral-sh/ruff-pre-commit"]
    assert revs == [f"v{pinned.group(1)}"]


def test_the_docs_say_what_github_limits() -> None:
    """Two limits a user meets only on GitHub: where a GITHUB_TOKEN check run is listed, and which
    repositories artifact attestations (the example attest job) work in."""
    page = (REPO / "docs" / "github.md").read_text()
    limits = page.split("## What GitHub limits", 1)[1].split("\n## ", 1)[0]
    assert "another workflow's check suite" in limits and "GITHUB_TOKEN" in limits
    assert "public repository or GitHub Enterprise Cloud" in limits and "`attest` job" in limits
    for workflow in ("reference-rebuild.yml", "reference-rebuild-slurm.yml"):
        assert "docs/github.md#what-github-limits" in (REPO / "examples" / "workflows" / workflow).read_text()


def test_every_example_job_has_a_time_limit_and_a_concurrency_group() -> None:
    """A hung job holds a runner for GitHub's 6 hours (a self-hosted GPU runner, or a Slurm
    allocation, longer); two runs of one job for the same head race on its status."""
    from reprogate.core.documents import load_document

    for path in sorted((REPO / "examples" / "workflows").glob("*.yml")):
        for name, job in load_document(path).data["jobs"].items():
            assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: {name} has no timeout-minutes"
            group = job.get("concurrency", {})
            assert group.get("group") and "cancel-in-progress" in group, f"{path.name}: {name} has no concurrency group"
