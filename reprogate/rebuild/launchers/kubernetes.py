"""Ranks on Kubernetes: an indexed Job (one pod per node) and a headless Service for rendezvous.

The rendering (`manifests`) is what `rebuild --launcher kubernetes --dry-run` writes:
- a headless Service (clusterIP None, publishNotReadyAddresses) named like the Job, so pod 0 of
  the Job is `<job>-0.<service>` in DNS before anything is ready: MASTER_ADDR;
- a batch/v1 Job with completionMode Indexed, completions = parallelism = the record's nodes,
  backoffLimit 0 (a failed rank fails the rebuild, it is not retried), activeDeadlineSeconds from
  the rebuild's limits; each pod runs the record's image by digest, asks for the record's GPUs
  per node (`nvidia.com/gpu`), mounts the work folder (a ReadWriteMany claim, at the same path
  the rebuild sees it) and starts ranks_per_node rank hosts: RANK = JOB_COMPLETION_INDEX x
  ranks_per_node + local rank, each with its output, placement and exit code in the work
  folder's logs, as the Slurm launcher's ranks leave them.

With a cluster (the `kubernetes` extra, KUBECONFIG or an in-cluster service account, and
REPROGATE_KUBERNETES_CLAIM naming the claim that holds the work folder), `start` creates both
through the Kubernetes API, follows the pods (phase, node, container state: an evicted or
OOM-killed pod is named with its rank), copies each pod's log into the logs folder and deletes
Job and Service on stop. REPROGATE_KUBERNETES_NAMESPACE picks the namespace (else the
kubeconfig context's, else `default`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.fileio import atomic_write, read_written_by_code
from reprogate.core.redact import redact
from reprogate.core.shapes import table
from reprogate.rebuild.launchers.base import Shape, record_shape
from reprogate.rebuild.launchers.rank_reports import parse_exit_code, parse_placement
from reprogate.rebuild.ranks import rank_variables
from reprogate.rebuild.realizers.base import Realized

SMALL_FILE_BYTES = 64 * 1024  # a rank's exit code or place file: one line

NAME = "kubernetes"
RENDEZVOUS_PORT = 29500  # a pod has its own network namespace: torchrun's default port is free in it
LABEL = "reprogate.io/rebuild"
HIDDEN = ("PATH", "HOME", "VIRTUAL_ENV")  # the image's own
VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
STATE_INTERVAL = 1.0
QUEUE_TIMEOUT = 3600.0

POD_SCRIPT = """\
# The ranks of one node of a reprogate rebuild (pod JOB_COMPLETION_INDEX of the indexed Job).
logs={logs}
node=$JOB_COMPLETION_INDEX
pids=""
local=0
while [ "$local" -lt {per_node} ]; do
  rank=$((node * {per_node} + local))
  (
    export RANK=$rank LOCAL_RANK=$local GROUP_RANK=$node NODE_RANK=$node
    printf '{{"rank": %s, "node": "%s", "pod": "%s", "node_rank": %s, "local_rank": %s}}\\n' "$rank" "$NODE_NAME" "$POD_NAME" "$node" "$local" \\
      > "$logs/rank$rank.place.tmp" && mv "$logs/rank$rank.place.tmp" "$logs/rank$rank.place"
    {command} > "$logs/rank$rank.log" 2>&1
    code=$?
    printf '%s\\n' "$code" > "$logs/rank$rank.exit.tmp" && mv "$logs/rank$rank.exit.tmp" "$logs/rank$rank.exit"
    exit "$code"
  ) &
  pids="$pids $!"
  local=$((local + 1))
