"""A stand-in Kubernetes API server on loopback, held to the real API's OpenAPI schemas.

What the kubernetes launcher calls, and only that: read a PersistentVolumeClaim; create, read
the logs of, list (by `job-name` label) and delete; create a Job (batch/v1) and a Service.
Every request body is validated against the Kubernetes schema of its kind, strictly (unknown
fields fail), and every response body against its kind's schema before it is sent (schemas from
kubernetes-validate, the same the manifest tests use), so the launcher is tested against the
shapes a real API server takes and gives — never against shapes this file invented.

A created Job gets one Pod per completion index, as the Job controller makes them (labels
`job-name` and `batch.kubernetes.io/job-completion-index`, the annotation of the same name,
hostname `<job>-<index>`, subdomain from the template). The test plays the scheduler and
kubelet: `run_pods` schedules each pod on a node and runs its container's command as a local
process (environment values and downward-API fields resolved), so the pods' rank scripts really
run; `fail_pod` ends a pod the way an eviction does.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import jsonschema
import pytest
import referencing

VERSION = "1.37.0"


def check(document: dict[str, Any], schema: str) -> None:
    """Validate `document` against the Kubernetes schema file `schema` (e.g. job-batch-v1), strictly."""
    from kubernetes_validate.utils import schema_contents

    folder = f"kubernetes-json-schema/v{VERSION}-local-strict"
    definitions = referencing.Resource.from_contents(schema_contents(f"{folder}/_definitions.json", VERSION))
    registry = definitions @ referencing.Registry()
    jsonschema.Draft202012Validator(schema_contents(f"{folder}/{schema}.json", VERSION), registry=registry).validate(document)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Cluster:
    """What the stand-in holds; tests read it and drive the pods."""

    claims: set[str] = field(default_factory=set)
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pods_of(self, job: str) -> list[dict[str, Any]]:
        return sorted((p for p in self.pods.values() if p["metadata"]["labels"].get("job-name") == job), key=lambda p: p["metadata"]["name"])

    def run_pods(self, job: str, nodes: list[str]) -> None:
        """Schedule pod i on nodes[i] and run its container's command here, as a kubelet would."""
        for pod, node in zip(self.pods_of(job), nodes, strict=False):
            container = pod["spec"]["containers"][0]
            env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
            for item in container.get("env", []):
                if "value" in item:
                    env[item["name"]] = item["value"]
                else:
                    path = item["valueFrom"]["fieldRef"]["fieldPath"]
                    env[item["name"]] = node if path == "spec.nodeName" else pod["metadata"]["name"]
            env["JOB_COMPLETION_INDEX"] = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            with self.lock:
                pod["spec"]["nodeName"] = node
                pod["status"] = {
                    "phase": "Running",
                    "startTime": _now(),
                    "conditions": [{"type": "PodScheduled", "status": "True"}],
                    "containerStatuses": [
                        {
                            "name": container["name"],
                            "image": container["image"],
                            "imageID": "",
                            "ready": True,
                            "restartCount": 0,
                            "started": True,
                            "state": {"running": {"startedAt": _now()}},
                        }
                    ],
                }
                log = Path(container.get("workingDir", "/")) / f".pod-{pod['metadata']['name']}.log"
                with open(log, "wb") as out:
                    self.processes[pod["metadata"]["name"]] = subprocess.Popen(
                        container["command"], env=env, cwd=container.get("workingDir"), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                    )
                pod["_log"] = str(log)

    def settle(self) -> None:
        """Pods whose process ended are Succeeded or Failed, with the container's exit code."""
        with self.lock:
            for name, process in list(self.processes.items()):
                code = process.poll()
                pod = self.pods.get(name)
                if code is None or pod is None or pod["status"]["phase"] != "Running":
                    continue
                pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
                pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}

    def fail_pod(self, job: str, index: int, reason: str = "Evicted", message: str = "The node was low on resource: memory.") -> None:
        """End pod `index` of `job` as an eviction does: its processes killed, phase Failed with a reason."""
        pod = self.pods_of(job)[index]
        process = self.processes.get(pod["metadata"]["name"])
        if process is not None and process.poll() is None:
            import os
            import signal

            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        with self.lock:
            pod["status"].update(phase="Failed", reason=reason, message=message)

    def stop(self) -> None:
        import os
        import signal

        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}
    check(body, "status-meta-v1")
    return body


