"""Ranks on a Slurm cluster: one job of the record's nodes x ranks per node, ranks started by srun.

- `admit`, before the first stage: the controller answers (else exit 3), and the partition
  (SBATCH_PARTITION, else the cluster's default) holds at least the record's node count (else
  exit 2, before anything is submitted or realized). Inside an allocation, the allocation must.
- `start` writes two scripts beside the ranks' logs, in the work folder every node shares:
  `job.sh` finds the first node's address (its NodeAddr: node names need not resolve) and a
  free port there, then `exec srun`s one task per rank, each task's output in logs/rank<R>.log;
  `rank.sh` is one rank: torchrun's variables from Slurm's (RANK=SLURM_PROCID,
  LOCAL_RANK=SLURM_LOCALID, GROUP_RANK=NODE_RANK=SLURM_NODEID), where it runs
  (logs/rank<R>.place), the realized environment's command line for the rank host, and its
  exit code (logs/rank<R>.exit). `job.sh` is submitted with sbatch (--no-requeue: a node
  failure fails the rebuild instead of queueing it again; --time from the rebuild's limits, so an
  allocation outlives a killed rebuild by minutes at most), and `start` returns once it runs.
  Inside an allocation (SLURM_JOB_ID set: reprogate in a batch script or an salloc shell),
  nothing is submitted: job.sh runs here and its srun is a step of that allocation.
- The group's state: exit codes from the rank files; the job's from `scontrol show job` (at most
  once a second), or `sacct` once the controller has forgotten it; when the job ends early, the
  states of its nodes, so a node failure is named ("rank 1 on node n2 was lost with its node").
- `stop`: a job whose ranks have all exited is given COMPLETION_GRACE to end by itself, so
  accounting says COMPLETED; otherwise scancel (only the step, inside someone else's
  allocation), then wait until Slurm has released the allocation.

The ranks' environment is the rebuild's allowlisted one, handed to sbatch, which exports it to
the job; device visibility is Slurm's to set (GRES), so the runner's is not passed on.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.fileio import atomic_write, read_written_by_code
from reprogate.core.redact import redact
from reprogate.rebuild.launchers.base import Shape
from reprogate.rebuild.launchers.rank_reports import Placement, parse_exit_code, parse_placement
from reprogate.rebuild.realizers.base import Realized

SMALL_FILE_BYTES = 64 * 1024  # a rank's exit code or place file: one line

NAME = "slurm"
STATE_INTERVAL = 1.0  # seconds between scontrol calls: the rebuild polls its ranks 20 times a second
CLIENT_TIMEOUT = 60.0  # a Slurm client command that takes longer is a controller in trouble
QUEUE_TIMEOUT = 3600.0  # default wait for the allocation (REPROGATE_SLURM_QUEUE_TIMEOUT)
FILE_GRACE = 5.0  # a shared file system may show a rank's exit file a little after the job ends
RELEASE_TIMEOUT = 60.0  # how long `stop` waits for Slurm to release the allocation
COMPLETION_GRACE = 10.0  # how long a job whose ranks have all exited gets to end by itself before `stop` cancels it
CONTROLLER_GRACE = 120.0  # a controller that stops answering mid-run (a failover) is waited for this long
PER_TASK = ("RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")
VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}
NEVER_STARTS = {
    "PartitionNodeLimit",
    "PartitionTimeLimit",
    "PartitionDown",
    "PartitionInactive",
    "BadConstraints",
    "InvalidAccount",
    "InvalidQOS",
    "AssocMaxNodesPerJobLimit",
    "QOSMaxNodePerJobLimit",
    "ReqNodeNotAvail, UnavailableNodes",
}
SICK_NODE = ("DOWN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "REBOOT")


class SlurmUnreachable(InfrastructureError):
    """A Slurm client command failed: the controller does not answer, or refused the request."""


def client(*argv: str, env: Mapping[str, str] | None = None, timeout: float = CLIENT_TIMEOUT) -> str:
    """Run a Slurm client command; its stdout, or SlurmUnreachable with Slurm's own words."""
    conf = (env if env is not None else os.environ).get("SLURM_CONF")
    if conf and not Path(conf).is_file():
        # Slurm's clients retry a missing configuration file for 60 s before they give up
        raise SlurmUnreachable(
            f"SLURM_CONF names {conf}, which is not a file: no Slurm client can read the cluster's configuration",
            hint="point SLURM_CONF at the cluster's slurm.conf (or unset it to use /etc/slurm/slurm.conf)",
        )
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL, check=False
        )
    except FileNotFoundError:
        raise InfrastructureError(
            f"{argv[0]} is not installed here; the slurm launcher runs Slurm's client commands (sbatch, srun, scontrol, scancel)"
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmUnreachable(f"`{' '.join(argv[:3])}` did not answer within {timeout:g} s: the Slurm controller is not responding") from None
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split())[-400:] or f"exit {done.returncode}"
        raise SlurmUnreachable(f"`{' '.join(argv[:3])}` failed: {redact(said)}")
    return done.stdout