done
status=0
for pid in $pids; do wait "$pid" || status=$?; done
exit "$status"
"""


def job_name(seed: str) -> str:
    """A DNS-1123 label for the Job and Service (the Job's pods are <name>-<index>)."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", seed.lower()).strip("-")[:40].strip("-") or "rebuild"
    return f"rg-{cleaned}"


def manifests(
    name: str, namespace: str, image: str, shape: Shape, argv: list[str], env: Mapping[str, str], cwd: Path, logs: Path, work: Path, claim: str
) -> list[dict[str, Any]]:
    """The Service and the indexed Job of a rebuild, as the Kubernetes API takes them."""
    labels = {LABEL: name, "app.kubernetes.io/managed-by": "reprogate"}
    master = f"{name}-0.{name}"
    variables = {k: v for k, v in env.items() if k not in HIDDEN and k not in VISIBILITY}
    variables.update(
        {"WORLD_SIZE": str(shape.world_size), "LOCAL_WORLD_SIZE": str(shape.ranks_per_node), "MASTER_ADDR": master, "MASTER_PORT": str(RENDEZVOUS_PORT)}
    )
    container_env: list[dict[str, Any]] = [{"name": k, "value": str(v)} for k, v in sorted(variables.items())]
    container_env += [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    script = POD_SCRIPT.format(logs=shlex.quote(str(logs)), per_node=shape.ranks_per_node, command=shlex.join(argv))
    container: dict[str, Any] = {
        "name": "ranks",
        "image": image,
        "command": ["sh", "-c", script],
        "workingDir": str(cwd),
        "env": container_env,
        "volumeMounts": [{"name": "work", "mountPath": str(work)}],
        "ports": [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}],
    }
    if shape.gpus_per_node:
        container["resources"] = {"limits": {"nvidia.com/gpu": shape.gpus_per_node}}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL: name},
            "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}],
        },
    }
    job_spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": shape.nodes,
        "parallelism": shape.nodes,
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "subdomain": name,
                "restartPolicy": "Never",
                "containers": [container],
                "volumes": [{"name": "work", "persistentVolumeClaim": {"claimName": claim}}],
            },
        },
    }
    if shape.time_limit:
        job_spec["activeDeadlineSeconds"] = int(shape.time_limit)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": job_spec}
    return [service, job]


def rendered(
    data: dict[str, Any], image: str | None, workdir: Path, world_size: int | None, time_limit: float | None, preflight_timeout: float
) -> list[dict[str, Any]]:
    """The manifests a rebuild of this record would submit, without realizing or running
    anything (`rebuild --dry-run`): the rank hosts' environment and folders as the preflight
    stage would make them under `workdir`, the claim's mount point."""

    shape = record_shape(data, world_size, time_limit)
    execution = table(data, "execution")
    env = rank_variables((execution or {}).get("env") or {}, workdir, workdir / ".reprogate" / "runtime", host={})
    backend = ((execution or {}).get("collective") or {}).get("backend") or ("nccl" if shape.gpus_per_node else "gloo")
    env.update({"REPROGATE_PREFLIGHT_BACKEND": str(backend), "REPROGATE_PREFLIGHT_TIMEOUT": str(preflight_timeout)})
    folder = workdir / "runs" / "preflight"
    job = table(data, "job")
    source = table(data, "source")
    cwd = workdir / str((job or {}).get("workdir") or (source or {}).get("path") or ".")
    namespace, claim = settings()
    name = job_name(str((data.get("metadata") or {}).get("name") or "rebuild"))
    argv = ["python", "-m", "reprogate.runtime.rank_host", str(folder / "control")]
    return manifests(name, namespace, image_of(data, image), shape, argv, env, cwd, folder / "logs", workdir, claim or "reprogate-work")


def image_of(data: dict[str, Any], override: str | None = None) -> str:
    """The image pods run: --image, else the record's by its pinned digest (never a tag)."""
    if override:
        return override
    box = table(data, "container")
    if not box or box.get("used") is False or not box.get("digest"):
        raise UsageError(
            "the kubernetes launcher runs the record's image by digest; the record pins no container digest",
            hint="declare container.registry/repository/digest, or pass --image",
        )
    return f"{box['registry']}/{box['repository']}@{box['digest']}"


def settings() -> tuple[str, str | None]:
    """(namespace, claim) for this cluster, from the environment."""
    return os.environ.get("REPROGATE_KUBERNETES_NAMESPACE") or _context_namespace() or "default", os.environ.get("REPROGATE_KUBERNETES_CLAIM")


def _context_namespace() -> str | None:
    try:
        from kubernetes import config
    except ImportError:
        return None
    try:
        _, current = config.list_kube_config_contexts(config_file=os.environ.get("KUBECONFIG"))
    except Exception:  # noqa: BLE001 - no kubeconfig: in-cluster or none
        return None
    namespace = (current or {}).get("context", {}).get("namespace")
    return str(namespace) if namespace is not None else None


def api() -> Any:
    """(core, batch) API clients from KUBECONFIG (or the pod's service account)."""
    try:
        from kubernetes import client, config
    except ImportError:
        raise InfrastructureError("the kubernetes launcher needs the kubernetes package: pip install 'reprogate[kubernetes]'") from None
    try:
        if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            config.load_incluster_config()
        else:
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))  # read now: the package reads KUBECONFIG once, at import
    except Exception as exc:  # noqa: BLE001 - the loaders raise several kinds for an absent or broken config
        raise UsageError(
            f"no Kubernetes cluster is configured ({type(exc).__name__}: {redact(str(exc))[:200]})",
            hint="set KUBECONFIG, or write the manifests with `reprogate rebuild --launcher kubernetes --dry-run`",
        ) from None
    return client.CoreV1Api(), client.BatchV1Api()


