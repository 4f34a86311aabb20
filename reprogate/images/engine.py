"""The one way reprogate connects to a container engine: Docker, or Podman's Docker-compatible API.

Connecting asks the engine's `/_ping`, which answers in milliseconds with the API version it
speaks (`Api-Version`) and what it is (`Server: Docker/27.3.1 (linux)`, `Libpod/4.3.1 (linux)`);
the client then speaks the older of that version and the docker package's own, as the Docker CLI
negotiates. The docker package's own negotiation (`version="auto"`) and `client.version()` call
`/version` instead, which Podman answers only after gathering host facts (0.6-0.7 s a call,
measured on Podman 4.3): a rebuild paid that twice before its first container started.

The engine is DOCKER_HOST (or the default socket); `docker` is the `reprogate[docker]` extra.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from reprogate.core.errors import InfrastructureError

PRODUCTS = {"libpod": "Podman Engine", "docker": "Docker Engine"}  # the Server header's product -> what users call it
WHERE_HINT = "start Docker or `podman system service`, and point DOCKER_HOST at its socket"


@dataclass(frozen=True)
class Engine:
    """A client that has answered a ping, and what answered."""

    client: Any  # docker.DockerClient, speaking `api_version`
    name: str  # "Podman Engine 4.3.1", "Docker Engine 27.3.1"
    api_version: str
    where: str  # DOCKER_HOST, or the default socket


def where() -> str:
    return os.environ.get("DOCKER_HOST") or "the default Docker socket (set DOCKER_HOST for Podman: unix:///run/podman/podman.sock)"


def connect(timeout: int) -> Engine:
    """The engine at DOCKER_HOST, pinged; InfrastructureError when there is none (or no SDK).

    `timeout` is whole seconds: the SDK's clients take an int."""
    try:
        import docker
        import docker.constants  # a submodule: `import docker` loads it today, but does not promise to
    except ImportError:
        raise InfrastructureError("talking to a container engine needs the docker package: pip install 'reprogate[docker]'") from None
    ours = str(docker.constants.DEFAULT_DOCKER_API_VERSION)
    try:
        client = docker.from_env(version=ours, timeout=timeout)
        answer = client.api.get(f"{client.api.base_url}/_ping", timeout=timeout)
        answer.raise_for_status()
    except Exception as exc:  # noqa: BLE001 - the SDK and requests raise several kinds for an absent engine
        raise InfrastructureError(f"no container engine answers at {where()} ({type(exc).__name__})", hint=WHERE_HINT) from None
    theirs = str(answer.headers.get("Api-Version") or "")
    version = older(ours, theirs)
    if version != ours:
        client = docker.from_env(version=version, timeout=timeout)
    return Engine(client, engine_name(answer.headers.get("Server") or "", answer.headers.get("Libpod-Api-Version"), version), version, where())


def older(ours: str, theirs: str) -> str:
    """The older of two API versions ("1.41"); ours when theirs is not one."""
    try:
        return theirs if tuple(map(int, theirs.split("."))) < tuple(map(int, ours.split("."))) else ours
    except ValueError:
        return ours


def engine_name(server: str, libpod: str | None, api_version: str) -> str:
    """'Podman Engine 4.3.1' from `Libpod/4.3.1 (linux)`; the API version when the header says nothing."""
    product, _, rest = server.partition("/")
    release = (rest.split() or [""])[0] or (libpod or "")
    if not product:
        return f"container engine (API {api_version})"
    return f"{PRODUCTS.get(product.strip().lower(), product.strip())} {release}".strip()