def fields(line: str) -> dict[str, str]:
    """Slurm's one-line `Key=Value Key=Value` form as a dict; a word without `=` continues the
    value before it (Reason and Command values may hold spaces)."""
    out: dict[str, str] = {}
    key = None
    for word in line.split():
        name, sep, value = word.partition("=")
        if sep and name and (name[0].isalpha()) and all(c.isalnum() or c in "_:/" for c in name):
            key = name
            out[key] = value
        elif key is not None:
            out[key] += " " + word
    return out


def hostnames(nodelist: str, env: Mapping[str, str] | None = None) -> list[str]:
    """A node list (`n[1-2],gpu07`) expanded by Slurm itself."""
    if not nodelist or nodelist in ("(null)", "None"):
        return []
    return client("scontrol", "show", "hostnames", nodelist, env=env).split()


def partition(name: str | None) -> dict[str, str]:
    """`scontrol show partition` of the named partition, else of the cluster's default one."""
    text = client("scontrol", "show", "partition", "-o", *([name] if name else []))
    found = [fields(line) for line in text.splitlines() if line.strip()]
    if name:
        return found[0] if found else {}
    default = [p for p in found if p.get("Default") == "YES"]
    return (default or found or [{}])[0]


def inside_allocation(env: Mapping[str, str] | None = None) -> str | None:
    """The job ID of the allocation reprogate runs in, if any."""
    env = os.environ if env is None else env
    return env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or None


# the scripts ------------------------------------------------------------------------------------

RANK_SCRIPT = """\
#!/bin/sh
# One rank of a reprogate rebuild on its Slurm node, started by srun (written by reprogate).
# torchrun's variables from Slurm's, where the rank runs, then the rank host; its exit code is
# left beside its log, so the rebuild knows how each rank ended.
RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID GROUP_RANK=$SLURM_NODEID NODE_RANK=$SLURM_NODEID
export RANK LOCAL_RANK GROUP_RANK NODE_RANK
logs={logs}
printf '{{"rank": %s, "node": "%s", "node_rank": %s, "local_rank": %s, "job": "%s", "step": "%s"}}\\n' \\
  "$RANK" "$SLURMD_NODENAME" "$SLURM_NODEID" "$SLURM_LOCALID" "$SLURM_JOB_ID" "$SLURM_STEP_ID" > "$logs/rank$RANK.place.tmp" \\
  && mv "$logs/rank$RANK.place.tmp" "$logs/rank$RANK.place"
cd {cwd} || exit 3
{command}
code=$?
printf '%s\\n' "$code" > "$logs/rank$RANK.exit.tmp" && mv "$logs/rank$RANK.exit.tmp" "$logs/rank$RANK.exit"
exit "$code"
"""

