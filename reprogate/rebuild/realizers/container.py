"""The record's image, run through the Docker Engine API (Docker, or Podman's compatible socket).

- `reference`: pull the image by the digest the record pins, then ask the engine which image it
  holds: the pinned digest must be among its RepoDigests. A digest the registry no longer has
  fails the digest stage (exit 1); a registry or engine that cannot be reached is exit 3.
- `candidate`: when the record names a build recipe (source.build_recipe, a Dockerfile), build
  it from the checked-out tree — the pull request's Dockerfile — and run the image the engine
  built, by its ID; a failed build fails the stage with the build log's tail (redacted). Without
  a recipe, the image the tree's record pins is pulled, as for `reference`. `--image REF` runs
  that image instead, still verified by the engine.

Ranks run as one container each, on the host network (gloo and NCCL rendezvous on loopback or
the node's interfaces), with the work folder mounted at the same path and the injected reprogate
runtime mounted read-only; they get exactly the environment the rebuild hands them, GPUs through
device requests when the record has GPUs, and no Docker credentials or host variables.
The engine is DOCKER_HOST (or the default socket), connected through images/engine.py.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.redact import redact
from reprogate.core.shapes import table
from reprogate.images.engine import connect
from reprogate.rebuild.realizers.base import Defect, Identity, Isolation, RankProcess, RankStart, RealizeFailed, RealizeRequest

NAME = "container"
LABEL = "io.reprogate.rebuild"
ENGINE_TIMEOUT = 60


@dataclass(frozen=True)
class ContainerIdentity(Identity):
    """The image the ranks ran in and how the engine vouched for it."""

    engine: str  # the engine that answered (images/engine.py)
    docker_host: str
    image_source: str  # where the image came from, in words: the record's pinned digest, --image, a build
    image_id: str
    repo_digests: tuple[str, ...] | None = None  # what the engine lists for a pulled image
    digest_verified_by_engine: str | None = None  # the record's pinned digest, found among them
    build_seconds: float | None = None
    built_from: str | None = None  # the checkout's build recipe, for a candidate image built here

    def summary(self) -> str:
        verified = f", pinned digest {self.digest_verified_by_engine} confirmed by the engine" if self.digest_verified_by_engine else ""
        return f"image {self.image_id[:19]} ({self.image_source}; {self.engine})" + verified

    def claim_words(self, which: str) -> str:
        if self.built_from:
            source = f"built from {self.built_from}"
        elif self.digest_verified_by_engine:
            source = f"pinned digest {self.digest_verified_by_engine} confirmed by the engine"
        else:
            source = self.image_source
        return f"the {which} environment: image {self.image_id[:19] or '?'} ({source})"

    def image_words(self) -> str:
        if self.built_from:
            return f"{self.image_id or '?'} (built from {self.built_from})"
        if self.digest_verified_by_engine:
            return f"{self.digest_verified_by_engine} (confirmed by the engine)"
        return self.image_id or "?"

    def missing_module(self, module: str) -> Defect:
        package = module.split(".")[0]
        words = f"the image cannot import {module}: the image the record pins lacks it, not the runner; rebuild the image with {package} installed"
        return Defect("image", words)

    def amend_record(self, data: dict[str, Any]) -> None:
        """The image that ran; one built here has no registry digest to claim."""
        box = dict(data.get("container") or {}) if isinstance(data.get("container"), dict) else {}
        box.pop("used", None)
        box["image_id"] = self.image_id
        if self.built_from:
            box["built_from"] = self.built_from
            box.pop("digest", None)
            box.pop("platform_digest", None)
        box.setdefault("registry", "localhost")
        box.setdefault("repository", "reprogate-candidate")
        data["container"] = box


@dataclass(frozen=True)
class Pulled:
    """A pulled image: its ID, what the engine lists for it and the pinned digest found among them."""

    image_id: str
    repo_digests: tuple[str, ...]
    verified: str | None


class ContainerProcess:
    """One rank's container; its output is copied into the rank's log when it ends."""

    def __init__(self, container: Any, log: Path) -> None:
        self.container = container
        self.log = log
        self.code: int | None = None
        self._last = 0.0

    def poll(self) -> int | None:
        if self.code is not None:
            return self.code
        now = time.monotonic()
        if now - self._last < 0.2:  # an API call per poll: keep it cheap
            return None
        self._last = now
        try:
            self.container.reload()
        except Exception:  # noqa: BLE001 - removed under us: treat as killed
            self.code = 137
            return self.code
        state = self.container.attrs.get("State") or {}
        # Podman 4.3 can leave a finished container "stopped" (not "exited") when its cleanup did
        # not run: not running with a finish time is ended too, or the poll would wait forever
        finished = state.get("Running") is False and str(state.get("FinishedAt") or "0001").startswith("0001") is False  # Go's zero time: never finished
        if state.get("Status") in ("exited", "dead") or (state.get("Status") == "stopped" and finished):
            self.code = int(state.get("ExitCode", 1))
            self._save_log()
        return self.code

    def kill(self) -> None:
        if self.code is None:
            try:
                self.container.kill()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self.code = 137
            self._save_log()

    def _save_log(self) -> None:
        try:
            data = self.container.logs(stdout=True, stderr=True)
        except Exception:  # noqa: BLE001
            data = b""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_bytes(data)

    @property
    def image_id(self) -> str:
        return str(self.container.attrs.get("Image", ""))


class ContainerEnvironment:
    kind = NAME
    # What the engine CLI of `command` needs on a node: its socket, its config (registry
    # credentials stay in the CLI's own files, never in the container) and its runtime folder.
    command_environment: tuple[str, ...] = (
        "HOME",
        "XDG_RUNTIME_DIR",
        "DOCKER_HOST",
        "DOCKER_CONFIG",
        "DOCKER_CERT_PATH",
        "DOCKER_TLS_VERIFY",
        "CONTAINER_HOST",
        "CONTAINERS_CONF",
        "CONTAINERS_STORAGE_CONF",
        "REPROGATE_CONTAINER_CLI",
    )

    def __init__(
        self, client: Any, image_id: str, request: RealizeRequest, identity: ContainerIdentity, mounts: dict[str, str], gpus: bool, reference: str | None = None
    ) -> None:
        self.client = client
        self.image_id = image_id
        self.image_reference: str = reference or image_id  # what another node's engine can pull: name@digest; an image built here only by ID
        self.python = "python"  # the image's own, found on its PATH
        self.identity = identity
        self.mounts = mounts  # host path -> mode; mounted at the same path inside
        self.gpus = gpus
        self.started: list[ContainerProcess] = []
        self.run_label = f"{os.getpid()}-{int(time.time())}"

    def spawn(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path, network: str = "none") -> ContainerProcess:
        """One rank in a container of its own; `network` "none" (loopback only), or another
        container's ("container:ID") for the ranks of one node to meet over the same loopback."""
        import docker

        inside = {k: v for k, v in env.items() if k not in ("PATH", "HOME", "VIRTUAL_ENV")}  # the image's own
        requests = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if self.gpus else None
        try:
            container = self.client.containers.run(
                self.image_id,
                command=list(argv),
                environment=inside,
                working_dir=str(cwd),
                volumes={host: {"bind": host, "mode": mode} for host, mode in self.mounts.items()},
                network_mode=network,
                detach=True,
                labels={LABEL: self.run_label},
                device_requests=requests,
            )
        except Exception as exc:  # noqa: BLE001
            raise InfrastructureError(f"the engine could not start a container from {self.image_id[:19]}: {redact(str(exc))[:300]}") from None
        process = ContainerProcess(container, log)
        self.started.append(process)
        return process

    def spawn_ranks(self, starts: Sequence[RankStart], cwd: Path) -> dict[int, RankProcess]:
        """The ranks of one node: the first in a network namespace of its own with loopback only,
        the others in the first one's, so they meet there and reach nothing else (no engine on a
        TCP port, no metadata address, no abstract socket of the host)."""
        started: dict[int, RankProcess] = {}
        first: ContainerProcess | None = None
        for start in starts:
            network = "none" if first is None else f"container:{first.container.id}"
            process = self.spawn(list(start.argv), start.env, cwd, start.log, network)
            first = first or process
            started[start.rank] = process
        return started

    def command(self, argv: list[str], env: Mapping[str, str], cwd: Path, inherit: Sequence[str] = ()) -> list[str]:
        """The same container as an engine command line, for a scheduler running it on a node:
        the image by its pinned digest (another node's engine pulls it; an image built here is
        named by ID and must be on that engine already), labelled so `close` finds it, the
        per-task variables passed through (`-e NAME` takes the CLI's value)."""
        cli = os.environ.get("REPROGATE_CONTAINER_CLI", "docker")
        line = [cli, "run", "--rm", "--network", "host", "-w", str(cwd), "--label", f"{LABEL}={self.run_label}"]
        for host, mode in self.mounts.items():
            line += ["-v", f"{host}:{host}:{mode}"]
        for key, value in env.items():
            if key not in ("PATH", "HOME", "VIRTUAL_ENV") and key not in inherit:
                line += ["-e", f"{key}={value}"]
        for key in inherit:
            line += ["-e", key]
        if self.gpus:
            line += ["--gpus", "all"]
        return [*line, self.image_reference, *argv]

    def close(self) -> None:
        for process in self.started:
            try:
                process.kill()
                process.container.remove(force=True)
            except Exception:  # noqa: BLE001 - best effort: the label finds leftovers
                pass
        try:  # containers a scheduler started from `command` on this engine: a job's end does not stop them
            for container in self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.run_label}"}):
                container.remove(force=True)
        except Exception:  # noqa: BLE001 - best effort
            pass


