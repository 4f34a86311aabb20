"""The wheel carries the schemas and the package finds them once installed; pre-commit reads our hook."""

from __future__ import annotations

import subprocess
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 CI leg
    import tomli as tomllib
import zipfile
from pathlib import Path

import pytest
from support import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("reprogate-*.whl"))


def test_wheel_ships_schemas_and_entry_point(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for schema in ("run-record", "dataset-manifest", "config", "capture"):
        assert f"reprogate/schemas/{schema}.schema.json" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "reprogate = reprogate.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_validates_from_its_own_schemas(wheel: Path, tmp_path: Path) -> None:
    """Unpacked away from the checkout, the package must use the schemas inside it."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = "from reprogate.core.schemas import schema_dir; print(schema_dir())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert result.stdout.strip() == str(site / "reprogate" / "schemas"), result.stderr
    run = subprocess.run(
        [sys.executable, "-m", "reprogate", "validate", str(REPO / "examples")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_pre_commit_accepts_the_hook_manifest() -> None:
    from pre_commit import clientlib  # a dev extra: always present where the tests run

    hooks = clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert [h["id"] for h in hooks] == ["reprogate-validate"]
    assert hooks[0]["entry"] == "reprogate validate"


def _metadata(wheel: Path) -> str:
    archive = zipfile.ZipFile(wheel)
    return archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def test_the_wheel_carries_the_license_and_says_what_it_is(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    licenses = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert licenses and "Apache License" in archive.read(licenses[0]).decode() and "Version 2.0" in archive.read(licenses[0]).decode()
    metadata = _metadata(wheel)
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    assert "Project-URL: Changelog," in metadata and "Project-URL: Issues," in metadata and "Project-URL: Documentation," in metadata
    assert "reprogate/py.typed" in archive.namelist()


def test_the_core_needs_no_scientific_stack(wheel: Path) -> None:
    """validate, detect, gate, report and every verdict's statistics run on the core install:
    scipy and numpy (216 MB) are test dependencies only."""
    required = [line.split(":", 1)[1].strip() for line in _metadata(wheel).splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in required if "extra ==" not in r]
    assert core and not [r for r in core if r.split()[0].lower().startswith(("scipy", "numpy", "torch"))], core


def test_the_dev_tools_are_a_dependency_group_not_a_published_extra(wheel: Path) -> None:
    """pytest, ruff and the CPU torch the tests pin are the project's own tools (PEP 735): a user's
    `pip install 'reprogate[...]'` can name no extra that pulls them."""
    extras = [line.split(":", 1)[1].strip() for line in _metadata(wheel).splitlines() if line.startswith("Provides-Extra:")]
    assert extras and "dev" not in extras, extras
    assert not [line for line in _metadata(wheel).splitlines() if line.startswith("Requires-Dist:") and "torch==" in line]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    group = project["dependency-groups"]["dev"]
    assert any(r.startswith("pytest") for r in group) and any(r.startswith("ruff==") for r in group)
    assert "--group dev" in (REPO / ".ci" / "run").read_text()


def test_the_classifiers_name_the_python_versions_ci_tests(wheel: Path) -> None:
    from reprogate.core.documents import load_document

    ci = load_document(REPO / ".github" / "workflows" / "ci.yml").data
    tested = set(ci["jobs"]["test"]["strategy"]["matrix"]["python"])
    classified = {
        line.rsplit("::", 1)[1].strip() for line in _metadata(wheel).splitlines() if line.startswith("Classifier: Programming Language :: Python :: 3.")
    }
    assert tested and classified == tested


def test_the_sdist_carries_the_license_changelog_and_tests(tmp_path: Path) -> None:
    import tarfile

    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path)], check=True, capture_output=True, cwd=REPO)
    sdist = next(tmp_path.glob("reprogate-*.tar.gz"))
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "action.yml", "schemas/run-record.schema.json", "mkdocs.yml", "docs/index.md"} <= names
    assert any(name.startswith("tests/") for name in names)


def test_the_documented_pins_name_this_release() -> None:
    """The pre-commit `rev:` (docs/validate.md's hook snippet, and any other in the README or docs/)
    and the example workflows' pinned-release comments say the version a reader can install; a
    release that forgets them leaves users pinning an old one."""
    import re

    from reprogate import __version__

    hook = re.findall(r"^\s*rev: (v\S+)$", (REPO / "docs" / "validate.md").read_text(), flags=re.M)
    assert hook, "docs/validate.md lost its pre-commit snippet"
    found = [
        rev for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))] for rev in re.findall(r"^\s*rev: (v\S+)$", page.read_text(), flags=re.M)
    ]
    for workflow in sorted((REPO / "examples" / "workflows").glob("*.yml")):
        found += re.findall(r"uses: reprogate/reprogate@[0-9a-f]{40} # (v\S+) - pin the release you adopt", workflow.read_text())
    assert found and set(found) == {f"v{__version__}"}, found
