"""The Slurm test cluster works the way launcher code needs: two idle nodes, srun across both,
sbatch --wait with steps inside, job states without slurmdbd, scancel, a node dying mid-job,
the controller down."""

from __future__ import annotations

import time
from pathlib import Path

from support.slurm import SlurmCluster


def wait_for_state(cluster: SlurmCluster, job_id: str, states: set[str], timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = cluster.job(job_id)
        if job.get("JobState") in states:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} never reached {states}: {cluster.job(job_id)}")


def test_two_idle_nodes_in_the_default_partition(slurm_cluster: SlurmCluster) -> None:
    assert slurm_cluster.node_states() == {"n1": "idle", "n2": "idle"}
    partition = slurm_cluster.run("sinfo", "-h", "-o", "%P %D %T", check=True).stdout.split()
    assert partition == [f"{slurm_cluster.partition}*", "2", "idle"]
    node = slurm_cluster.run("scontrol", "show", "node", "-o", "n1", check=True).stdout
    assert f"NodeAddr={slurm_cluster.node_addr}" in node.split()


def test_srun_runs_one_task_on_each_node(slurm_cluster: SlurmCluster) -> None:
    done = slurm_cluster.run("srun", "-N2", "-n2", "--label", "sh", "-c", "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_NTASKS", check=True)
    assert sorted(done.stdout.splitlines()) == ["0: n1 0 2", "1: n2 1 2"]


def test_sbatch_wait_runs_steps_across_the_allocation_and_returns_the_exit_code(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\nsrun --label sh -c 'echo step on $SLURMD_NODENAME'\nexit 7\n")
    done = slurm_cluster.run("sbatch", "--wait", "--parsable", "-N2", "-n2", "-D", str(tmp_path), "-o", str(tmp_path / "out-%j.txt"), str(script))
    assert done.returncode == 7, done.stderr
    job_id = done.stdout.strip().split(";")[0]
    assert sorted((tmp_path / f"out-{job_id}.txt").read_text().splitlines()) == ["0: step on n1", "1: step on n2"]
    job = slurm_cluster.job(job_id)
    assert (job["JobState"], job["ExitCode"], job["NodeList"]) == ("FAILED", "7:0", "n[1-2]")
    # Without slurmdbd, the jobcomp/filetxt log (what `sacct --completion` reads) keeps finished jobs.
    completed = {entry["JobId"]: entry for entry in slurm_cluster.completed_jobs()}
    assert (completed[job_id]["JobState"], completed[job_id]["ExitCode"]) == ("FAILED", "7:0")
    sacct = slurm_cluster.run("sacct", "--completion", "-j", job_id, "-P", "-n", "-o", "JobID,State,ExitCode", check=True).stdout.split()
    assert sacct == [f"{job_id}|FAILED|7:0"]


def test_scancel_ends_a_running_job_and_its_tasks(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    job_id = slurm_cluster.run(
        "sbatch",
        "--parsable",
        "-N2",
        "-D",
        str(tmp_path),
        "-o",
        "/dev/null",
        "--wrap",
        f"srun sh -c 'touch {marker}.$SLURMD_NODENAME; exec sleep 300'",
        check=True,
    ).stdout.strip()
    wait_for_state(slurm_cluster, job_id, {"RUNNING"})
    _wait(lambda: all(Path(f"{marker}.{n}").exists() for n in slurm_cluster.nodes), "both tasks started")
    slurm_cluster.run("scancel", job_id, check=True)
    job = wait_for_state(slurm_cluster, job_id, {"CANCELLED"})
    assert job["ExitCode"] == "0:15"
    _wait(lambda: not _tasks_of(slurm_cluster, job_id), "the job's tasks gone")


def test_a_node_killed_mid_job_fails_the_job_naming_the_node(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    job_id = slurm_cluster.run(
        "sbatch",
        "--parsable",
        "--no-requeue",
        "-N2",
        "-D",
        str(tmp_path),
        "-o",
        str(tmp_path / "out.txt"),
        "--wrap",
        f"srun sh -c 'touch {marker}.$SLURMD_NODENAME; exec sleep 300'",
        check=True,
    ).stdout.strip()
    _wait(lambda: all(Path(f"{marker}.{n}").exists() for n in slurm_cluster.nodes), "both tasks started")
    slurm_cluster.kill_node("n2")
    # Two outcomes race: the controller marks the job NODE_FAIL when it declares n2 down, or srun
    # (told of the node failure first) aborts the step and the batch script exits non-zero.
    job = wait_for_state(slurm_cluster, job_id, {"NODE_FAIL", "FAILED"}, timeout=60)
    assert (job["JobState"], job["Reason"]) in {("NODE_FAIL", "NodeDown"), ("FAILED", "NonZeroExitCode")}
    _wait(lambda: slurm_cluster.node_states()["n2"].startswith("down"), "n2 declared down")
    assert "Node failure on n2" in (tmp_path / "out.txt").read_text()
    slurm_cluster.restart_node("n2")
    _wait(lambda: not _tasks_of(slurm_cluster, job_id), "the dead node's orphaned task cleaned up")


def test_the_controller_down_makes_clients_fail_fast_and_comes_back(slurm_cluster: SlurmCluster) -> None:
    slurm_cluster.stop_controller()
    queue = slurm_cluster.run("squeue", timeout=60)
    submit = slurm_cluster.run("sbatch", "--wrap", "true", timeout=60)
    assert queue.returncode == 1 and "Unable to contact slurm controller" in queue.stderr
    assert submit.returncode == 1 and "Unable to contact slurm controller" in submit.stderr
    assert "DOWN" in slurm_cluster.run("scontrol", "ping").stdout
    slurm_cluster.start_controller()
    slurm_cluster.wait_idle()
    assert slurm_cluster.run("srun", "-N2", "true").returncode == 0


def _tasks_of(cluster: SlurmCluster, job_id: str) -> list[int]:
    """Pids of processes that run as tasks of `job_id` on `cluster` (both named in their environment)."""
    found = []
    markers = {f"SLURM_JOB_ID={job_id}".encode(), f"SLURM_CONF={cluster.conf}".encode()}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if markers <= set((entry / "environ").read_bytes().split(b"\0")):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait(ready, what: str, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