class ContainerRealizer:
    name = NAME
    isolation = Isolation(local_ranks_sandboxed=False, own="container")  # the engine's namespaces: no bubblewrap around them

    def unrealized(self, which: str) -> str:
        return f"the {which} environment: an image that could not be had"

    def realize(self, request: RealizeRequest) -> ContainerEnvironment:
        connected = connect(ENGINE_TIMEOUT)
        client = connected.client
        container, source = request.record.container, request.record.source
        recipe = source.build_recipe if source is not None else None
        engine, docker_host = connected.name, os.environ.get("DOCKER_HOST", "default socket")
        log = request.workdir / "logs" / "realize-container.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        reference = None
        if request.image:
            pulled = self._pull(client, request.image, None, log)
            identity = ContainerIdentity(engine, docker_host, f"--image {request.image}", pulled.image_id, pulled.repo_digests, pulled.verified)
            reference = request.image if "@sha256:" in request.image else None
        elif request.environment == "candidate" and recipe is not None and recipe.path:
            image_id, seconds = self._build(client, request, recipe.path, log)
            built = f"built from {recipe.path} in this checkout"
            identity = ContainerIdentity(engine, docker_host, built, image_id, build_seconds=seconds, built_from=recipe.path)
        else:
            if container is None or not container.digest:
                raise UsageError("the record declares a container without a digest to pull")
            name = f"{container.registry}/{container.repository}"
            reference = f"{name}@{container.digest}"
            pulled = self._pull(client, reference, container.digest, log)
            identity = ContainerIdentity(engine, docker_host, "the record's pinned digest", pulled.image_id, pulled.repo_digests, pulled.verified)
        devices = request.record.devices
        gpus = bool(devices.gpus) if devices is not None else False
        mounts = {str(request.workdir.resolve()): "rw", str(request.runtime.resolve()): "ro"}
        return ContainerEnvironment(client, identity.image_id, request, identity, mounts, gpus, reference)

    @staticmethod
    def _pull(client: Any, reference: str, pinned: str | None, log: Path) -> Pulled:
        import docker

        name, _, digest = reference.partition("@")
        repository, tag = (name, digest) if digest else (name.rsplit(":", 1)[0], name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else "latest")
        messages: list[str] = []
        errors: list[str] = []
        try:
            for event in client.api.pull(repository, tag=tag, stream=True, decode=True):
                if isinstance(event, dict):
                    detail = table(event, "errorDetail")
                    error = event.get("error") or detail.get("message")
                    if error:
                        errors.append(str(error))
                        break
                    messages.append(str(event.get("status") or ""))
        except docker.errors.NotFound as exc:
            raise RealizeFailed(
                f"{reference}: the registry does not have it (deleted or garbage-collected): {redact(str(exc.explanation or exc))[:300]}"
            ) from None
        except docker.errors.APIError as exc:
            raise _pull_error(reference, str(exc.explanation or exc)) from None
        except Exception as exc:  # noqa: BLE001 - connection to the engine broke
            raise InfrastructureError(f"pulling {reference}: {type(exc).__name__}: {redact(str(exc))[:200]}") from None
        log.write_text("\n".join(redact(m) for m in messages + errors if m) + "\n", encoding="utf-8")
        if errors:
            raise _pull_error(reference, errors[-1])
        try:
            image = client.images.get(reference)
        except Exception as exc:  # noqa: BLE001
            raise RealizeFailed(f"{reference}: pulled, but the engine does not list it ({type(exc).__name__})") from None
        repo_digests = [str(d) for d in image.attrs.get("RepoDigests") or []]
        if pinned and not any(d.endswith(pinned) for d in repo_digests):
            listed = repo_digests or "[]"
            raise RealizeFailed(f"the engine holds {image.id[:19]} for {reference}, whose repo digests {listed} do not include the pinned {pinned}")
        return Pulled(str(image.id), tuple(repo_digests), pinned or None)

    @staticmethod
    def _build(client: Any, request: RealizeRequest, recipe: str, log: Path) -> tuple[str, float]:
        """The candidate image built from the checkout's `recipe`: its ID and how long the build took."""
        import docker

        root = request.root.resolve()
        dockerfile = (request.root / recipe).resolve()
        if root not in dockerfile.parents:  # `../…`, an absolute path or a link: the pull request's recipe stays in its checkout
            raise UsageError(f"{recipe}: the build recipe resolves outside the checkout ({root}); a candidate image is built from the checkout only")
        if not dockerfile.is_file():
            raise UsageError(f"{recipe}: the build recipe the record names is not in this checkout")
        context = dockerfile.parent  # inside the checkout: the engine gets that folder as the context, and no host path or socket
        lines: list[str] = []
        image_id = ""
        started = time.monotonic()
        try:
            for event in client.api.build(
                path=str(context), dockerfile=dockerfile.name, rm=True, forcerm=True, decode=True, pull=False, labels={LABEL: "candidate"}
            ):
                if not isinstance(event, dict):
                    continue
                if event.get("stream"):
                    lines.extend(str(event["stream"]).splitlines())
                if event.get("error"):
                    lines.append(str(event["error"]))
                    tail = redact("\n".join(lines[-20:]))
                    log.write_text(redact("\n".join(lines)) + "\n", encoding="utf-8")
                    raise RealizeFailed(f"building {recipe} failed: {redact(str(event['error']))[:300]}", log_tail=tail)
                aux = event.get("aux")
                if isinstance(aux, dict) and aux.get("ID"):
                    image_id = str(aux["ID"])
        except docker.errors.BuildError as exc:
            raise RealizeFailed(f"building {recipe} failed: {redact(str(exc))[:300]}", log_tail=redact("\n".join(lines[-20:]))) from None
        except docker.errors.APIError as exc:
            raise RealizeFailed(f"building {recipe} failed: {redact(str(exc.explanation or exc))[:300]}", log_tail=redact("\n".join(lines[-20:]))) from None
        log.write_text(redact("\n".join(lines)) + "\n", encoding="utf-8")
        if not image_id:  # older engines report only "Successfully built <id>"
            found = re.findall(r"Successfully built ([0-9a-f]{12,64})", "\n".join(lines)) or re.findall(r"^([0-9a-f]{64})$", "\n".join(lines), re.M)
            if not found:
                raise RealizeFailed(f"building {recipe}: the engine did not report the image it built", log_tail=redact("\n".join(lines[-20:])))
            image_id = found[-1]
        image = client.images.get(image_id)
        return str(image.id), round(time.monotonic() - started, 3)


def _pull_error(reference: str, message: str) -> Exception:
    text = redact(message)[:300]
    lowered = text.lower()
    if any(word in lowered for word in ("connection refused", "no such host", "i/o timeout", "tls handshake", "dial tcp", "timeout")):
        return InfrastructureError(f"pulling {reference}: the registry does not answer ({text})")
    if any(word in lowered for word in ("manifest unknown", "not found", "does not exist", "name unknown", "manifest_unknown")):
        return RealizeFailed(
            f"{reference}: the registry no longer has this image ({text})",
            hint="the pinned digest was deleted or garbage-collected: exact reproduction is no longer possible; promote a new baseline",
        )
    return InfrastructureError(f"pulling {reference}: {text}")
