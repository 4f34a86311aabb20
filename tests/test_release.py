"""The release workflow can publish what this tree builds: the distributions built here pass
`twine check --strict` with exactly the twine the workflow pins (and the publish action bundles),
the GitHub release is made from the CHANGELOG's section, and the major tag follows."""

from __future__ import annotations

import importlib.metadata
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 CI leg
    import tomli as tomllib

import pytest
from packaging.requirements import Requirement
from support import REPO

from reprogate.core.documents import load_document

WORKFLOW = REPO / ".github" / "workflows" / "release.yml"
RELEASE = load_document(WORKFLOW).data


def step_scripts(job: str) -> list[str]:
    return [str(step["run"]) for step in RELEASE["jobs"][job]["steps"] if "run" in step]


def workflow_pins() -> dict[str, str]:
    """The exact versions the build job's `pip install` line installs (name -> version)."""
    pins: dict[str, str] = {}
    for script in step_scripts("build"):
        for line in script.splitlines():
            words = shlex.split(line, comments=True)
            if words[:4] == ["python", "-m", "pip", "install"]:
                for word in words[4:]:
                    if not word.startswith("-"):
                        requirement = Requirement(word)
                        (spec,) = requirement.specifier
                        assert spec.operator == "==", f"release.yml installs {word}: pin it exactly"
                        pins[requirement.name] = spec.version
    return pins


def dev_pins() -> dict[str, str]:
    group = tomllib.loads((REPO / "pyproject.toml").read_text())["dependency-groups"]["dev"]
    found = {}
    for text in group:
        requirement = Requirement(text)
        exact = [s.version for s in requirement.specifier if s.operator == "=="]
        if exact:
            found[requirement.name] = exact[0]
    return found


def test_the_workflow_builds_and_checks_with_the_dev_groups_exact_build_and_twine() -> None:
    pins = workflow_pins()
    assert {"build", "twine"} <= set(pins), pins
    assert {name: dev_pins().get(name) for name in ("build", "twine")} == {"build": pins["build"], "twine": pins["twine"]}
    script = "\n".join(step_scripts("build"))
    assert "python -m build" in script and "python -m twine check --strict dist/*" in script


def test_the_publish_action_bundles_the_twine_the_build_checks_with() -> None:
    """The upload is done by the twine inside pypa/gh-action-pypi-publish: its pin must be the
    release whose bundled twine is the one that passed the check (.github/action-pins.toml)."""
    pins = tomllib.loads((REPO / ".github" / "action-pins.toml").read_text())["pin"]
    publish = next(step for step in RELEASE["jobs"]["publish"]["steps"] if str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish@"))
    sha = str(publish["uses"]).split("@", 1)[1]
    row = next(p for p in pins if p["action"] == "pypa/gh-action-pypi-publish" and p["sha"] == sha)
    assert row["bundles"] == f"twine=={workflow_pins()['twine']}"
    assert publish.get("with", {}).get("attestations") is True, "PEP 740 attestations, said explicitly"
    permissions = RELEASE["jobs"]["publish"]["permissions"]
    assert permissions["id-token"] == "write" and "environment" in RELEASE["jobs"]["publish"], "trusted publishing from a protected environment"


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The sdist and the wheel, built as the workflow builds them (`python -m build`, here without
    isolation: the dev group's hatchling is the backend)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = sorted(out.iterdir())
    assert sorted(p.suffix for p in built) == [".gz", ".whl"], built
    return built


def test_twine_check_strict_passes_with_the_pinned_twine(distributions: list[Path]) -> None:
    pinned = workflow_pins()["twine"]
    assert importlib.metadata.version("twine") == pinned, "the dev group's twine is the workflow's (pip install -e . --group dev)"
    wheel = next(p for p in distributions if p.suffix == ".whl")
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert metadata.startswith("Metadata-Version: "), metadata[:40]
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, distributions)], capture_output=True, text=True, timeout=300)
    print(done.stdout)  # the note of the release shows it
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_github_release_is_made_from_the_changelog_section_and_the_major_tag_moves() -> None:
    build = "\n".join(step_scripts("build"))
    assert 'python tools/changelog.py check --version "${version}"' in build
    assert 'python tools/changelog.py notes "${version}" > notes/release-notes.md' in build
    release = "\n".join(step_scripts("github-release"))
    assert "gh release create" in release and "--notes-file notes/release-notes.md" in release and "--verify-tag" in release
    assert RELEASE["jobs"]["github-release"]["needs"] == "publish", "a GitHub release only for what reached PyPI"
    assert RELEASE["jobs"]["github-release"]["permissions"] == {"contents": "write"}
    tag = "\n".join(step_scripts("major-tag"))
    assert 'major="${TAG%%.*}"' in tag and "git/refs/tags/${major}" in tag
    assert all("timeout-minutes" in job for job in RELEASE["jobs"].values())