JOB_SCRIPT = """\
#!/bin/sh
# The ranks of a reprogate rebuild: one srun step, {nodes} node(s) x {per_node} rank(s) (written by reprogate).
# Rendezvous on the first node of the allocation, by its NodeAddr (node names need not resolve).
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
MASTER_ADDR=$(scontrol show node -o "$first" | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p')
[ -n "$MASTER_ADDR" ] || MASTER_ADDR=$first
# A port free on the first node, asked of its kernel where this script runs there; else one
# derived from the job ID (what Slurm recipes for torchrun do).
MASTER_PORT=""
if [ "${{SLURMD_NODENAME:-$first}}" = "$first" ]; then
  for py in {pythons}; do
    MASTER_PORT=$("$py" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])' 2>/dev/null) && break
  done
fi
[ -n "$MASTER_PORT" ] || MASTER_PORT=$((20000 + ${{SLURM_JOB_ID:-0}} % 20000))
export MASTER_ADDR MASTER_PORT
echo "reprogate: $SLURM_JOB_NUM_NODES node(s) $SLURM_JOB_NODELIST, rendezvous $MASTER_ADDR:$MASTER_PORT"
exec srun --nodes={nodes} --ntasks={world} --ntasks-per-node={per_node} --kill-on-bad-exit=1 --export=ALL --input=none \\
  --job-name=reprogate-ranks --output={logs}/rank%t.log {rank_script}
"""


def rank_script(realized: Realized, argv: list[str], env: Mapping[str, str], cwd: Path, logs: Path) -> str:
    line = realized.command(argv, env, cwd, inherit=PER_TASK)
    return RANK_SCRIPT.format(logs=shlex.quote(str(logs)), cwd=shlex.quote(str(cwd)), command=shlex.join(line))


def job_script(realized: Realized, shape: Shape, logs: Path, rank_path: Path) -> str:
    pythons = [realized.python] if realized.python.startswith("/") else []
    return JOB_SCRIPT.format(
        nodes=shape.nodes,
        per_node=shape.ranks_per_node,
        world=shape.world_size,
        logs=shlex.quote(str(logs)),
        rank_script=shlex.join(["sh", str(rank_path)]),
        pythons=" ".join(shlex.quote(p) for p in [*pythons, "python3"]),
    )


def job_environment(env: Mapping[str, str], realized: Realized, host: Mapping[str, str] | None = None) -> dict[str, str]:
    """What sbatch (or srun) is started with, and so what the job exports to every task: the
    ranks' environment; Slurm's client settings (SLURM_CONF, SBATCH_*); what the realized
    environment's command line needs to start (an engine CLI's socket); no device visibility."""
    host = os.environ if host is None else host
    out = {k: v for k, v in env.items() if k not in VISIBILITY}
    out.update({k: v for k, v in host.items() if k == "SLURM_CONF" or k.startswith("SBATCH_")})
    out.update({k: host[k] for k in getattr(realized, "command_environment", ()) if k in host})
    return out


# the group ---------------------------------------------------------------------------------------


