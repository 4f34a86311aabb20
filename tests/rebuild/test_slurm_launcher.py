"""Drills of `rebuild --launcher slurm` on the real two-node loopback cluster (tests/support/slurm.py).

The example record examples/tiny/records/tiny-2node.yaml was made on this kind of cluster (2
nodes x 1 rank, gloo); its rebuild passes bitwise here. A node killed mid-run fails the run
naming the node, and the allocation is gone; the controller down is exit 3; a record asking
for more nodes than the partition has is refused before anything is submitted (exit 2). Inside
an allocation the rebuild runs its ranks as a step of that allocation instead of submitting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record
from support.slurm import SlurmCluster

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny-2node.yaml"


def rebuild(cli: Cli, project: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    out = project.parent / "out"
    shutil.rmtree(out, ignore_errors=True)  # the last run's: rebuild writes only into a fresh folder
    result = cli("rebuild", str(project / RECORD), "--out", str(out), *args)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").exists() else {}
    return result, verdict


def stage(verdict: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in verdict["stages"] if s["name"] == name)


def queue(cluster: SlurmCluster) -> list[str]:
    return cluster.run("squeue", "-h", "-o", "%i %T", check=True).stdout.split("\n")[:-1]


def job_of(logs: Path) -> dict[str, Any]:
    """The Slurm job and step rank 0 reported running in (its place file)."""
    return json.loads((logs / "rank0.place").read_text())


def wait_for(ready: Callable[[], bool], what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_two_node_record_rebuilds_on_two_slurm_nodes(
    slurm_cluster: SlurmCluster, cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_cluster.use(monkeypatch)
    work = tmp_path / "work"
    result, verdict = rebuild(cli, project, "--workdir", str(work), "--format", "json")
    assert result.exit_code == 0, result.output
    assert verdict["verdict"] == "pass", [s for s in verdict["stages"] if s["status"] == "fail"]
    assert verdict["environment"]["launcher"] == "slurm" and verdict["environment"]["nodes_used"] == ["n1", "n2"]
    assert verdict["claim"]["placement"]["ranks"] == [{"rank": 0, "node": "n1", "node_index": 0}, {"rank": 1, "node": "n2", "node_index": 1}]
    assert "rank 0 on n1, rank 1 on n2" in verdict["claim"]["text"]
    logs = work / "runs" / "preflight" / "logs"
    assert {p.name for p in logs.glob("rank*.log")} == {"rank0.log", "rank1.log"}  # per-rank logs in the shared work folder
    assert "exec srun --nodes=2 --ntasks=2 --ntasks-per-node=1" in (logs / "job.sh").read_text()
    job = job_of(logs)
    wait_for(lambda: any(j["JobId"] == job["job"] for j in slurm_cluster.completed_jobs()), "the job in the completion log")
    done = {j["JobId"]: j for j in slurm_cluster.completed_jobs()}[job["job"]]
    assert (done["JobState"], done["NodeList"]) == ("COMPLETED", "n[1-2]")
    assert queue(slurm_cluster) == []  # nothing left allocated
    assert cli("validate", str(project.parent / "out" / "verdict.json")).exit_code == 0


def test_a_node_killed_mid_run_fails_the_run_naming_the_node_and_cancels_the_allocation(slurm_cluster: SlurmCluster, project: Path, tmp_path: Path) -> None:
    edit_record(project / RECORD, lambda r: r["job"].update(entrypoint=["python", "-c", "import time; time.sleep(600)"]))
    work, out = tmp_path / "work", tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--workdir", str(work), "--out", str(out)],
        env=slurm_cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: (work / "runs" / "preflight" / "control" / "go.json").exists() or process.poll() is not None, "the run to start")
        assert process.poll() is None, process.communicate()[0]
        job = job_of(work / "runs" / "preflight" / "logs")
        slurm_cluster.kill_node("n2")
        output, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, output
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["diagnosis"] == "run"
    detail = stage(verdict, "run")["detail"]
    assert "rank 1 on node n2" in detail and "node n2 is " in detail, detail
    assert slurm_cluster.job(job["job"])["JobState"] in {"NODE_FAIL", "FAILED", "CANCELLED"}
    assert queue(slurm_cluster) == []


def test_the_controller_down_is_an_infrastructure_failure(
    slurm_cluster: SlurmCluster, cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm_cluster.use(monkeypatch)
    slurm_cluster.stop_controller()
    result, _ = rebuild(cli, project, "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 3, result.output
    assert "Unable to contact slurm controller" in result.output
    assert not (tmp_path / "work").exists()  # refused before the first stage


def test_a_record_asking_for_more_nodes_than_the_partition_has_is_refused_before_submission(
    slurm_cluster: SlurmCluster, cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def three_nodes(record: dict[str, Any]) -> None:
        record["execution"].update(world_size=3, nodes=3, ranks_per_node=1)
        record["execution"].pop("rank_mapping")
        record["contract"]["envelope"].update(nodes={"min": 3, "max": 3}, world_sizes=[3])

    edit_record(project / RECORD, three_nodes)
    slurm_cluster.use(monkeypatch)
    before = len(slurm_cluster.completed_jobs())
    result, _ = rebuild(cli, project, "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 2, result.output
    assert "asks for 3 node(s); Slurm partition debug has 2: rejected before submission" in result.output
    assert not (tmp_path / "work").exists()
    assert queue(slurm_cluster) == [] and len(slurm_cluster.completed_jobs()) == before


def test_inside_an_allocation_the_ranks_are_a_step_of_it(slurm_cluster: SlurmCluster, project: Path, tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "out"
    command = [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--workdir", str(work), "--out", str(out)]
    job_id = slurm_cluster.run(
        "sbatch",
        "--parsable",
        "-N2",
        "--ntasks-per-node=1",
        "--no-requeue",
        "-o",
        str(tmp_path / "batch.log"),
        "--wrap",
        " ".join(command),
        check=True,
        cwd=project,
    ).stdout.strip()
    wait_for(lambda: slurm_cluster.job(job_id).get("JobState") in {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL"}, "the batch job", timeout=300)
    assert slurm_cluster.job(job_id)["JobState"] == "COMPLETED", (tmp_path / "batch.log").read_text()
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == "pass"
    placed = [json.loads(p.read_text()) for p in sorted((work / "runs" / "preflight" / "logs").glob("rank*.place"))]
    assert [(p["job"], p["node"]) for p in placed] == [(job_id, "n1"), (job_id, "n2")]  # a step of the allocation, not a job of its own
    assert [j["JobId"] for j in slurm_cluster.completed_jobs()][-1] == job_id


def test_a_job_whose_ranks_have_exited_is_left_to_complete_not_cancelled(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """`stop` comes right after the last rank exits, at the end of every rebuild; a job still
    winding down then (srun's teardown, an epilogue) must end COMPLETED, not be cancelled by
    its own launcher: accounting would say CANCELLED for a run that passed."""
    from reprogate.rebuild.launchers.base import Shape
    from reprogate.rebuild.launchers.slurm import SlurmGroup

    logs = tmp_path / "logs"
    logs.mkdir()
    wrap = f"printf '0\\n' > {logs}/rank0.exit; sleep 3"  # the rank is done; the job takes 3 s more
    job_id = slurm_cluster.run("sbatch", "--parsable", "-N1", "--no-requeue", "-o", str(tmp_path / "job.log"), "--wrap", wrap, check=True).stdout.strip()
    wait_for(lambda: (logs / "rank0.exit").exists(), "the rank's exit file")
    group = SlurmGroup(Shape(world_size=1), logs, slurm_cluster.env, job_id)
    assert group.poll() == {0: 0}
    group.stop()
    assert slurm_cluster.job(job_id)["JobState"] == "COMPLETED"