def _api_error(what: str, exc: Exception) -> InfrastructureError:
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None) or str(exc)
    try:
        body = json.loads(body).get("message", body)
    except (TypeError, ValueError, AttributeError):
        pass
    return InfrastructureError(f"Kubernetes API: {what} failed ({status or type(exc).__name__}): {redact(str(body))[:300]}")


@dataclass(frozen=True)
class PodState:
    """One pod of the Job as the API last listed it."""

    name: str
    phase: str  # Pending, Running, Succeeded, Failed, Unknown
    node: str | None  # the node it was scheduled on
    reason: str  # its trouble in words (_why), "" for none


class KubernetesGroup:
    """The pods of one rebuild's Job, as ranks."""

    def __init__(self, core: Any, batch: Any, name: str, namespace: str, shape: Shape, logs: Path) -> None:
        self.core, self.batch, self.name, self.namespace, self.shape, self.logs = core, batch, name, namespace, shape, logs
        self.pods: dict[int, PodState] = {}  # node index -> what the API last said of its pod
        self._checked = 0.0
        self._lost: dict[int, str] = {}
        self._stopped = False

    def refresh(self, force: bool = False) -> dict[int, PodState]:
        now = time.monotonic()
        if not force and now - self._checked < STATE_INTERVAL:
            return self.pods
        self._checked = now
        try:
            listed = self.core.list_namespaced_pod(self.namespace, label_selector=f"job-name={self.name}")
        except Exception as exc:  # noqa: BLE001 - ApiException, connection errors
            raise _api_error(f"listing the pods of job {self.name}", exc) from None
        for pod in listed.items:
            annotations = pod.metadata.annotations or {}
            index = annotations.get("batch.kubernetes.io/job-completion-index")
            if index is None or not str(index).isdigit():
                continue
            self.pods[int(index)] = PodState(
                str(pod.metadata.name), str(pod.status.phase or "Pending"), pod.spec.node_name and str(pod.spec.node_name), _why(pod)
            )
        return self.pods

    def _file(self, rank: int, suffix: str) -> str | None:
        try:  # written by the rank into the shared folder: never read through a link it left there
            data = read_written_by_code(self.logs / f"rank{rank}.{suffix}", SMALL_FILE_BYTES, within=self.logs.parent)
        except OSError:
            return None
        return None if data is None else data.decode("utf-8", "replace").strip()

    def placement(self) -> dict[int, str]:
        placed: dict[int, str] = {}
        for rank in range(self.shape.world_size):
            reported = parse_placement(self._file(rank, "place"))
            pod = self.pods.get(rank // self.shape.ranks_per_node)
            node = (reported and reported.node) or (pod and pod.node)
            if node:
                placed[rank] = node
        return placed

    @property
    def nodes(self) -> list[str]:
        placed = self.placement()
        return list(dict.fromkeys(placed[r] for r in sorted(placed)))

    def where(self, rank: int) -> str:
        pod = self.pods.get(rank // self.shape.ranks_per_node)
        node = self.placement().get(rank)
        name = pod.name if pod else None
        return f"node {node} (pod {name or '?'})" if node else f"pod {name or f'{self.name}-{rank // self.shape.ranks_per_node}'} (not scheduled yet)"

    def describe(self, rank: int, code: int | None) -> str:
        return self._lost.get(rank) or f"exited with code {code}"

    def poll(self) -> dict[int, int | None]:
        codes: dict[int, int | None] = {}
        for rank in range(self.shape.world_size):
            codes[rank] = parse_exit_code(self._file(rank, "exit"))
        if all(c is not None for c in codes.values()):
            return codes
        pods = self.refresh()
        for rank, code in codes.items():
            pod = pods.get(rank // self.shape.ranks_per_node)
            if code is None and pod and pod.phase in ("Failed", "Succeeded", "Unknown"):
                codes[rank] = 137
                self._lost[rank] = f"ended without an exit code: pod {pod.name} is {pod.phase}" + (f" ({pod.reason})" if pod.reason else "")
        return codes

    def wait_scheduled(self, limit: float) -> None:
        """Until every pod is running (or has ended); a pod that cannot be scheduled is named."""
        deadline = time.monotonic() + limit
        while True:
            pods = self.refresh(force=True)
            if len(pods) == self.shape.nodes and all(p.phase != "Pending" for p in pods.values()):
                return
            if time.monotonic() > deadline:
                waiting = [f"{p.name} ({p.reason or p.phase})" for p in pods.values() if p.phase == "Pending"]
                raise InfrastructureError(f"the pods of job {self.name} were not scheduled within {limit:g} s: {', '.join(waiting) or 'none created'}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Copy each pod's log, then delete the Job (and its pods) and the Service. Safe twice."""
        if self._stopped:
            return
        self._stopped = True
        for index, pod in sorted(self.pods.items()):
            try:
                text = self.core.read_namespaced_pod_log(pod.name, self.namespace)
                atomic_write(self.logs / f"pod{index}.log", redact(str(text)))  # replaces a link a rank left there, never writes through it
            except Exception:  # noqa: BLE001 - a pod that never started has no log
                pass
        deletions: tuple[Callable[[], object], ...] = (  # typed: a tuple of lambdas would join to an untyped callable
            lambda: self.batch.delete_namespaced_job(self.name, self.namespace, propagation_policy="Background"),
            lambda: self.core.delete_namespaced_service(self.name, self.namespace),
        )
        for delete in deletions:
            try:
                delete()
            except Exception as exc:  # noqa: BLE001
                if getattr(exc, "status", None) != 404:
                    raise _api_error(f"deleting {self.name}", exc) from None


def _why(pod: Any) -> str:
    """A pod's trouble in words: its status reason (Evicted), a container's (OOMKilled,
    ImagePullBackOff), or why it is not scheduled."""
    status = pod.status
    if getattr(status, "reason", None):
        return str(status.reason)
    for container in status.container_statuses or []:
        state = container.state
        if state is not None and state.terminated is not None and state.terminated.reason not in (None, "Completed"):
            return f"{state.terminated.reason}, exit {state.terminated.exit_code}"
        if state is not None and state.waiting is not None and state.waiting.reason not in (None, "ContainerCreating"):
            return str(state.waiting.reason)
    for condition in status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason:
            return f"{condition.reason}: {condition.message or ''}".strip()
    return ""


class KubernetesLauncher:
    name = NAME
    ranks_run_here = False

    def admit(self, shape: Shape) -> None:
        core, _ = api()
        namespace, claim = settings()
        if not claim:
            raise UsageError(
                "the kubernetes launcher needs the claim that holds the rebuild's work folder: set REPROGATE_KUBERNETES_CLAIM",
                hint="a ReadWriteMany PersistentVolumeClaim, mounted where the rebuild runs at its --workdir",
            )
        try:
            core.read_namespaced_persistent_volume_claim(claim, namespace)
        except Exception as exc:  # noqa: BLE001
            raise _api_error(f"reading claim {claim} in namespace {namespace}", exc) from None

    def start(self, realized: Realized, argv: list[str], env: Mapping[str, str], shape: Shape, cwd: Path, logs: Path) -> KubernetesGroup:
        image = realized.image_reference
        if image is None:
            raise UsageError(
                f"the kubernetes launcher runs images; the record's environment was realized as {realized.kind}",
                hint="declare the record's container, or rebuild with --realizer container",
            )
        core, batch = api()
        namespace, claim = settings()
        assert claim is not None  # admit checked
        work = _work_root(logs)
        name = job_name(f"{logs.parent.name}-{uuid.uuid4().hex[:8]}")  # unique: concurrent rebuilds share a namespace
        service, job = manifests(name, namespace, image, shape, argv, env, cwd, logs, work, claim)
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "kubernetes.json").write_text(json.dumps([service, job], indent=2) + "\n")
        try:
            core.create_namespaced_service(namespace, service)
        except Exception as exc:  # noqa: BLE001
            raise _api_error(f"creating service {name}", exc) from None
        group = KubernetesGroup(core, batch, name, namespace, shape, logs)
        try:
            batch.create_namespaced_job(namespace, job)
            group.wait_scheduled(float(os.environ.get("REPROGATE_KUBERNETES_QUEUE_TIMEOUT") or QUEUE_TIMEOUT))
        except BaseException as exc:
            group.stop()
            if isinstance(exc, Exception) and not isinstance(exc, InfrastructureError | UsageError):
                raise _api_error(f"creating job {name}", exc) from None
            raise
        return group


def _work_root(logs: Path) -> Path:
    """The rebuild's work folder (the claim's mount point): the folder holding `runs/`."""
    for parent in logs.parents:
        if parent.name == "runs":
            return parent.parent
    return logs.parent
