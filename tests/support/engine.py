"""A real container engine for tests: Podman serving the Docker Engine API on a private socket,
and the locally built test images, pushed to a real registry and pulled back by digest.

Fixtures (session-scoped, registered in tests/conftest.py; each skips outside CI when a tool is
missing, and fails under CI=true):

``podman_engine`` -> :class:`Engine`
    ``podman system service`` on ``unix://<tmp>/podman.sock`` with its own storage (graph root,
    run root, tmp dir) under a temporary folder, so it shares nothing with other Podman users on
    the machine. ``engine.docker_host`` is the value for ``DOCKER_HOST``; ``engine.client`` is a
    ``docker.DockerClient`` on it; ``engine.env`` is the environment for a subprocess that
    should talk to it (``DOCKER_HOST`` plus the ``CONTAINERS_*`` files, so the ``podman`` CLI sees
    the same storage — ``engine.podman("run", ...)`` does that for you). Plain-HTTP registries on
    127.0.0.1 and localhost are trusted; short names resolve nowhere (no docker.io lookups that
    would hang without internet). Containers run with runc and cgroupfs and no default ulimits:
    crun and Podman's default ulimits are refused by the test sandbox. The network backend is CNI
    (Debian's containernetworking-plugins), whatever else is installed.

``image_registry`` -> :class:`support.registry.Registry`
    One docker-registry on 127.0.0.1 for the session (``.host`` is ``127.0.0.1:PORT``).

``tiny_image`` / ``torch_image`` -> :class:`TestImage`
    The image built by tests/support/build_test_image.py (cached under .ci/cache/test-images, or
    $REPROGATE_TEST_IMAGE_CACHE; `.ci/run` builds it, a developer's first session builds it in
    ~2-4 min), copied into ``image_registry`` with skopeo and pulled by digest through the engine
    API. The engine mounts each image's pre-extracted store read-only, so that pull fetches the
    manifest from the registry and writes no layer (~2 s instead of ~30 s for torch, and nothing
    to delete at teardown). ``image.reference`` is ``127.0.0.1:PORT/reprogate-test/
    <variant>@sha256:...``; ``image.digest`` the manifest digest the registry serves;
    ``image.image_id`` what the engine reports as the image's ID; ``image.python`` the interpreter
    on the image's PATH (``/opt/venv/bin/python``). Both have /bin/sh (dash) and a few coreutils.
    ``tiny`` holds Python + pyyaml (~90 MB); ``torch`` adds torch 2.13.0 (CPU) and numpy (~0.9 GB;
    ``import torch`` alone takes 3-10 s in a container on the 2-core test machines, so use
    ``tiny`` wherever torch is not the point).

Run a container to its end, bounded (``run_to_end``: detached, polled, logs read once it ended —
an attached ``containers.run`` can wait forever when Podman 4.3 leaves a finished container
"stopped" without closing its log stream)::

    out = run_to_end(podman_engine, torch_image.reference, ["python", "-c", "..."],
          environment={"A": "1"}, volumes={str(work): {"bind": "/work", "mode": "rw"}},
          working_dir="/work")

A container gets only the image's environment (PATH, VIRTUAL_ENV, LANG), what ``environment``
passes and Podman's HOSTNAME/HOME/TERM/container: nothing from the host's environment. The
default network gives each container its own loopback (gloo on 127.0.0.1 works);
``network_mode="host"`` shares the host's.

Also:
    - Code under test that calls ``docker.from_env()`` in-process: ``monkeypatch.setenv("DOCKER_HOST",
      podman_engine.docker_host)``; a CLI subprocess: ``env={**os.environ, **podman_engine.env}``.
    - A test that breaks its registry (stops it, deletes a manifest) starts its own with
      ``support.registry.start_registry(tmp_path / "reg")`` and puts an image there with
      ``provide_image(podman_engine, registry, "tiny")``; the session's ``image_registry`` is shared.
    - Images a test builds or pulls live in the session's engine storage only; remove them if a
      later test must not see them. ``podman_engine`` makes sure both test images are built (or
      cached) before it starts, because their stores are part of the engine's storage settings:
      the first session on a fresh checkout therefore waits for the build (``.ci/run`` builds them
      in the background beforehand).
    - Slurm jobs that start containers: ProctrackType=proctrack/linuxproc does not track processes
      under Podman's conmon, so ``scancel`` does not stop a container; remove it through the API.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support import REPO, build_test_image, daemons, require_tool
from support.build_test_image import BuiltImage
from support.registry import Registry, start_registry

CONTAINERS_CONF = """\
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
tmp_dir = "{tmp}"
[network]
network_backend = "cni"
"""
REGISTRIES_CONF = """\
unqualified-search-registries = []
[[registry]]
location = "127.0.0.1"
insecure = true
[[registry]]
location = "localhost"
insecure = true
"""
STORAGE_CONF = """\
[storage]
driver = "overlay"
graphroot = "{root}"
runroot = "{runroot}"
[storage.options]
additionalimagestores = {stores}
"""
VARIANTS = ("tiny", "torch")
IMAGE_CACHE = Path(os.environ.get("REPROGATE_TEST_IMAGE_CACHE", REPO / ".ci" / "cache" / "test-images"))


@dataclass
class Engine:
    """A running Podman API service; see the module docstring for how tests use it."""

    folder: Path
    socket: Path
    process: Any
    env: dict[str, str]
    _client: Any = field(default=None, repr=False)

    @property
    def docker_host(self) -> str:
        """``unix:///.../podman.sock``: the value for DOCKER_HOST."""
        return f"unix://{self.socket}"

    @property
    def client(self) -> Any:
        """A ``docker.DockerClient`` on this engine (created once)."""
        if self._client is None:
            import docker

            self._client = docker.DockerClient(base_url=self.docker_host, timeout=120)
        return self._client

    def podman(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """The ``podman`` CLI on this engine's storage (for comparisons with a bare ``podman run``)."""
        return subprocess.run(["podman", *args], env={**os.environ, **self.env}, capture_output=True, text=True, check=check, timeout=timeout)

    def stop(self) -> None:
        """Remove every container, stop the service, delete the storage. Idempotent."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.socket.exists() or self.process.poll() is None:
            self.podman("rm", "--all", "--force", "--time", "0", check=False, timeout=60)
        daemons.stop(self.process)
        # Not `podman system reset`: it also deletes networks, which live in a folder all Podman
        # instances on the machine share. Unmount what overlay may still hold, then delete.
        daemons.unmount_under(self.folder)
        shutil.rmtree(self.folder, ignore_errors=True)


def run_to_end(engine: Engine, image: str, command: list[str], timeout: float = 300.0, **options: Any) -> str:
    """Run a container detached and return its standard output once it has ended (exit 0 asserted).

    Polled with a deadline, ended when "exited"/"dead" or "stopped" with a finish time (what
    Podman 4.3 reports when its cleanup did not run), then removed."""
    container = engine.client.containers.run(image, command, detach=True, **options)
    try:
        deadline = time.monotonic() + timeout
        while True:
            container.reload()
            state = container.attrs.get("State") or {}
            finished = state.get("Running") is False and not str(state.get("FinishedAt") or "0001").startswith("0001")
            if state.get("Status") in ("exited", "dead") or (state.get("Status") == "stopped" and finished):
                break
            assert time.monotonic() < deadline, f"container {container.short_id} still {state.get('Status')} after {timeout:.0f} s"
            time.sleep(0.2)
        output = container.logs(stdout=True, stderr=False).decode()
        assert state.get("ExitCode") == 0, container.logs(stdout=True, stderr=True).decode()[-2000:]
        return output
    finally:
        container.remove(force=True)


def start_engine(folder: Path, image_stores: Sequence[str] = ()) -> Engine:
    """Start ``podman system service`` with private storage under `folder`; wait until it answers.

    `image_stores` are read-only containers-storage folders (the test images' ``store``): their
    layers are found in place, so pulling those images writes nothing into this engine's storage."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tmp").mkdir(exist_ok=True)
    (folder / "containers.conf").write_text(CONTAINERS_CONF.format(tmp=folder / "tmp"))
    (folder / "registries.conf").write_text(REGISTRIES_CONF)
    stores = "[" + ", ".join(json.dumps(str(store)) for store in image_stores) + "]"
    (folder / "storage.conf").write_text(STORAGE_CONF.format(root=folder / "storage", runroot=folder / "run", stores=stores))
    sock = folder / "podman.sock"
    env = {
        "CONTAINERS_CONF": str(folder / "containers.conf"),
        "CONTAINERS_REGISTRIES_CONF": str(folder / "registries.conf"),
        "CONTAINERS_STORAGE_CONF": str(folder / "storage.conf"),
        "DOCKER_HOST": f"unix://{sock}",
    }
    log = folder / "service.log"
    process = daemons.start(["podman", "system", "service", "--time=0", f"unix://{sock}"], log, env={**os.environ, **env})
    engine = Engine(folder, sock, process, env)

    def answers() -> bool:
        if not sock.exists():
            return False
        try:
            return bool(engine.client.ping())
        except Exception:  # noqa: BLE001 - any failure here means "not yet"
            return False

    try:
        daemons.wait_until(answers, 30, "podman system service", log, process)
    except RuntimeError:
        engine.stop()
        raise
    return engine


@dataclass(frozen=True)
class TestImage:
    """A test image present in the registry and in the engine; see the module docstring."""

    __test__ = False  # not a pytest test class

    reference: str
    repository: str
    digest: str
    image_id: str
    python: str
    python_version: str
    packages: dict[str, str]
    variant: str


def build_cached(variant: str) -> BuiltImage:
    """The cached build of `variant`; built now when the cache lacks it, or waited for when
    another process (`.ci/run`'s background build) is building it."""
    return build_test_image.build(variant, IMAGE_CACHE)


def provide_image(engine: Engine, registry: Registry, variant: str) -> TestImage:
    """Push the cached `variant` to `registry` with skopeo, pull it by digest through the engine API."""
    built = build_cached(variant)
    repository = f"{registry.host}/{built.repository}"
    subprocess.run(
        ["skopeo", "copy", "-q", "--dest-tls-verify=false", f"oci:{built.layout}:{built.tag}", f"docker://{repository}:{built.tag}"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    pulled = pull(engine, repository, built.manifest_digest)
    return TestImage(
        f"{repository}@{built.manifest_digest}", repository, built.manifest_digest, pulled, built.python, built.python_version, dict(built.packages), variant
    )


def pull(engine: Engine, repository: str, digest: str) -> str:
    """Pull ``repository@digest`` through the Docker API, raising on any error the stream reports
    (``images.pull`` swallows them); returns the engine's image ID."""
    for event in engine.client.api.pull(repository, tag=digest, stream=True, decode=True):
        if "error" in event:
            raise RuntimeError(f"pull {repository}@{digest}: {event['error']}")
    return engine.client.images.get(f"{repository}@{digest}").id


@pytest.fixture(scope="session")
def podman_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """Podman serving the Docker API for the session (module docstring)."""
    for tool in ("podman", "runc", "conmon", "skopeo"):
        require_tool(tool)
    # Built (or found in the cache) before the engine starts, so it can mount their stores.
    stores = [built.store for built in map(build_cached, VARIANTS) if built.store]
    engine = start_engine(tmp_path_factory.mktemp("engine"), stores)
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def image_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A docker-registry on 127.0.0.1 for the session."""
    require_tool("docker-registry")
    require_tool("skopeo")
    registry = start_registry(tmp_path_factory.mktemp("image-registry"))
    yield registry
    registry.stop()


@pytest.fixture(scope="session")
def tiny_image(podman_engine: Engine, image_registry: Registry) -> TestImage:
    """Python + pyyaml image, in the registry and pulled by digest into the engine."""
    return provide_image(podman_engine, image_registry, "tiny")


@pytest.fixture(scope="session")
def torch_image(podman_engine: Engine, image_registry: Registry) -> TestImage:
    """Python + torch (CPU) + numpy + pyyaml image, in the registry and pulled by digest into the engine."""
    return provide_image(podman_engine, image_registry, "torch")
