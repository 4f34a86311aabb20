"""Lock-file parsers on the files the real tools wrote (tests/fixtures/locks) and on conda files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    env.write_text(
        "name: train\nchannels: [conda-forge]\ndependencies:\n  - python=3.11\n  - conda-forge::numpy=1.26.4=py311h64a7726_0\n"
        "  - cudatoolkit>=11.8\n  - pip\n  - pip:\n      - torch==2.4.0\n"
    )
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


CORPUS = REPO / "tests" / "fixtures" / "detect-corpus"


def test_uv_groups_follow_what_reaches_a_package() -> None:
    """Megatron-LM's real uv.lock: networkx only through torch (main), emerging-optimizers through
    the `dev` extra and the no_pypi_wheels group, sphinx only through the docs group."""
    groups = {p.name: p.group for p in parse_file(CORPUS / "megatron-emerging-optimizers" / "after" / "uv.lock")}
    assert groups["networkx"] == "" and groups["torch"] == ""
    assert groups["emerging-optimizers"] == "dev,no-pypi-wheels"
    assert groups["sphinx"] == "docs"


def test_requirements_options_urls_and_ranges() -> None:
    from reprogate.lockfiles.requirements import read

    parsed = read(
        "--extra-index-url https://download.pytorch.org/whl/nightly/cu121\n-r base.txt\n-c constraints.txt\n"
        'triton>=3.0.0,<3.4.0 ; python_version >= "3.9"  # comment\n'
        "lightning @ git+https://github.com/Lightning-AI/lightning@71aed751f7f0ca8422ddca256e602099070f490b\n"
        "git+https://github.com/huggingface/transformers.git@abc#egg=transformers\n-e .\n"
        "numpy==1.26.4 \\\n    --hash=sha256:aaaa\n"
    )
    assert [(p.name, p.requirement, p.version) for p in parsed.packages] == [
        ("triton", 'triton<3.4.0,>=3.0.0; python_version >= "3.9"', None),
        ("lightning", "lightning @ git+https://github.com/Lightning-AI/lightning@71aed751f7f0ca8422ddca256e602099070f490b", None),
        ("transformers", "transformers @ git+https://github.com/huggingface/transformers.git@abc#egg=transformers", None),
        ("numpy", "numpy==1.26.4", "1.26.4"),
    ]
    assert [(o.label, o.value) for o in parsed.options] == [
        ("--extra-index-url", "https://download.pytorch.org/whl/nightly/cu121"),
        ("-r", "base.txt"),
        ("-c", "constraints.txt"),
        ("-e", "."),
    ]
    with pytest.raises(LockFileError, match="line 2"):
        read("six==1.16.0\nfoo==\n")


@pytest.mark.parametrize("path", ["requirements/cuda.txt", "server/requirements_cuda.txt", "requirements-dev.in", "docs/requirements/extra.txt"])
def test_any_file_named_for_requirements_is_one(path: str) -> None:
    assert format_for(path).FORMAT == "pip-requirements"


def _read_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """(read with the pip-compile fast paths, read by pip-requirements-parser and Requirement
    alone): each the packages and options, or the words of the LockFileError it raised."""
    from reprogate.lockfiles import requirements

    def read() -> Any:
        requirements._line.cache_clear()
        try:
            parsed = requirements.read(text)
        except LockFileError as exc:
            return str(exc)
        return sorted((p.name, repr(p.version), sorted(p.hashes), p.requirement) for p in parsed.packages), parsed.options

    fast = read()
    with monkeypatch.context() as patched:
        patched.setattr(requirements, "pip_compile_lines", lambda text: None)
        patched.setattr(requirements, "_pinned", lambda args, words: None)
        slow = read()
    requirements._line.cache_clear()
    return fast, slow


def test_the_pip_compile_fast_path_reads_every_requirements_fixture_as_pip_requirements_parser_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.lockfiles import requirements

    files = sorted({*REPO.glob("tests/fixtures/**/*requirements*.txt"), *REPO.glob("tests/fixtures/**/requirements/*.txt")})
    fast_joined = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        fast, slow = _read_both_ways(text, monkeypatch)
        assert fast == slow, path
        fast_joined += requirements.pip_compile_lines(text) is not None
    assert len(files) > 15 and fast_joined > 10  # the fast joining is taken by most of them, and agrees


@pytest.mark.parametrize(
    "text",
    [
        "torch==2.4.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via -r requirements.in\n",
        "torch==2.4.0 \\\r\n    --hash=sha256:aa\r\n",
        "torch==2.4.0 \\\n# a comment ends the continuation\nnumpy==1.26.4\n",
        "# a comment \\\nnumpy==1.26.4\n",
        "torch==2.4.0  # inline comment\n",
        "torch==2.4.0 \\\\\nnumpy==1.0\n",
        "\\torch==2.4.0\n",
        "torch==2.4.0 \\\n\nnumpy==1.26.4 \\",
        "--index-url https://download.pytorch.org/whl/cu121\ntorch==2.4.0+cu121\n-e .\n",
        "Torch_Audio.X==2.4.0\nfoo-==1.0\nfoo===1.0\nfoo==1.0.*\nfoo==1.0==2\nfoo[bar]==1.0\nfoo==1.0;python_version<'3.12'\n",
        "foo == 1.0\nfoo>=1,<2\nfoo==1.0 --hash=sha256:aa --no-binary :all:\n",
    ],
)
def test_the_pip_compile_fast_path_agrees_on_the_edges_of_its_shape(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, slow = _read_both_ways(text, monkeypatch)
    assert fast == slow


def test_pep_508_names_are_told_apart_as_packaging_tells_them() -> None:
    from itertools import product

    from packaging.utils import InvalidName, canonicalize_name

    from reprogate.lockfiles.requirements import _NAME

    for length in range(1, 5):
        for letters in product("aZ9._-+ !", repeat=length):
            name = "".join(letters)
            try:
                canonicalize_name(name, validate=True)
                valid = True
            except InvalidName:
                valid = False
            assert bool(_NAME.fullmatch(name)) is valid, name