class SlurmGroup:
    """The ranks of one rebuild as a Slurm job (or a step of the allocation reprogate runs in)."""

    def __init__(self, shape: Shape, logs: Path, env: Mapping[str, str], job_id: str, step: subprocess.Popen[bytes] | None = None) -> None:
        self.shape, self.logs, self.env = shape, logs, dict(env)
        self.job_id = job_id
        self.step = step  # inside an allocation: our srun, which the group owns
        self.job: dict[str, str] = {}
        self.node_list: list[str] = []
        self.sick: dict[str, str] = {}  # node -> its state, when the job ended early
        self.ended_at: float | None = None
        self._checked = 0.0
        self._unreachable_since: float | None = None
        self._lost: dict[int, str] = {}
        self._stopped = False
        self._previous_sigterm: Any = None
        self._guard_sigterm()

    # what Slurm says -------------------------------------------------------------------------

    def refresh(self, force: bool = False) -> dict[str, str]:
        """The job's state from the controller, at most once per STATE_INTERVAL."""
        now = time.monotonic()
        if not force and now - self._checked < STATE_INTERVAL:
            return self.job
        self._checked = now
        try:
            text = client("scontrol", "show", "job", "-o", self.job_id, env=self.env)
            self.job = fields(text.splitlines()[0]) if text.strip() else self.job
            self._unreachable_since = None
        except SlurmUnreachable as exc:
            if "Invalid job id" in exc.message:
                self.job = self._from_accounting() or {"JobState": "COMPLETED" if self._all_exit_files() else "UNKNOWN"}
            elif force or now - (self._unreachable_since or now) > CONTROLLER_GRACE:
                raise
            else:  # the ranks' own files still tell how they end; the job's state can wait for the controller
                self._unreachable_since = self._unreachable_since or now
        if not self.node_list and self.job.get("NodeList") not in (None, "", "(null)"):
            self.node_list = hostnames(self.job["NodeList"], env=self.env)
        return self.job

    def _from_accounting(self) -> dict[str, str]:
        """A finished job the controller forgot, from sacct (slurmdbd), else the completion log."""
        for extra in ((), ("--completion",)):
            try:
                text = client("sacct", *extra, "-j", self.job_id.split(".")[0], "-X", "-n", "-P", "-o", "JobID,State,ExitCode,NodeList", env=self.env)
            except SlurmUnreachable:
                continue
            for line in text.splitlines():
                parts = line.split("|")
                if len(parts) == 4 and parts[0] == self.job_id.split(".")[0]:
                    return {"JobState": parts[1].split()[0], "ExitCode": parts[2], "NodeList": parts[3]}
        return {}

    @property
    def state(self) -> str:
        return self.job.get("JobState", "PENDING")

    def running_or_done(self) -> bool:
        return self.state not in ("PENDING", "CONFIGURING", "REQUEUED", "")

    # RankGroup ---------------------------------------------------------------------------------

    def _small_file(self, name: str) -> str | None:
        """A file a rank's job step wrote into the shared logs folder (its exit code, its place),
        read without following a link: the rank could have put one there to a file of the runner's."""
        try:
            data = read_written_by_code(self.logs / name, SMALL_FILE_BYTES, within=self.logs.parent)
        except OSError:
            return None
        return None if data is None else data.decode("utf-8", "replace")

    def _exit_code(self, rank: int) -> int | None:
        return parse_exit_code(self._small_file(f"rank{rank}.exit"))

    def _all_exit_files(self) -> bool:
        return all(self._exit_code(r) is not None for r in range(self.shape.world_size))

    def _placed(self) -> dict[int, Placement]:
        reports = {rank: parse_placement(self._small_file(f"rank{rank}.place")) for rank in range(self.shape.world_size)}
        return {rank: placed for rank, placed in reports.items() if placed is not None}

    def placement(self) -> dict[int, str]:
        """Where each rank ran: as it reported, else Slurm's block distribution over the job's nodes."""
        placed = {r: p.node for r, p in self._placed().items() if p.node is not None}
        for rank in range(self.shape.world_size):
            index = rank // self.shape.ranks_per_node
            if rank not in placed and index < len(self.node_list):
                placed[rank] = self.node_list[index]
        return placed

    @property
    def nodes(self) -> list[str]:
        placed = self.placement()
        ordered = [placed[r] for r in sorted(placed)]
        return list(dict.fromkeys(ordered)) or list(self.node_list)

    def where(self, rank: int) -> str:
        node = self.placement().get(rank)
        return f"node {node}" if node else f"Slurm job {self.job_id} (not placed yet)"

    def describe(self, rank: int, code: int | None) -> str:
        return self._lost.get(rank) or f"exited with code {code}"

    def poll(self) -> dict[int, int | None]:
        codes = {rank: self._exit_code(rank) for rank in range(self.shape.world_size)}
        if all(c is not None for c in codes.values()):
            return codes
        job = self.refresh()
        step_over = self.step is not None and self.step.poll() is not None
        if job.get("JobState") in ENDED or step_over:
            self.ended_at = self.ended_at or time.monotonic()
            if time.monotonic() - self.ended_at < FILE_GRACE:
                return codes  # its exit files may still be on their way through the shared file system
            self._explain_end(codes)
            lost = [r for r, c in codes.items() if c is None and r in self._lost]
            for rank, code in codes.items():
                if code is None and (rank in lost or not lost):  # with a node lost, its ranks are the news; the others fell with them
                    codes[rank] = 137 if rank in self._lost else 1
                    self._lost.setdefault(rank, self._ended_words())
        return codes

    def _explain_end(self, codes: dict[int, int | None]) -> None:
        """The job (or step) ended while some ranks had not: which of its nodes are unwell."""
        if self.sick or not self.node_list:
            return
        try:
            text = client("scontrol", "show", "node", "-o", ",".join(self.node_list), env=self.env)
        except SlurmUnreachable:
            return
        for line in text.splitlines():
            node = fields(line)
            if any(word in node.get("State", "") for word in SICK_NODE):
                self.sick[node.get("NodeName", "?")] = node.get("State", "?") + (f" ({node['Reason']})" if node.get("Reason") else "")
        placed = self.placement()
        for rank, code in codes.items():
            if code is None and placed.get(rank) in self.sick:
                self._lost[rank] = (
                    f"was lost with its node: Slurm job {self.job_id} ended {self.state}{self._reason()}, node {placed[rank]} is {self.sick[placed[rank]]}"
                )

    def _reason(self) -> str:
        reason = self.job.get("Reason")
        return f" ({reason})" if reason and reason != "None" else ""

    def _ended_words(self) -> str:
        if self.step is not None and self.step.poll() is not None and self.state not in ENDED:
            return f"ended without an exit code: its srun step in allocation {self.job_id} exited with {self.step.poll()} (see logs/job.log)"
        return f"ended without an exit code: Slurm job {self.job_id} ended {self.state}{self._reason()} (see logs/job.log)"

    def stop(self) -> None:
        """Cancel the job (or our step) and wait until Slurm has released it. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._all_exit_files() and self._ends_by_itself():
                return  # a finished job stays COMPLETED in accounting, not CANCELLED by its own launcher
            if self.step is None:
                _cancel(self.job_id, self.env)
                self._wait_released()
            else:
                steps = {p.step for p in self._placed().values() if p.step is not None}
                for step in steps:
                    _cancel(f"{self.job_id}.{step}", self.env)
                if self.step.poll() is None:
                    self.step.terminate()
                    try:
                        self.step.wait(10)
                    except subprocess.TimeoutExpired:
                        self.step.kill()
                        self.step.wait()
        finally:
            self._restore_sigterm()

    def _ends_by_itself(self) -> bool:
        """Every rank has exited: the job (or our step) ends within COMPLETION_GRACE unless
        something holds it (an epilogue, a task that outlives its rank)."""
        deadline = time.monotonic() + COMPLETION_GRACE
        while time.monotonic() < deadline:
            if self.step is not None:
                if self.step.poll() is not None:
                    return True
            else:
                try:
                    state = self.refresh(force=True).get("JobState", "")
                except SlurmUnreachable:
                    return False
                if state in ENDED or state == "UNKNOWN":
                    return True
            time.sleep(0.2)
        return False

    def _wait_released(self) -> None:
        deadline = time.monotonic() + RELEASE_TIMEOUT
        while time.monotonic() < deadline:
            try:
                state = self.refresh(force=True).get("JobState", "")
            except SlurmUnreachable:
                return  # nothing more to learn; the cancel was sent (or the controller is down)
            if state in ENDED or state == "UNKNOWN":
                return
            time.sleep(0.2)

    # a rebuild killed by SIGTERM (a cancelled CI job) still cancels its allocation --------------

    def _guard_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous_sigterm = signal.getsignal(signal.SIGTERM)

        def cancel_then_exit(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")  # unwinds through the rebuild's finally blocks, which stop the group

        signal.signal(signal.SIGTERM, cancel_then_exit)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None


def _cancel(job: str, env: Mapping[str, str]) -> None:
    try:
        client("scancel", job, env=env)
    except SlurmUnreachable:
        pass  # already finished, or the controller is gone: the job's --time limit ends it then


# the launcher -------------------------------------------------------------------------------------


class SlurmLauncher:
    name = NAME
    ranks_run_here = False

    def admit(self, shape: Shape) -> None:
        allocation = inside_allocation()
        if allocation:
            have = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
            if shape.nodes > have:
                raise UsageError(
                    f"the record's shape is {shape.nodes} node(s) x {shape.ranks_per_node} "
                    f"rank(s); the allocation {allocation} reprogate runs in has {have} node(s)",
                    hint=(
                        f"run the rebuild in an allocation of {shape.nodes} nodes (sbatch -N "
                        f"{shape.nodes}), or outside one, where reprogate submits its own job"
                    ),
                )
            return
        wanted = os.environ.get("SBATCH_PARTITION", "").split(",")[0] or None
        found = partition(wanted)
        if not found:
            raise UsageError(f"Slurm has no partition {wanted!r}" if wanted else "Slurm reports no partition", hint="set SBATCH_PARTITION to one `sinfo` lists")
        name = found.get("PartitionName", "?")
        total = int(found.get("TotalNodes", "0") or 0)
        limit = found.get("MaxNodes", "UNLIMITED")
        if shape.nodes > total or (limit.isdigit() and shape.nodes > int(limit)):
            most = min(total, int(limit)) if limit.isdigit() else total
            raise UsageError(
                f"the record asks for {shape.nodes} node(s); Slurm partition {name} has {most}: rejected before submission",
                hint="a rebuild replays the recorded shape; choose a partition with enough nodes (SBATCH_PARTITION)",
            )

    def start(self, realized: Realized, argv: list[str], env: Mapping[str, str], shape: Shape, cwd: Path, logs: Path) -> SlurmGroup:
        static = {**env, "WORLD_SIZE": str(shape.world_size), "LOCAL_WORLD_SIZE": str(shape.ranks_per_node)}
        logs.mkdir(parents=True, exist_ok=True)
        rank_path, job_path = logs / "rank.sh", logs / "job.sh"
        atomic_write(rank_path, rank_script(realized, argv, static, cwd, logs))
        atomic_write(job_path, job_script(realized, shape, logs, rank_path))
        submit_env = job_environment(static, realized)
        allocation = inside_allocation()
        if allocation:
            return self._step(allocation, shape, logs, submit_env, job_path, cwd)
        return self._submit(shape, logs, submit_env, job_path, cwd)

    def _submit(self, shape: Shape, logs: Path, env: dict[str, str], job_path: Path, cwd: Path) -> SlurmGroup:
        options = [
            "--parsable",
            "--no-requeue",
            f"--nodes={shape.nodes}",
            f"--ntasks-per-node={shape.ranks_per_node}",
            "--job-name=reprogate-rebuild",
            f"--chdir={cwd}",
            f"--output={logs / 'job.log'}",
            "--export=ALL",
        ]
        if shape.gpus_per_node:
            options.append(f"--gres=gpu:{shape.gpus_per_node}")
        if shape.time_limit and "SBATCH_TIMELIMIT" not in env:
            options.append(f"--time={max(1, int(shape.time_limit // 60) + 1)}")
        job_id = client("sbatch", *options, str(job_path), env=env).strip().split(";")[0]
        if not job_id.isdigit():
            raise SlurmUnreachable(f"sbatch answered {job_id!r}, not a job ID")
        group = SlurmGroup(shape, logs, env, job_id)
        try:
            self._wait_running(group)
        except BaseException:
            group.stop()
            raise
        return group

    @staticmethod
    def _wait_running(group: SlurmGroup) -> None:
        """Until the job has its nodes; a job that can never start, or waits too long, is cancelled."""
        limit = float(os.environ.get("REPROGATE_SLURM_QUEUE_TIMEOUT") or QUEUE_TIMEOUT)
        deadline = time.monotonic() + limit
        while True:
            job = group.refresh(force=True)
            if group.running_or_done():
                return
            reason = job.get("Reason", "")
            if reason in NEVER_STARTS:
                raise UsageError(f"Slurm job {group.job_id} cannot start: {reason}", hint="the partition's limits do not admit the record's shape")
            if time.monotonic() > deadline:
                raise InfrastructureError(
                    f"Slurm job {group.job_id} waited {limit:g} s in the queue ({reason or 'no reason given'}); cancelled",
                    hint="raise REPROGATE_SLURM_QUEUE_TIMEOUT, or rebuild when the partition has room",
                )
            time.sleep(0.2)

    @staticmethod
    def _step(allocation: str, shape: Shape, logs: Path, env: dict[str, str], job_path: Path, cwd: Path) -> SlurmGroup:
        step_env = {**env, **{k: v for k, v in os.environ.items() if k.startswith("SLURM_")}}
        with open(logs / "job.log", "ab") as out:
            step = subprocess.Popen(
                ["sh", str(job_path)], cwd=cwd, env=step_env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        group = SlurmGroup(shape, logs, step_env, allocation, step=step)
        group.refresh(force=True)
        return group


__all__ = ["NAME", "SlurmGroup", "SlurmLauncher", "client", "fields", "hostnames", "inside_allocation", "job_environment", "job_script", "rank_script"]
