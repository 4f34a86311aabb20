"""Shared fixtures: a writable copy of the example project, a CLI runner, and the real parts that
container and Slurm tests share for the whole session (a Podman engine, a registry with the test
images, a two-node Slurm cluster; see tests/support/engine.py and tests/support/slurm.py), and an
OpenAPI-checked stand-in Kubernetes API (tests/support/kubernetes_api.py)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import EXAMPLES
from support.engine import image_registry, podman_engine, tiny_image, torch_image  # noqa: F401 - session fixtures, documented there
from support.kubernetes_api import kubernetes_api  # noqa: F401 - a fixture, documented there
from support.slurm import slurm_cluster, slurm_cluster_session  # noqa: F401 - fixtures, documented there

from reprogate.cli import main

pytest_plugins = ("support.gate",)  # the GitHub stand-in's fixtures


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of examples/ that a test may change; its records all validate as copied."""
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


@pytest.fixture(scope="session")
def venv_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One venv-realizer cache for the whole run: the first test that realizes a lock file builds
    its venv (a minute), every later one with the same lock reuses it (seconds). uv installs from
    the local wheelhouse (tests/support/wheelhouse.py) through its own settings, so no rebuild
    test waits on an index; without one, from the indexes pip is configured with."""
    from support import require_tool, wheelhouse

    require_tool("uv")
    folder, why = wheelhouse.provide()
    with pytest.MonkeyPatch.context() as patch:
        if folder is not None:
            patch.setenv("UV_NO_INDEX", "1")
            patch.setenv("UV_FIND_LINKS", str(folder))
        else:
            print(f"\nno local wheelhouse ({why}): uv uses pip's indexes")
        yield tmp_path_factory.mktemp("reprogate-cache")


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """Run `reprogate ARGS` in-process, from a given folder."""

    def run(*args: str, cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    return run
