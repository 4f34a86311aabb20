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
    result = cli("capture", "--into", str(record), cwd=project)
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(record.read_text())["contract"]["envelope"]["storage"] == {"dataset_bytes": expected}


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
    assert cli("capacity", str(drill), "--cluster", "slurm:nosuch", cwd=project).exit_code in (2, 3)
