"""The wheel carries the schemas and the package finds them once installed; pre-commit reads our hook."""

from __future__ import annotations

import subprocess
import sys
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
