"""The pre-commit hook respects its users' time: it is handed only the files reprogate documents
live in (not every YAML and JSON file of the repository, each printed as "skipped"), and what it
prints starts with the errors that fail the commit, warnings after them. The last test installs
and runs the hook with pre-commit itself (`pre-commit try-repo`), as a user's commit would."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import EXAMPLES, REPO, git

HOOKS = REPO / ".pre-commit-hooks.yaml"


def hook() -> dict[str, object]:
    from pre_commit import clientlib  # the dev group's

    (found,) = clientlib.load_manifest(str(HOOKS))
    return dict(found)


def handed(paths: list[str]) -> list[str]:
    """The paths pre-commit hands the hook: `files` and `types` as pre-commit itself classifies them."""
    from identify import identify

    spec = hook()
    files = re.compile(str(spec["files"]))
    types = set(spec["types"])  # type: ignore[arg-type]
    return [p for p in paths if files.search(p) and types <= identify.tags_from_path(str(REPO / p))]


def documents_in_examples() -> tuple[set[str], set[str]]:
    """(the reprogate documents, the other YAML/JSON files) of examples/, as validate classifies them."""
    done = subprocess.run([sys.executable, "-m", "reprogate", "validate", "--verbose", "examples"], cwd=REPO, capture_output=True, text=True)
    documents = {line.split(":", 1)[0] for line in done.stdout.splitlines() if ": ok (" in line}
    others = {line.split(":", 1)[0] for line in done.stdout.splitlines() if ": skipped, not a reprogate document" in line}
    assert documents and others, done.stdout
    return documents, others


def test_the_hook_gets_every_reprogate_document_and_nothing_else() -> None:
    documents, others = documents_in_examples()
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "examples"], capture_output=True, text=True, check=True).stdout.split()
    selected = set(handed(listed))
    assert documents <= selected, documents - selected
    assert not (selected & others), selected & others
    everything = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    assert not [p for p in handed(everything) if p.startswith((".github/", "schemas/", "mkdocs.yml", ".pre-commit"))]


def test_errors_are_listed_before_warnings(tmp_path: Path) -> None:
    """A folder where the warning comes first in file order: the error is printed first anyway."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    statistical = tmp_path / "examples" / "records" / "statistical.yaml"  # warns (an inline manifest)
    broken = tmp_path / "examples" / "tiny" / "records" / "tiny.yaml"
    broken.write_text(broken.read_text().replace("level: bitwise", "level: nearly", 1))
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "validate", str(statistical), str(broken)], cwd=tmp_path, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith(" ")]
    first_warning = next(i for i, line in enumerate(lines) if "  warning: " in line)
    errors = [i for i, line in enumerate(lines) if str(broken.name) in line and "warning:" not in line and "notice:" not in line and "checked" not in line]
    assert errors and max(errors) < first_warning, lines


def test_pre_commit_runs_the_hook_on_a_commit(tmp_path: Path) -> None:
    """pre-commit installs the hook from this checkout and runs it on a repository's files: the
    records and manifests only (no "skipped" line for a workflow), and it fails on a broken record."""
    pytest.importorskip("pre_commit")
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "reprogate-validate", "--all-files", "--verbose"]
    passed = subprocess.run(command, cwd=project, capture_output=True, text=True, env=env, timeout=900)
    assert passed.returncode == 0, passed.stdout[-4000:] + passed.stderr[-2000:]
    assert "reprogate validate" in passed.stdout and "Passed" in passed.stdout
    assert "skipped" not in passed.stdout, "no workflow, trace or vocabulary file is handed to the hook"
    # every record, manifest and .reprogate.yaml of the examples (the integration examples' too), each once
    hook = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())[0]
    documents = [p for p in git(project, "ls-files").splitlines() if re.search(hook["files"], p)]
    assert len(documents) == 22 and not [p for p in documents if "/workflows/" in p], documents
    assert f"{len(documents)} document(s) checked, {len(documents)} valid" in passed.stdout
    record = project / "records" / "drill.yaml"
    record.write_text(record.read_text().replace("level: statistical", "level: nearly", 1))
    failed = subprocess.run(command, cwd=project, capture_output=True, text=True, env=env, timeout=900)
    assert failed.returncode == 1 and "Failed" in failed.stdout and "nearly" in failed.stdout, failed.stdout[-4000:]
