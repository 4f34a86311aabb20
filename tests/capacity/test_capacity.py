"""`reprogate capacity RECORD --cluster FILE|slurm:PARTITION`, requirement by requirement, on the
example records; the Slurm pool is read from the loopback cluster the tests run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import Result
from support import edit_record
from support.slurm import SlurmCluster

Cli = Callable[..., Result]
TiB = 1 << 40

POOL = {
    "apiVersion": "reprogate/v1",
    "kind": "Cluster",
    "name": "h100-pool",
    "nodes": 4,
    "gpus": {"model": "NVIDIA H100 80GB HBM3", "per_node": 8},
    "driver_branch": "R580",
    "interconnect": "nvlink",
    "storage": {"local_scratch_bytes": 4 * TiB, "shared_bytes": 100 * TiB, "shared_read_mb_per_s": 2000},
}


def _pool(tmp_path: Path, **change: Any) -> Path:
    data = json.loads(json.dumps(POOL))
    for key, value in change.items():
        if value is None:
            data.pop(key)
        elif isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _drill(project: Path, storage: dict[str, Any]) -> Path:
    record = project / "records" / "drill.yaml"

    def state(data: dict[str, Any]) -> None:
        data["contract"]["envelope"]["storage"] = storage

    edit_record(record, state)
    return record


def _statuses(result: Result) -> dict[str, str]:
    return {r["name"]: r["status"] for r in json.loads(result.stdout)["requirements"]}


def test_a_matching_pool_honors_every_requirement(cli: Cli, project: Path, tmp_path: Path) -> None:
    record = _drill(project, {"dataset_bytes": 2149943638, "scratch_bytes": 50 << 30, "min_read_mb_per_s": 800})
    result = cli("capacity", str(record), "--cluster", str(_pool(tmp_path)), cwd=project)
    assert result.exit_code == 0, result.output
    assert "all 8 requirement(s) honored" in result.stdout
    assert set(_statuses(cli("capacity", str(record), "--cluster", str(_pool(tmp_path)), "--format", "json", cwd=project)).values()) == {"honored"}


def test_a_pool_short_of_storage_gpus_or_nodes_fails_naming_the_requirement(cli: Cli, project: Path, tmp_path: Path) -> None:
    record = _drill(project, {"dataset_bytes": 2149943638, "scratch_bytes": 50 << 30, "min_read_mb_per_s": 800})
    small = _pool(tmp_path, storage={"local_scratch_bytes": 10 << 30})
    result = cli("capacity", str(record), "--cluster", str(small), cwd=project)
    assert result.exit_code == 1
    assert "local-scratch    short      50.0 GiB needed per node, the pool has 10.0 GiB" in result.stdout
    assert "1 of 8 requirement(s) not honored (local-scratch)" in result.stdout
    slow = _statuses(cli("capacity", str(record), "--cluster", str(_pool(tmp_path, storage={"shared_read_mb_per_s": 100})), "--format", "json", cwd=project))
    assert slow["read-throughput"] == "short"
    wrong = cli("capacity", str(record), "--cluster", str(_pool(tmp_path, gpus={"model": "NVIDIA A100-SXM4-80GB"})), cwd=project)
    assert wrong.exit_code == 1 and "the pool has NVIDIA A100-SXM4-80GB; the record allows only ['NVIDIA H100 80GB HBM3']" in wrong.stdout

    def two_nodes(data: dict[str, Any]) -> None:
        data["contract"]["envelope"]["nodes"] = {"min": 2, "max": 2}

    edit_record(record, two_nodes)
    few = cli("capacity", str(record), "--cluster", str(_pool(tmp_path, nodes=1)), "--format", "github", cwd=project)
    assert few.exit_code == 1
    (annotation,) = [line for line in few.stdout.splitlines() if line.startswith("::error ")]
    assert "nodes: 2 node(s) needed, the pool gives only 1" in annotation and "drill.yaml" in annotation


def test_a_requirement_the_record_or_the_pool_does_not_state_is_not_honored(cli: Cli, project: Path, tmp_path: Path) -> None:
    record = project / "records" / "drill.yaml"  # states no storage
    result = cli("capacity", str(record), "--cluster", str(_pool(tmp_path)), "--format", "json", cwd=project)
    assert result.exit_code == 1 and _statuses(result)["storage"] == "unstated"
    record = _drill(project, {"dataset_bytes": 1})
    gaps = _statuses(cli("capacity", str(record), "--cluster", str(_pool(tmp_path, driver_branch=None, storage=None)), "--format", "json", cwd=project))
    assert gaps["driver-branch"] == "unknown" and gaps["shared-storage"] == "unknown" and gaps["gpu-model"] == "honored"


def test_a_cluster_file_that_breaks_its_schema_is_named_with_its_line(cli: Cli, project: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**POOL, "nodes": 0}, sort_keys=False))
    result = cli("capacity", str(project / "records" / "drill.yaml"), "--cluster", str(bad), cwd=project)
    assert result.exit_code == 2
    assert f"{bad}:4: nodes" in result.stderr


def test_capture_and_the_manifest_measure_the_dataset_bytes(cli: Cli, project: Path) -> None:
    manifest = yaml.safe_load((project / "data" / "d77.manifest.yaml").read_text())
    expected = sum(s["bytes"] for s in manifest["shards"]) + sum(f["bytes"] for f in manifest["files"])
    record = project / "records" / "drill.yaml"
    execution = yaml.safe_load(record.read_text())["execution"]  # as the reference ran: capture --into refreshes its env
    result = cli("capture", "--into", str(record), cwd=project)
    assert result.exit_code == 0, result.output
    envelope = yaml.safe_load(record.read_text())["contract"]["envelope"]
    assert envelope["storage"] == {"dataset_bytes": expected}
    threads = int(execution["env"]["OMP_NUM_THREADS"])
    assert envelope["node"] == {"cpus": execution["world_size"] // execution["nodes"] * threads}, "each rank's threads; no GPU here to measure"


def test_the_loopback_slurm_partition_is_read_live(cli: Cli, project: Path, slurm_cluster: SlurmCluster, monkeypatch: Any) -> None:
    slurm_cluster.use(monkeypatch)
    record = project / "records" / "startup.yaml"  # a CPU run on one node

    def stated(data: dict[str, Any]) -> None:
        data["contract"]["envelope"]["storage"] = {"dataset_bytes": 10}

    edit_record(record, stated)
    report = json.loads(cli("capacity", str(record), "--cluster", f"slurm:{slurm_cluster.partition}", "--format", "json", cwd=project).stdout)
    assert report["cluster"] == "slurm partition debug"
    by_name = {r["name"]: r for r in report["requirements"]}
    assert by_name["nodes"]["status"] == "honored" and by_name["nodes"]["reason"].endswith("the pool gives 2")
    assert by_name["shared-storage"]["status"] == "unknown"  # Slurm says nothing of shared storage
    drill = project / "records" / "drill.yaml"
    gpu = json.loads(cli("capacity", str(drill), "--cluster", "slurm:debug", "--format", "json", cwd=project).stdout)
    assert {r["name"]: r["status"] for r in gpu["requirements"]}["gpu-model"] == "short"  # the loopback nodes have no GPUs
    assert cli("capacity", str(drill), "--cluster", "slurm:nosuch", cwd=project).exit_code == 2


def _allowing(project: Path, models: list[str]) -> Path:
    record = project / "records" / "drill.yaml"
    edit_record(record, lambda data: data["contract"]["envelope"].update(gpu_models=models))
    return record


def test_gpu_models_are_matched_whole_never_as_a_substring(cli: Cli, project: Path, tmp_path: Path) -> None:
    """An A10 pool honored an A100 record and an L4 pool an L40S one: `a10` is contained in
    `a100sxm480gb`. Names are now compared whole (normalised), and a GRES type means the models
    the alias table lists for it."""

    def gpu(record: Path, model: str) -> tuple[str, str]:
        report = json.loads(cli("capacity", str(record), "--cluster", str(_pool(tmp_path, gpus={"model": model})), "--format", "json", cwd=project).stdout)
        found = next(r for r in report["requirements"] if r["name"] == "gpu-model")
        return found["status"], found["reason"]

    a100 = _allowing(project, ["NVIDIA A100-SXM4-80GB"])
    for short in ("a10", "NVIDIA A10", "A10G", "NVIDIA A100-SXM4-40GB"):
        assert gpu(a100, short)[0] == "short", short
    assert gpu(a100, "nvidia a100 sxm4 80gb")[0] == "honored", "case, spaces and dashes do not count"
    assert gpu(a100, "NVIDIA A100-SXM4-80GB")[0] == "honored"
    status, reason = gpu(a100, "a100")  # the GRES type covers 40 GB and PCIe cards too
    assert status == "unknown" and "state the exact model" in reason
    every_a100 = _allowing(project, ["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"])
    assert gpu(every_a100, "a100")[0] == "honored"
    l40s = _allowing(project, ["NVIDIA L40S"])
    assert gpu(l40s, "l4")[0] == "short" and gpu(l40s, "NVIDIA L4")[0] == "short" and gpu(l40s, "l40s")[0] == "honored"


def test_a_slurm_gres_type_reads_through_the_same_table() -> None:
    """The loopback nodes have no GPUs, so the GRES line Slurm prints is read here as slurm_pool reads it."""
    from reprogate.capacity.models import offered
    from reprogate.capacity.pool import _gres_gpus

    kind, count = _gres_gpus("gpu:a10:8(S:0-1),shard:8")
    assert (kind, count) == ("a10", 8)
    assert offered(kind).verdict(["NVIDIA A100-SXM4-80GB"])[0] == "short"
    assert offered(_gres_gpus("gpu:l40s:4")[0] or "").verdict(["NVIDIA L40S"])[0] == "honored"
    assert offered("h100_80gb", gres=True).verdict(["NVIDIA H100 80GB HBM3"])[0] == "unknown", "a GRES type the table lacks names no model"


def test_node_memory_cpus_and_cpu_kernels_are_held_against_the_pool(cli: Cli, project: Path, tmp_path: Path) -> None:
    record = project / "tiny" / "records" / "tiny.yaml"  # a bitwise CPU contract: default kernels on x86_64
    pinned_by_the_example: dict[str, str] = {}

    def unpinned(data: dict[str, Any]) -> None:
        data["contract"]["envelope"]["node"] = {"cpus": 2, "memory_bytes": 3 << 30}
        pinned_by_the_example["value"] = data["execution"]["env"].pop("ATEN_CPU_CAPABILITY")

    edit_record(record, unpinned)
    assert pinned_by_the_example == {"value": "default"}
    cpu_pool = {"gpus": None, "driver_branch": None, "interconnect": None}

    def statuses(**pool: Any) -> dict[str, str]:
        return _statuses(cli("capacity", str(record), "--cluster", str(_pool(tmp_path, **cpu_pool, **pool)), "--format", "json", cwd=project))

    fits = statuses(cpus_per_node=4, memory_bytes=8 << 30, cpu={"capabilities": ["default", "avx2", "avx512"], "architecture": "x86_64"})
    assert fits["node-cpus"] == "honored" and fits["host-memory"] == "honored"
    assert fits["cpu-kernels"] == "short", "nothing pins ATEN_CPU_CAPABILITY: torch would pick avx512 there, the record allows default"
    small = statuses(cpus_per_node=1, memory_bytes=1 << 30, cpu={"capabilities": ["default"], "architecture": "aarch64"})
    assert small["node-cpus"] == "short" and small["host-memory"] == "short" and small["cpu-kernels"] == "short"
    assert statuses()["host-memory"] == "unknown"
    edit_record(record, lambda d: d["execution"].setdefault("env", {}).update(ATEN_CPU_CAPABILITY="default"))
    pinned = statuses(cpu={"capabilities": ["default", "avx2", "avx512"], "architecture": "x86_64"})
    assert pinned["cpu-kernels"] == "honored"


def test_a_cpu_record_made_like_init_makes_it_gets_a_yes_on_slurm_with_shared_storage_stated(
    cli: Cli, project: Path, slurm_cluster: SlurmCluster, monkeypatch: Any
) -> None:
    """A record init made states dataset and scratch bytes; Slurm says nothing of shared storage,
    so the old answer was never yes. --shared-bytes states it."""
    slurm_cluster.use(monkeypatch)
    record = project / "tiny" / "records" / "tiny.yaml"

    def as_init_writes(data: dict[str, Any]) -> None:
        data["contract"]["envelope"].update(storage={"dataset_bytes": 200264, "scratch_bytes": 8 << 20}, node={"cpus": 2, "memory_bytes": 600 << 20})
        data["execution"].setdefault("env", {})["ATEN_CPU_CAPABILITY"] = "default"

    edit_record(record, as_init_writes)
    unknown = cli("capacity", str(record), "--cluster", "slurm:debug", "--format", "json", cwd=project)
    assert unknown.exit_code == 1 and _statuses(unknown)["shared-storage"] == "unknown"
    result = cli("capacity", str(record), "--cluster", "slurm:debug", "--shared-bytes", "1TB", cwd=project)
    assert result.exit_code == 0, result.output
    assert cli("capacity", str(record), "--cluster", "slurm:debug", "--shared-bytes", "lots", cwd=project).exit_code == 2


def test_a_down_partition_or_a_drained_only_node_is_not_honored(cli: Cli, project: Path, slurm_cluster: SlurmCluster, monkeypatch: Any) -> None:
    slurm_cluster.use(monkeypatch)
    record = project / "records" / "startup.yaml"  # a CPU run on one node
    up = _statuses(cli("capacity", str(record), "--cluster", "slurm:debug", "--format", "json", cwd=project))
    assert up["nodes"] == "honored"
    slurm_cluster.run("scontrol", "update", "PartitionName=debug", "State=DOWN", check=True)
    try:
        down = json.loads(cli("capacity", str(record), "--cluster", "slurm:debug", "--format", "json", cwd=project).stdout)
    finally:
        slurm_cluster.run("scontrol", "update", "PartitionName=debug", "State=UP", check=True)
    nodes = next(r for r in down["requirements"] if r["name"] == "nodes")
    assert nodes["status"] == "short" and "partition debug is DOWN" in nodes["reason"]
    slurm_cluster.run("scontrol", "create", "PartitionName=solo", "Nodes=n1", "State=UP", check=True)
    slurm_cluster.run("scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=capacity-test", check=True)
    try:
        drained = json.loads(cli("capacity", str(record), "--cluster", "slurm:solo", "--format", "json", cwd=project).stdout)
    finally:
        slurm_cluster.run("scontrol", "delete", "PartitionName=solo")
    nodes = next(r for r in drained["requirements"] if r["name"] == "nodes")
    assert nodes["status"] == "short" and "n1 is " in nodes["reason"] and "DRAIN" in nodes["reason"], nodes


def test_an_unknown_partition_is_usage_and_a_missing_slurm_conf_is_said_at_once(cli: Cli, project: Path, slurm_cluster: SlurmCluster, monkeypatch: Any) -> None:
    slurm_cluster.use(monkeypatch)
    record = str(project / "records" / "startup.yaml")
    nosuch = cli("capacity", record, "--cluster", "slurm:nosuch", cwd=project)
    assert nosuch.exit_code == 2 and "Slurm knows no such partition" in nosuch.output
    monkeypatch.setenv("SLURM_CONF", str(project / "no-such-slurm.conf"))
    missing = cli("capacity", record, "--cluster", "slurm:debug", cwd=project)
    assert missing.exit_code == 3 and "no-such-slurm.conf, which is not a file" in missing.output, "Slurm's client would retry it for 60 s"
