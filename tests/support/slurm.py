"""A real two-node Slurm cluster on loopback, from Debian's slurm-wlm and munge.

Fixture (registered in tests/conftest.py; skips outside CI when a tool is missing, fails under CI=true):

``slurm_cluster`` -> :class:`SlurmCluster`
    One ``slurmctld`` and two ``slurmd`` (``-N n1``, ``-N n2``, both on localhost with their own
    ports) plus a private ``munged`` (own key, own socket: no system munged or /etc/munge needed),
    all under a temporary folder and started once per session. The fixture itself is per test:
    after each test it puts the cluster back the way tests expect it (controller up, both slurmd
    running, no jobs left, both nodes idle), so a test may kill a node or the controller.

    - ``cluster.env``: the environment for subprocesses (``SLURM_CONF`` set, any inherited
      ``SLURM_*`` removed); ``cluster.use(monkeypatch)`` does the same to ``os.environ`` for code
      that runs in-process (the CLI runner).
    - ``cluster.conf`` (the ``SLURM_CONF`` path), ``cluster.partition`` (``"debug"``, the default),
      ``cluster.nodes`` (``("n1", "n2")``), ``cluster.node_addr`` (``"127.0.0.1"``; node names do not
      resolve — take ``NodeAddr`` from ``scontrol show node`` for MASTER_ADDR, as on a real cluster).
    - ``cluster.run("sbatch", "--parsable", ...)``: a client command with that environment.
    - ``cluster.job(job_id)``: ``scontrol show job -o`` as a dict (``JobState``, ``ExitCode``,
      ``NodeList``, ``Reason``...); finished jobs stay visible there for ``MinJobAge`` (300 s).
    - ``cluster.completed_jobs()``: the ``jobcomp/filetxt`` log parsed (``JobId``, ``JobState``,
      ``ExitCode``, ``NodeList``...), which ``sacct --completion`` also reads. Plain ``sacct``
      answers "Slurm accounting storage is disabled": there is no slurmdbd.
    - ``cluster.kill_node("n2")`` (SIGKILL of that slurmd: a node failure), ``restart_node``,
      ``stop_controller()`` / ``start_controller()``.

Behaviour measured on this cluster (what launcher code and its tests can rely on):
    - a batch job starts ~0.6 s after submission (``batch_sched_delay=0,sched_min_interval=0``;
      Slurm's defaults add ~2 s); ``srun`` alone ~0.2 s for a trivial step on both nodes.
    - ``sbatch --wait`` returns the batch script's exit code, but it polls 2 s after submission,
      then 8 s later (a 3 s job returns after 10 s; the sleep grows ×4 while under MinJobAge/2):
      a launcher should poll ``scontrol show job`` itself. ``srun`` inside an ``sbatch -N2`` allocation runs one task per node
      (``SLURMD_NODENAME`` n1, n2; ``hostname`` is the same machine for both).
    - ``scancel``: the job is ``CANCELLED`` (ExitCode 0:15) and its tasks gone within ~0.2 s.
    - a slurmd killed mid-job (tasks running on both nodes): the node goes ``down*`` ~12-15 s later
      (``SlurmdTimeout=5``; not responding after ~7 s) and the job ends either ``NODE_FAIL``
      (Reason ``NodeDown``) or, when srun hears of the node failure first and aborts the step,
      ``FAILED`` (``NonZeroExitCode``); either way the job's output has "srun: error: Node failure
      on n2". Killed before the step reached that node, srun reports "Task launch for StepId=...
      failed on node n2". Pass ``sbatch --no-requeue``: by default a batch job hit by a node failure
      is requeued (PENDING) instead. The dead node's tasks keep running until its slurmd comes back
      (``restart_node`` cleans them up when it registers) or the fixture's teardown kills them.
    - slurmctld down: sbatch, squeue, sinfo, srun exit 1 with "Unable to contact slurm controller
      (connect failure)" after about MessageTimeout - 1 s of connect retries (2 s here with
      MessageTimeout=3; 4 s measured with 5; the default is 10); ``scontrol ping`` says ``DOWN`` at once.
    - ``ProctrackType=proctrack/linuxproc`` tracks processes by parentage: a container that a job
      starts with ``podman run`` keeps running after ``scancel`` (checked: its processes belong to
      Podman's conmon, not to the job); remove it through the engine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support import daemons, require_tool

PARTITION = "debug"
NODES = ("n1", "n2")
NODE_ADDR = "127.0.0.1"
TOOLS = ("munged", "slurmctld", "slurmd", "slurmstepd", "sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel", "sacct")

SLURM_CONF = """\
ClusterName=rgtest
SlurmctldHost=localhost
SlurmctldPort={controller_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool/%n
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd-%n.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={folder}/jobcomp.txt
# Short timeouts: tests of failures should not wait the production defaults (10 s, 300 s, 30 s).
MessageTimeout=3
SlurmdTimeout=5
KillWait=2
InactiveLimit=0
MinJobAge=300
{node_lines}
PartitionName={partition} Nodes={node_list} Default=YES MaxTime=INFINITE State=UP
"""
NODE_LINE = "NodeName={name} NodeAddr={addr} NodeHostname=localhost Port={port} CPUs=2 RealMemory=1000 TmpDisk=1024 State=UNKNOWN"


@dataclass
class SlurmCluster:
    """A running loopback cluster; see the module docstring."""

    folder: Path
    conf: Path
    munge_folder: Path
    partition: str = PARTITION
    nodes: tuple[str, ...] = NODES
    node_addr: str = NODE_ADDR
    processes: dict[str, Any] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """os.environ without inherited SLURM_* variables, with SLURM_CONF pointing at this cluster."""
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        return {**clean, "SLURM_CONF": str(self.conf)}

    def use(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Point in-process code at this cluster: SLURM_CONF set, other SLURM_* removed."""
        for key in [k for k in os.environ if k.startswith("SLURM_")]:
            monkeypatch.delenv(key)
        monkeypatch.setenv("SLURM_CONF", str(self.conf))

    def run(self, *argv: str, check: bool = False, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster (text output captured)."""
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=check, timeout=timeout, cwd=cwd)

    def job(self, job_id: str | int) -> dict[str, str]:
        """``scontrol show job -o JOB`` as a dict (empty when the controller does not know the job)."""
        done = self.run("scontrol", "show", "job", "-o", str(job_id))
        return _fields(done.stdout) if done.returncode == 0 else {}

    def completed_jobs(self) -> list[dict[str, str]]:
        """Finished jobs from the jobcomp/filetxt log, oldest first (one dict per job)."""
        log = self.folder / "jobcomp.txt"
        return [_fields(line) for line in log.read_text().splitlines()] if log.exists() else []

    def node_states(self) -> dict[str, str]:
        """{node: state} as sinfo reports them (``idle``, ``allocated``, ``down*``...)."""
        done = self.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=30)
        return dict(line.split() for line in done.stdout.splitlines() if line.strip()) if done.returncode == 0 else {}

    def wait_idle(self, timeout: float = 60) -> None:
        """Until every node is idle."""
        daemons.wait_until(
            lambda: self.node_states() == {n: "idle" for n in self.nodes},
            timeout,
            f"slurm nodes idle (now {self.node_states()})",
            self.folder / "log" / "slurmctld.log",
        )

    def start_controller(self) -> None:
        """Start slurmctld (keeping saved state) and wait until it answers ``scontrol ping``."""
        log = self.folder / "log" / "slurmctld.stdout"
        process = daemons.start(["slurmctld", "-D", "-f", str(self.conf)], log, env=self.env)
        self.processes["slurmctld"] = process
        daemons.wait_until(lambda: "is UP" in self.run("scontrol", "ping", timeout=30).stdout, 30, "slurmctld", self.folder / "log" / "slurmctld.log", process)

    def stop_controller(self) -> None:
        """Stop slurmctld (its state is saved; `start_controller` brings it back)."""
        daemons.stop(self.processes.pop("slurmctld"))

    def start_node(self, name: str) -> None:
        """Start the slurmd that plays node `name` (it registers with the controller by itself)."""
        log = self.folder / "log" / f"slurmd-{name}.stdout"
        self.processes[f"slurmd-{name}"] = daemons.start(["slurmd", "-D", "-f", str(self.conf), "-N", name], log, env=self.env)

    def kill_node(self, name: str) -> None:
        """SIGKILL the slurmd of `name`, as a crashed machine: running steps are orphaned there."""
        process = self.processes.pop(f"slurmd-{name}")
        process.send_signal(signal.SIGKILL)
        process.wait()

    def restart_node(self, name: str, timeout: float = 60) -> None:
        """Start `name`'s slurmd again and wait until the node is back in service and idle (its
        orphaned steps are cleaned up when it registers)."""
        if f"slurmd-{name}" not in self.processes:
            self.start_node(name)
        daemons.wait_until(
            lambda: self.node_states().get(name) == "idle", timeout, f"node {name} idle (now {self.node_states()})", self.folder / "log" / f"slurmd-{name}.log"
        )

    def cancel_all(self, timeout: float = 30) -> None:
        """Cancel every job and wait until the queue is empty."""
        self.run("scancel", "--full", "--partition", self.partition, timeout=30)
        daemons.wait_until(lambda: self.run("squeue", "-h", "-o", "%i", timeout=30).stdout.strip() == "", timeout, "slurm queue empty")

    def heal(self) -> None:
        """Back to the state every test starts from: controller up, both slurmd up, no jobs, all idle."""
        if "slurmctld" not in self.processes or self.processes["slurmctld"].poll() is not None:
            self.processes.pop("slurmctld", None)
            self.start_controller()
        self.cancel_all()
        for name in self.nodes:
            process = self.processes.get(f"slurmd-{name}")
            if process is None or process.poll() is not None:
                self.processes.pop(f"slurmd-{name}", None)
                self.start_node(name)
        states = self.node_states()
        for name in self.nodes:
            if "drain" in states.get(name, "") or states.get(name, "").startswith("down"):
                self.run("scontrol", "update", f"nodename={name}", "state=resume")
        self.wait_idle()

    def stop(self) -> None:
        """Cancel jobs, shut every daemon down, kill anything of this cluster left, delete the folder."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            try:
                self.cancel_all(timeout=15)
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
            self.run("scontrol", "shutdown", timeout=30)
        # A slurmd restarted after a node failure ignores shutdown and SIGTERM while the old step's
        # orphaned slurmstepd still retries its completion message: SIGKILL after a short grace.
        for name in [n for n in self.processes if n != "munged"]:
            daemons.stop(self.processes.pop(name), grace=3)
        daemons.kill_strays(f"SLURM_CONF={self.conf}", self.folder)
        if "munged" in self.processes:
            daemons.stop(self.processes.pop("munged"))
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.munge_folder, ignore_errors=True)