class _Handler(BaseHTTPRequestHandler):
    cluster: Cluster

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any, schema: str | None = None, text: bool = False) -> None:
        if schema is not None:
            check(body, schema)
        data = body.encode() if text else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if text else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

    def _route(self, method: str) -> None:
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")
        self.cluster.requests.append((method, url.path))
        try:
            self._dispatch(method, parts, parse_qs(url.query))
        except jsonschema.ValidationError as exc:  # the launcher sent what a real server refuses
            self._send(422, _status(422, "Invalid", f"stand-in: the request does not match the Kubernetes schema: {exc.message}"))

    def _dispatch(self, method: str, parts: list[str], query: dict[str, list[str]]) -> None:
        cluster = self.cluster
        cluster.settle()
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) >= 5:
            namespace, kind = parts[3], parts[4]
            name = parts[5] if len(parts) > 5 else None
            if kind == "persistentvolumeclaims" and method == "GET":
                if name in cluster.claims:
                    claim = {
                        "apiVersion": "v1",
                        "kind": "PersistentVolumeClaim",
                        "metadata": {"name": name, "namespace": namespace},
                        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
                        "status": {"phase": "Bound"},
                    }
                    return self._send(200, claim, "persistentvolumeclaim-v1")
                return self._send(404, _status(404, "NotFound", f'persistentvolumeclaims "{name}" not found'))
            if kind == "services" and method == "POST":
                body = self._body()
                check(body, "service-v1")
                body["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now(), resourceVersion="1")
                cluster.services[body["metadata"]["name"]] = body
                return self._send(201, body, "service-v1")
            if kind == "services" and method == "DELETE" and name:  # the API answers a Service's deletion with the Service
                service = cluster.services.pop(name, None)
                if service is None:
                    return self._send(404, _status(404, "NotFound", f'services "{name}" not found'))
                return self._send(200, service, "service-v1")
            if kind == "pods" and method == "GET" and name is None:
                selector = (query.get("labelSelector") or [""])[0]
                key, _, value = selector.partition("=")
                with cluster.lock:
                    items = [{k: v for k, v in p.items() if not k.startswith("_")} for p in cluster.pods.values() if p["metadata"]["labels"].get(key) == value]
                return self._send(200, {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}, "podlist-v1")
            if kind == "pods" and method == "GET" and len(parts) == 7 and parts[6] == "log":
                pod = cluster.pods.get(name or "")
                if pod is None:
                    return self._send(404, _status(404, "NotFound", f'pods "{name}" not found'))
                log = Path(pod.get("_log", "/nonexistent"))
                return self._send(200, log.read_text() if log.exists() else "", text=True)
        if parts[:4] == ["apis", "batch", "v1", "namespaces"] and len(parts) >= 6 and parts[5] == "jobs":
            namespace, name = parts[4], parts[6] if len(parts) > 6 else None
            if method == "POST":
                return self._create_job(namespace, self._body())
            if method == "DELETE" and name:
                job = cluster.jobs.pop(name, None)
                if job is None:
                    return self._send(404, _status(404, "NotFound", f'jobs.batch "{name}" not found'))
                for pod in cluster.pods_of(name):
                    process = cluster.processes.pop(pod["metadata"]["name"], None)
                    if process is not None and process.poll() is None:
                        import os
                        import signal

                        os.killpg(process.pid, signal.SIGKILL)
                        process.wait()
                    cluster.pods.pop(pod["metadata"]["name"])
                return self._send(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}, "status-meta-v1")
        self._send(404, _status(404, "NotFound", f"stand-in: {method} /{'/'.join(parts)} is not served"))

    def _create_job(self, namespace: str, body: dict[str, Any]) -> None:
        check(body, "job-batch-v1")
        name = body["metadata"]["name"]
        body["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now(), resourceVersion="1")
        body["status"] = {"active": body["spec"]["parallelism"]}
        template = body["spec"]["template"]
        for index in range(body["spec"]["completions"]):
            labels = {**template["metadata"].get("labels", {}), "job-name": name, "batch.kubernetes.io/job-completion-index": str(index)}
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{index}-{uuid.uuid4().hex[:5]}",
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                    "uid": str(uuid.uuid4()),
                },
                "spec": {**json.loads(json.dumps(template["spec"])), "hostname": f"{name}-{index}"},
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/2 nodes are available: waiting for the test's scheduler.",
                        }
                    ],
                },
            }
            check(pod, "pod-v1")
            self.cluster.pods[pod["metadata"]["name"]] = pod
        self.cluster.jobs[name] = body  # after its pods, as a scheduler watching jobs would find them
        self._send(201, body, "job-batch-v1")

    def do_GET(self) -> None:  # http.server's names
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")


@dataclass
class KubernetesApi:
    url: str
    cluster: Cluster
    kubeconfig: Path


@pytest.fixture
def kubernetes_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KubernetesApi]:
    """The stand-in on a free loopback port, a kubeconfig naming it (KUBECONFIG set), namespace
    `rebuilds` and a claim `work` the launcher may use."""
    pytest.importorskip("kubernetes")
    pytest.importorskip("kubernetes_validate")
    cluster = Cluster(claims={"work"})
    handler = type("Handler", (_Handler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "clusters": [{"name": "stand-in", "cluster": {"server": url}}],
                "users": [{"name": "tester", "user": {"token": "stand-in-token"}}],
                "contexts": [{"name": "test", "context": {"cluster": "stand-in", "user": "tester", "namespace": "rebuilds"}}],
            }
        )
    )
    for key in ("KUBERNETES_SERVICE_HOST", "REPROGATE_KUBERNETES_NAMESPACE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("REPROGATE_KUBERNETES_CLAIM", "work")
    try:
        yield KubernetesApi(url, cluster, kubeconfig)
    finally:
        cluster.stop()
        server.shutdown()
        server.server_close()
