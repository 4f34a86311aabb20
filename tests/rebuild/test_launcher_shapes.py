"""The parts of multi-node launching that need no cluster: the shape taken from a record, the
rank script a Slurm task runs (run here by sh, as srun would start it), the job's environment,
Slurm's one-line output, and how a placement is judged against the record (envelope, claim)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
from support import EXAMPLES
from support.rebuilds import make_job

from reprogate.core.documents import load_document
from reprogate.core.errors import UsageError
from reprogate.core.record import read_record
from reprogate.rebuild.launchers import LAUNCHERS, record_shape
from reprogate.rebuild.launchers.base import Shape
from reprogate.rebuild.launchers.slurm import PER_TASK, fields, job_environment, rank_script
from reprogate.rebuild.realizers.container import ContainerEnvironment
from reprogate.rebuild.realizers.current import CurrentEnvironment
from reprogate.rebuild.realizers.venv import VenvEnvironment
from reprogate.rebuild.stages.envelope import _shape_problems
from reprogate.rebuild.topology import topology

TWO_NODES = EXAMPLES / "tiny" / "records" / "tiny-2node.yaml"


def test_the_shape_comes_from_the_record_with_gpus_per_node() -> None:
    data = load_document(TWO_NODES).data
    assert record_shape(read_record(data)) == Shape(2, 2, 0, None)
    data["devices"] = {"gpus": [{"name": "H100", "uuid": f"GPU-{i:08x}-0000-0000-0000-000000000000", "node": i // 4} for i in range(8)]}
    assert record_shape(read_record(data), time_limit=60.0) == Shape(2, 2, 4, 60.0)
    data["devices"] = {"gpus": [{"name": "H100", "uuid": f"GPU-{i:08x}-0000-0000-0000-000000000000"} for i in range(8)]}  # no node recorded: spread evenly
    assert record_shape(read_record(data)).gpus_per_node == 4


def test_the_local_launcher_refuses_a_multi_node_shape() -> None:
    with pytest.raises(UsageError, match="the local launcher runs one"):
        LAUNCHERS["local"].admit(Shape(2, 2))


def test_a_rank_script_maps_slurms_variables_to_torchruns_and_leaves_placement_and_exit_code(tmp_path: Path) -> None:
    probe = ["sh", "-c", 'echo "$RANK $LOCAL_RANK $GROUP_RANK $NODE_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT $A"; pwd; exit 3']
    script = tmp_path / "rank.sh"
    script.write_text(rank_script(CurrentEnvironment(), probe, {}, tmp_path, tmp_path))
    slurm = {"SLURM_PROCID": "3", "SLURM_LOCALID": "1", "SLURM_NODEID": "1", "SLURMD_NODENAME": "gpu07", "SLURM_JOB_ID": "41", "SLURM_STEP_ID": "0"}
    job = {"PATH": "/usr/bin:/bin", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29400", "A": "kept"}
    done = subprocess.run(["sh", str(script)], env={**job, **slurm}, capture_output=True, text=True, timeout=30, cwd="/", check=False)
    assert done.returncode == 3
    assert done.stdout.splitlines() == ["3 1 1 1 4 2 10.0.0.7:29400 kept", str(tmp_path)]
    assert json.loads((tmp_path / "rank3.place").read_text()) == {"rank": 3, "node": "gpu07", "node_rank": 1, "local_rank": 1, "job": "41", "step": "0"}
    assert (tmp_path / "rank3.exit").read_text() == "3\n"


def test_command_lines_carry_the_environment_and_take_per_task_variables_from_the_node(tmp_path: Path) -> None:
    argv = ["python", "-m", "reprogate.runtime.rank_host", "/w/control"]
    env = {"PATH": "/usr/bin", "HOME": "/w/home", "OMP_NUM_THREADS": "1"}
    venv = VenvEnvironment(tmp_path / "venv", {}).command(argv, env, tmp_path, inherit=PER_TASK)
    assert venv == [
        "env",
        f"VIRTUAL_ENV={tmp_path / 'venv'}",
        f"PATH={tmp_path / 'venv' / 'bin'}:/usr/bin",
        str(tmp_path / "venv" / "bin" / "python"),
        *argv[1:],
    ]
    pinned = "registry.example.test/train@sha256:" + "ab" * 32
    box = ContainerEnvironment(None, "sha256:" + "cd" * 32, None, {}, {"/w": "rw"}, False, pinned)  # type: ignore[arg-type]
    line = box.command(argv, {**env, "RANK": "stale"}, tmp_path, inherit=PER_TASK)
    pairs = [line[i + 1] for i, word in enumerate(line) if word == "-e"]
    assert pairs == ["OMP_NUM_THREADS=1", *PER_TASK]  # PATH and HOME are the image's; per-task values pass through from the node
    assert line[line.index(pinned) :] == [pinned, *argv]  # another node's engine pulls the image by its digest
    assert "--label" in line


def test_the_job_environment_is_the_ranks_plus_slurms_settings_and_never_the_runners(tmp_path: Path) -> None:
    host = {
        "SLURM_CONF": "/etc/slurm/slurm.conf",
        "SBATCH_PARTITION": "gpu",
        "GITHUB_TOKEN": "ghp_secret",
        "DOCKER_HOST": "unix:///run/docker.sock",
        "HOME": "/root",
    }
    ranks = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "1"}
    plain = job_environment(ranks, CurrentEnvironment(), host)
    assert plain == {"PATH": "/usr/bin", "OMP_NUM_THREADS": "1", "SLURM_CONF": "/etc/slurm/slurm.conf", "SBATCH_PARTITION": "gpu"}
    box = ContainerEnvironment(None, "sha256:" + "cd" * 32, None, {}, {}, False)  # type: ignore[arg-type]
    engine = job_environment(ranks, box, host)
    assert engine["DOCKER_HOST"] == "unix:///run/docker.sock" and engine["HOME"] == "/root" and "GITHUB_TOKEN" not in engine


def test_slurms_one_line_output_keeps_values_with_spaces() -> None:
    line = "JobId=7 JobName=reprogate-rebuild JobState=PENDING Reason=ReqNodeNotAvail, UnavailableNodes:n2 Dependency=(null) NodeList=(null) NumNodes=2"
    parsed = fields(line)
    assert (parsed["JobState"], parsed["Reason"], parsed["NumNodes"]) == ("PENDING", "ReqNodeNotAvail, UnavailableNodes:n2", "2")


def test_a_placement_is_judged_against_the_recorded_shape(tmp_path: Path) -> None:
    doc = load_document(TWO_NODES)
    job = make_job(TWO_NODES, doc.data, EXAMPLES, tmp_path)
    contract = read_record(doc.data).contract
    assert contract is not None
    envelope = contract.envelope
    assert _shape_problems(job, {0: "n1", 1: "n2"}, envelope)[1] == []
    # both ranks on one node: another shape
    assert any("ran on 1 node(s) (n1); the record's run used 2" in p for p in _shape_problems(job, {0: "n1", 1: "n1"}, envelope)[1])
    placement = {0: "n2", 1: "n1"}  # the nodes in another order are just other nodes ...
    assert _shape_problems(job, placement, envelope)[1] == []
    doc.data["execution"]["rank_mapping"] = [
        {"rank": 0, "node": 1, "local_rank": 0},
        {"rank": 1, "node": 0, "local_rank": 0},
    ]  # ... unless the record maps ranks
    job = make_job(TWO_NODES, doc.data, EXAMPLES, tmp_path)  # the job reads its record once
    problems = _shape_problems(job, placement, envelope)[1]
    assert problems == [
        "rank mapping differs from the record's (rank 0 ran on node 0 (n2), the reference's on node 1; "
        "rank 1 ran on node 1 (n1), the reference's on node 0) and the envelope does not tolerate rank-remap"
    ]
    assert _shape_problems(job, placement, dataclasses.replace(envelope, topology_changes=("rank-remap",)))[1] == []
    assert topology(read_record(doc.data), {0: "n2", 1: "n1"}).changes == ["rank-remap"]


def test_another_machine_than_the_references_is_a_node_change() -> None:
    import hashlib

    data = {"host": {"hostname_sha256": "sha256:" + hashlib.sha256(b"train-07").hexdigest()}}
    assert topology(read_record(data), {0: "train-07", 1: "train-08"}).changes == []
    assert topology(read_record(data), {0: "n1", 1: "n2"}).changes == ["node-change"]