def _fields(line: str) -> dict[str, str]:
    """``Key=Value Key=Value`` (Slurm's one-line format) as a dict; values never hold spaces here."""
    return dict(item.split("=", 1) for item in line.split() if "=" in item)


def start_cluster(folder: Path) -> SlurmCluster:
    """Write slurm.conf with free ports under `folder`, start munged, slurmctld and both slurmd,
    and wait until both nodes are idle."""
    for sub in ("state", "log", "spool"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    # munged insists that every user can traverse its socket's folder; pytest's temp folders are
    # private (0700), so munge gets a folder of its own directly under the system temp folder.
    munge = Path(tempfile.mkdtemp(prefix="reprogate-munge-"))
    munge.chmod(0o755)
    cluster = SlurmCluster(folder, folder / "slurm.conf", munge)
    try:
        key = munge / "munge.key"
        key.touch(mode=0o600)
        key.write_bytes(os.urandom(128))
        socket_path = munge / "munge.socket"
        munge_log = munge / "munged.log"
        cluster.processes["munged"] = daemons.start(
            [
                "munged",
                "-F",
                f"--socket={socket_path}",
                f"--key-file={key}",
                f"--log-file={munge_log}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            munge / "munged.stdout",
        )
        daemons.wait_until(socket_path.exists, 15, "munged", munge / "munged.stdout", cluster.processes["munged"])
        ports = [daemons.free_port() for _ in range(1 + len(NODES))]
        node_lines = "\n".join(NODE_LINE.format(name=name, addr=NODE_ADDR, port=port) for name, port in zip(NODES, ports[1:], strict=True))
        cluster.conf.write_text(
            SLURM_CONF.format(
                controller_port=ports[0], munge_socket=socket_path, folder=folder, node_lines=node_lines, partition=PARTITION, node_list=",".join(NODES)
            )
        )
        cluster.start_controller()
        for name in NODES:
            cluster.start_node(name)
        cluster.wait_idle()
        # slurmctld's scheduler makes its first pass ~3 s after start: a trivial batch job waits that
        # out here (polled: `sbatch --wait` would sleep 2 s, then 8 s more), so tests and benchmarks
        # see the steady-state latency from submission to start (~0.6 s).
        warm_up = cluster.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true", check=True).stdout.strip()
        daemons.wait_until(lambda: cluster.job(warm_up).get("JobState") == "COMPLETED", 60, "a first batch job")
        cluster.wait_idle()
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def slurm_cluster_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """The cluster itself, started once per session; tests use `slurm_cluster`, which heals it after each."""
    for tool in TOOLS:
        require_tool(tool)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm_cluster(slurm_cluster_session: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's two-node cluster, healthy and idle at the start of each test (module docstring)."""
    yield slurm_cluster_session
    slurm_cluster_session.heal()
