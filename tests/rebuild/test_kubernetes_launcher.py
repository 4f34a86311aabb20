"""`rebuild --launcher kubernetes --dry-run`: the manifests of the two-node example record.

No cluster is available here: the rendered Service and indexed Job are validated against the
Kubernetes OpenAPI schemas (kubernetes-validate ships them, strict: unknown fields fail), and
the pod's rank script is run by a real shell, as a pod of index 1 would run it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import edit_record
from support.kubernetes_api import KubernetesApi

from reprogate.core.errors import UsageError
from reprogate.rebuild.launchers.base import Shape
from reprogate.rebuild.launchers.kubernetes import KubernetesLauncher, manifests

kubernetes_validate = pytest.importorskip("kubernetes_validate")

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny-2node.yaml"
IMAGE = "registry.example.test/tiny@sha256:" + "ab" * 32
VERSIONS = ("1.29", "1.37")  # Indexed Jobs with pod hostnames are GA since 1.24; oldest and newest schemas shipped alike


def dry_run(cli: Cli, project: Path, *args: str) -> tuple[Result, list[dict[str, Any]]]:
    out = project.parent / "out"
    shutil.rmtree(out, ignore_errors=True)  # the last run's: rebuild writes only into a fresh folder
    result = cli("rebuild", str(project / RECORD), "--launcher", "kubernetes", "--dry-run", "--out", str(out), *args)
    target = out / "kubernetes.yaml"
    return result, list(yaml.safe_load_all(target.read_text())) if target.exists() else []


def validate(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        for version in VERSIONS:
            kubernetes_validate.validate(document, version, strict=True)


def test_the_two_node_record_renders_an_indexed_job_and_a_headless_service_that_validate(cli: Cli, project: Path) -> None:
    result, documents = dry_run(cli, project, "--image", IMAGE, "--workdir", "/mnt/rebuild")
    assert result.exit_code == 0, result.output
    validate(documents)
    service, job = documents
    assert (service["kind"], service["spec"]["clusterIP"]) == ("Service", "None")
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"], spec["backoffLimit"]) == ("Indexed", 2, 2, 0)
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] and pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["image"] == IMAGE and "resources" not in container  # a CPU record asks for no GPU
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["MASTER_ADDR"] == f"{job['metadata']['name']}-0.{service['metadata']['name']}"
    assert (env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"], env["ATEN_CPU_CAPABILITY"], env["MKL_CBWR"]) == ("2", "1", "default", "COMPATIBLE")
    assert env["PYTHONPATH"] == "/mnt/rebuild/.reprogate/runtime" and "PATH" not in env and "HOME" not in env
    assert container["volumeMounts"] == [{"name": "work", "mountPath": "/mnt/rebuild"}]
    assert container["workingDir"] == "/mnt/rebuild/tiny/project"
    assert "python -m reprogate.runtime.rank_host /mnt/rebuild/runs/preflight/control" in container["command"][2]


def test_gpus_of_the_record_are_asked_per_pod(cli: Cli, project: Path) -> None:
    gpus = [{"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{i:08d}-0000-0000-0000-000000000000", "node": i} for i in range(2)]
    edit_record(project / RECORD, lambda r: r.update(devices={"present": True, "gpus": gpus}))
    result, documents = dry_run(cli, project, "--image", IMAGE)
    assert result.exit_code == 0, result.output
    validate(documents)
    container = documents[1]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}}


def test_a_record_without_an_image_cannot_be_rendered(cli: Cli, project: Path) -> None:
    result, documents = dry_run(cli, project)
    assert result.exit_code == 2 and "pins no container digest" in result.output and documents == []


def test_dry_run_is_for_kubernetes(cli: Cli, project: Path) -> None:
    result = cli("rebuild", str(project / RECORD), "--launcher", "slurm", "--dry-run", "--out", str(project.parent / "out"))
    assert result.exit_code == 2 and "--dry-run writes the Kubernetes manifests" in result.output


def test_a_pod_starts_its_ranks_with_torchruns_variables(tmp_path: Path) -> None:
    """Pod 1 of 2 nodes x 2 ranks, its script run by sh: ranks 2 and 3, each with its log, placement and exit code."""
    logs = tmp_path / "logs"
    logs.mkdir()
    probe = ["sh", "-c", 'echo "$RANK $LOCAL_RANK $NODE_RANK $GROUP_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT"; exit $((RANK - 2))']
    _, job = manifests("rg-test", "default", IMAGE, Shape(4, 2), probe, {"A": "1"}, tmp_path, logs, tmp_path, "claim")
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    done = subprocess.run(
        container["command"],
        env={**env, "PATH": "/usr/bin:/bin", "JOB_COMPLETION_INDEX": "1", "NODE_NAME": "k8s-b", "POD_NAME": "rg-test-1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1  # the pod fails when one of its ranks does
    assert (logs / "rank2.log").read_text().split() == ["2", "0", "1", "1", "4", "2", "rg-test-0.rg-test", "29500"]
    assert (logs / "rank3.log").read_text().split()[:4] == ["3", "1", "1", "1"]
    assert [(logs / f"rank{r}.exit").read_text().strip() for r in (2, 3)] == ["0", "1"]
    assert yaml.safe_load((logs / "rank3.place").read_text()) == {"rank": 3, "node": "k8s-b", "pod": "rg-test-1", "node_rank": 1, "local_rank": 1}


# --- with a cluster: the launcher against the OpenAPI-checked stand-in API (tests/support/kubernetes_api.py) ---


def _container(reference: str) -> Any:
    """The container realizer's environment as the launcher sees it: kind, the image reference (no engine is used)."""
    from reprogate.rebuild.realizers.container import ContainerEnvironment

    return ContainerEnvironment(None, "sha256:" + "cd" * 32, None, {}, {}, False, reference)  # type: ignore[arg-type]


