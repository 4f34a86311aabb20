"""Lock-file parsers on the files the real tools wrote (tests/fixtures/locks) and on conda files."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import REPO
from reprogate.lockfiles import LockFileError, format_for, parse_file

LOCKS = REPO / "tests" / "fixtures" / "locks"


@pytest.mark.parametrize("name", ["requirements.txt", "uv.lock", "poetry.lock", "Pipfile.lock"])
def test_real_tool_output_pins_six_and_packaging(name: str) -> None:
    before = {p.name: p for p in parse_file(LOCKS / "before" / name)}
    after = {p.name: p for p in parse_file(LOCKS / "after" / name)}
    assert before["six"].version == "1.16.0" and after["six"].version == "1.17.0"
    assert before["packaging"].version == after["packaging"].version == "24.2"
    assert before["six"].hashes and before["six"].hashes != after["six"].hashes


def test_dependency_groups_are_labelled() -> None:
    poetry = {p.name: p for p in parse_file(LOCKS / "before" / "poetry.lock")}
    uv = {p.name: p for p in parse_file(LOCKS / "before" / "uv.lock")}
    pipenv = {p.name: p for p in parse_file(LOCKS / "before" / "Pipfile.lock")}
    assert poetry["markupsafe"].group == "docs" and poetry["six"].group == ""
    assert uv["markupsafe"].group == "docs" and uv["six"].group == ""
    assert pipenv["markupsafe"].group == "develop"


def test_conda_environment_with_a_pip_section(tmp_path: Path) -> None:
    env = tmp_path / "environment.yml"
    env.write_text("name: train\nchannels: [conda-forge]\ndependencies:\n  - python=3.11\n  - conda-forge::numpy=1.26.4=py311h64a7726_0\n  - cudatoolkit>=11.8\n  - pip\n  - pip:\n      - torch==2.4.0\n")
    pins = {(p.name, p.manager): p for p in parse_file(env)}
    assert pins[("numpy", "conda")].version == "1.26.4"
    assert pins[("cudatoolkit", "conda")].version is None  # a range pins nothing
    assert pins[("torch", "pip")].version == "2.4.0" and pins[("torch", "pip")].group == "pip"


def test_conda_lock_packages_per_platform(tmp_path: Path) -> None:
    lock = tmp_path / "conda-lock.yml"
    lock.write_text(
        "version: 1\nmetadata: {platforms: [linux-64]}\npackage:\n"
        "  - {name: numpy, version: 1.26.4, manager: conda, platform: linux-64, category: main, hash: {md5: 0123456789abcdef0123456789abcdef}}\n"
        "  - {name: sphinx, version: 7.2.6, manager: pip, platform: linux-64, category: docs, hash: {sha256: abc}}\n"
    )
    pins = {p.name: p for p in parse_file(lock)}
    assert pins["numpy"].version == "1.26.4" and pins["numpy"].manager == "conda@linux-64" and pins["numpy"].hashes == {"md5:0123456789abcdef0123456789abcdef"}
    assert pins["sphinx"].group == "docs"


def test_formats_by_name_and_unreadable_files() -> None:
    assert format_for("requirements-dev.txt").FORMAT == "pip-requirements"
    assert format_for("sub/poetry.lock").FORMAT == "poetry"
    assert format_for("README.md") is None
    with pytest.raises(LockFileError):
        parse_file("uv.lock", "[[package]\nname = 'x'")
    with pytest.raises(LockFileError):
        parse_file("Pipfile.lock", "{not json")