def _schedule(api: KubernetesApi, nodes: list[str]) -> list[BaseException]:
    """Play the scheduler and the kubelets: once the Job exists, run its pods on `nodes`. Errors
    land in the returned list (and the launcher, never scheduled, says so after its queue limit)."""
    import threading

    errors: list[BaseException] = []

    def run() -> None:
        try:
            deadline = time.monotonic() + 30
            while not api.cluster.jobs and time.monotonic() < deadline:
                time.sleep(0.05)
            for name in list(api.cluster.jobs):
                api.cluster.run_pods(name, nodes)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threading.Thread(target=run, daemon=True).start()
    return errors


def _wait(group: Any, done: Callable[[dict[int, int | None]], bool]) -> dict[int, int | None]:
    deadline = time.monotonic() + 60
    while True:
        codes = group.poll()
        if done(codes) or time.monotonic() > deadline:
            return codes
        time.sleep(0.1)


def test_the_launcher_runs_each_node_as_a_pod_and_cleans_up(kubernetes_api: KubernetesApi, tmp_path: Path) -> None:
    logs = tmp_path / "runs" / "preflight" / "logs"
    probe = ["sh", "-c", 'echo "rank $RANK of $WORLD_SIZE via $MASTER_ADDR"']
    launcher = KubernetesLauncher()
    shape = Shape(2, 2, 0, 600.0)
    launcher.admit(shape)
    errors = _schedule(kubernetes_api, ["k1", "k2"])
    group = launcher.start(_container(IMAGE), probe, {"OMP_NUM_THREADS": "1"}, shape, tmp_path, logs)
    assert errors == []
    (job_name,) = kubernetes_api.cluster.jobs
    assert kubernetes_api.cluster.services[job_name]["spec"]["clusterIP"] == "None"
    assert _wait(group, lambda c: all(v is not None for v in c.values())) == {0: 0, 1: 0}
    assert group.placement() == {0: "k1", 1: "k2"} and group.nodes == ["k1", "k2"]
    assert (logs / "rank1.log").read_text().strip() == f"rank 1 of 2 via {job_name}-0.{job_name}"
    group.stop()
    assert kubernetes_api.cluster.jobs == {} and kubernetes_api.cluster.services == {}
    assert ("DELETE", f"/apis/batch/v1/namespaces/rebuilds/jobs/{job_name}") in kubernetes_api.cluster.requests
    assert {p.name for p in logs.glob("pod*.log")} == {"pod0.log", "pod1.log"}


def test_an_evicted_pod_is_named_with_its_rank_and_node(kubernetes_api: KubernetesApi, tmp_path: Path) -> None:
    logs = tmp_path / "runs" / "seed-1" / "logs"
    probe = ["sh", "-c", 'if [ "$RANK" = 1 ]; then exec sleep 300; fi']
    launcher = KubernetesLauncher()
    shape = Shape(2, 2, 0, 600.0)
    errors = _schedule(kubernetes_api, ["k1", "k2"])
    group = launcher.start(_container(IMAGE), probe, {}, shape, tmp_path, logs)
    assert errors == []
    try:
        (job_name,) = kubernetes_api.cluster.jobs
        assert _wait(group, lambda c: c[0] is not None)[0] == 0
        kubernetes_api.cluster.fail_pod(job_name, 1)
        codes = _wait(group, lambda c: c[1] is not None)
        assert codes[1] == 137
        assert group.where(1).startswith(f"node k2 (pod {job_name}-1-")
        assert group.describe(1, 137).endswith("is Failed (Evicted)")
    finally:
        group.stop()
    assert kubernetes_api.cluster.jobs == {}


def test_a_missing_claim_is_refused_before_anything_is_created(kubernetes_api: KubernetesApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPROGATE_KUBERNETES_CLAIM")
    with pytest.raises(UsageError, match="REPROGATE_KUBERNETES_CLAIM"):
        KubernetesLauncher().admit(Shape(2, 2))
    monkeypatch.setenv("REPROGATE_KUBERNETES_CLAIM", "elsewhere")
    with pytest.raises(Exception, match="claim elsewhere.*404"):
        KubernetesLauncher().admit(Shape(2, 2))
    assert kubernetes_api.cluster.jobs == {}
