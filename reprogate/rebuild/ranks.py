"""The rebuild's ranks: what environment they get, and how the rebuild drives them.

Environment (allowlist, never the runner's): PATH, locale and timezone, device visibility
(CUDA/NVIDIA/ROCR/HIP_VISIBLE_DEVICES), the record's execution.env, torchrun's variables (added
by the launcher), REPROGATE_* for the trace, and PYTHONPATH for the injected runtime. HOME and
TMPDIR point into the work folder, so no credential file under the runner's home is readable by
a path the code would guess. No GITHUB_TOKEN, ACTIONS_* or cloud key reaches training code.

Driving: every rank runs `python -m reprogate.runtime.rank_host CONTROL` (see that module): it
proves itself (the preflight), reports `ready`, and waits for `go.json`. The rebuild reads the
ranks' event files, decides, and writes go.json or `stop`. One mechanism for every launcher,
since the control folder is shared with a container (bind mount) and with cluster nodes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.errors import UsageError
from reprogate.core.fileio import atomic_write, make_folder_for_code, read_written_by_code, tail_written_by_code
from reprogate.core.hijack import hijacking
from reprogate.core.redact import redact
from reprogate.rebuild.launchers.base import Launcher, RankGroup, Shape
from reprogate.rebuild.realizers.base import Realized

PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
PREFLIGHT_STAGES = ("framework-op", "process-group", "collective")
STARTUP_GRACE = 60.0  # starting Python and importing torch (a cold container, a cold cache)
POLL = 0.05
MAX_EVENTS_BYTES = 64 * 1024 * 1024  # a rank's control events: a few lines per stage
MAX_LOG_TAIL_BYTES = 64 * 1024  # what a log tail is read from: its last lines


def rank_environment(record_env: Mapping[str, Any], workdir: Path, runtime: Path, host: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every rank starts with (the launcher adds the per-rank variables)."""
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    return rank_variables(record_env, workdir, runtime, host)


def rank_variables(record_env: Mapping[str, Any], workdir: Path, runtime: Path, host: Mapping[str, str] | None = None) -> dict[str, str]:
    """rank_environment without creating its folders (for manifests rendered, not run). A record
    variable that would run a file in the programs starting the ranks (core/hijack.py) is refused
    here too, for a record that reached the rebuild without validate."""
    refused = hijacking(str(k) for k in record_env)
    if refused:
        raise UsageError(
            f"execution.env sets {', '.join(refused)}: a loader, shell or interpreter start-up variable "
            "(it would run a file in the programs that start the ranks)",
            hint="remove it from the record (`reprogate validate` names its line); a training script that needs one sets it for its own child processes",
        )
    host = os.environ if host is None else host
    env = {k: host[k] for k in PASSED_THROUGH if k in host}
    env.update({k: v for k, v in host.items() if k.startswith("LC_")})
    env.update({"HOME": str(workdir / "home"), "TMPDIR": str(workdir / "tmp"), "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    env.update({str(k): str(v) for k, v in record_env.items()})
    extra = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(runtime) + (os.pathsep + extra if extra else "")
    return env


@dataclass
class StageOutcome:
    """One preflight stage over all ranks."""

    name: str
    status: str = "not-run"  # pass, fail, no-gpu, not-run
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Readiness:
    """How the rank hosts' preflight went."""

    stages: list[StageOutcome] = field(default_factory=lambda: [StageOutcome(n) for n in PREFLIGHT_STAGES])
    failed: str | None = None  # the first failing stage
    detail: str = ""
    infrastructure: bool = False  # could not start at all (torch missing, a rank died at start)
    log_tail: str = ""
    seconds: float = 0.0
    spare_port: int | None = None
    gpu_models: list[str] = field(default_factory=list)  # as the ranks named their GPUs
    probe: dict[str, Any] = field(default_factory=dict)  # rank 0's account of its environment (runtime/probe.py), when asked
    costs: dict[int, dict[str, float]] = field(default_factory=dict)  # rank -> its CPU seconds until ready and its torch import's seconds

    def stage(self, name: str) -> StageOutcome:
        return next(s for s in self.stages if s.name == name)


@dataclass
class Finished:
    """How the entrypoint's run ended on every rank."""

    ok: bool
    seconds: float
    codes: dict[int, int | None]
    detail: str = ""
    failed_rank: int | None = None
    log_tail: str = ""


class RankHosts:
    """Rank hosts for one seed: started through a launcher, driven through the control folder."""

    def __init__(
        self,
        launcher: Launcher,
        realized: Realized,
        shape: Shape,
        *,
        env: Mapping[str, str],
        folder: Path,
        cwd: Path,
        preflight: bool,
        backend: str,
        stage_timeout: float,
        within: Path,
        probe: bool = False,
    ) -> None:
        self.launcher, self.realized, self.shape = launcher, realized, shape
        self.control = folder / "control"
        self.logs = folder / "logs"
        self.within = within  # the work folder: earlier ranks wrote into it, so nothing below it is followed through a link
        make_folder_for_code(self.control, within)
        make_folder_for_code(self.logs, within)
        self.cwd = cwd
        self.preflight = preflight
        self.probe = probe  # rank 0 tells what its environment holds before the preflight
        self.stage_timeout = stage_timeout
        self.env = {**env, "REPROGATE_PREFLIGHT_BACKEND": backend, "REPROGATE_PREFLIGHT_TIMEOUT": str(stage_timeout)}
        self.group: RankGroup | None = None
        self._offsets: dict[int, int] = {}
        self._events: dict[int, list[dict[str, Any]]] = {r: [] for r in range(shape.world_size)}
        self.started = 0.0

    def start(self) -> None:
        atomic_write(self.control / "plan.json", json.dumps({"preflight": self.preflight, "probe": self.probe}) + "\n")
        argv = [self.realized.python, "-m", "reprogate.runtime.rank_host", str(self.control)]
        self.started = time.monotonic()
        self.group = self.launcher.start(self.realized, argv, self.env, self.shape, self.cwd, self.logs)

    # events ----------------------------------------------------------------------------------

    def _read_events(self) -> None:
        for rank in range(self.shape.world_size):
            path = self.control / f"rank{rank}.events.jsonl"
            try:
                data = read_written_by_code(path, MAX_EVENTS_BYTES, within=self.within)  # a rank may have left a link or a FIFO there
            except OSError:
                continue
            if data is None:
                continue
            data = data[self._offsets.get(rank, 0) :]
            complete = data.rfind(b"\n") + 1
            self._offsets[rank] = self._offsets.get(rank, 0) + complete
            for line in data[:complete].splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    self._events[rank].append(event)

    def _status(self, rank: int) -> str:
        """host states: starting, ready, failed, go, stopped."""
        for event in reversed(self._events[rank]):
            if event.get("status") == "fail":
                return "failed"
            if event.get("stage") == "host" and event.get("status") in ("ready", "go", "stopped"):
                return str(event["status"])
        return "starting"

    def log_tail(self, rank: int, lines: int = 20) -> str:
        """The end of a rank's log, read without following a link: the rank may have replaced
        its log (or the folder) with a link to a file of the runner's."""
        path = self.logs / f"rank{rank}.log"
        try:
            text = tail_written_by_code(path, MAX_LOG_TAIL_BYTES, within=self.within).decode(errors="replace")
        except OSError:
            return ""
        return redact("\n".join(text.splitlines()[-lines:]))

    def where(self, rank: int) -> str:
        return self.group.where(rank) if self.group else "?"

    # preflight ---------------------------------------------------------------------------------

    def wait_ready(self) -> Readiness:
        """Until every rank reports ready, a stage fails, a rank dies, or time runs out."""
        assert self.group is not None
        result = Readiness()
        deadline = self.started + STARTUP_GRACE + self.stage_timeout * (len(PREFLIGHT_STAGES) if self.preflight else 1)
        while True:
            self._read_events()
            self._fold_stages(result)
            result.probe = result.probe or self._probe()
            codes = self.group.poll()
            states = {r: self._status(r) for r in range(self.shape.world_size)}
            failed = [r for r, s in states.items() if s == "failed"]
            dead = [r for r, c in codes.items() if c is not None and states[r] not in ("go", "stopped")]
            if failed or dead:
                self._await_probe(result)
                rank = (failed or dead)[0]
                event = next((e for e in reversed(self._events[rank]) if e.get("status") == "fail"), None)
                if event is not None:
                    stage = str(event.get("stage"))
                    result.infrastructure = stage == "startup"
                    result.failed = "framework-op" if stage == "startup" else stage
                    result.detail = f"rank {rank} on {self.where(rank)}: {redact(str(event.get('detail', 'failed')))}"
                else:
                    result.failed = self._current_stage(rank) or "framework-op"
                    result.infrastructure = not self._events[rank]
                    result.detail = f"rank {rank} on {self.where(rank)} {self.group.describe(rank, codes[rank])} before it was ready"
                result.log_tail = self.log_tail(rank)
                self._fold_stages(result)
                result.stage(result.failed).status = "fail"
                break
            if all(s == "ready" for s in states.values()):
                port = next((e.get("spare_port") for e in self._events.get(0, []) if e.get("spare_port")), None)
                result.spare_port = int(port) if isinstance(port, int) else None
                result.gpu_models = sorted({str(e["gpu"]) for events in self._events.values() for e in events if e.get("gpu")})
                result.costs = self._costs()
                break
            if time.monotonic() > deadline:
                late = next(r for r, s in states.items() if s != "ready")
                stage = self._current_stage(late) or "framework-op"
                result.failed = stage
                result.detail = f"rank {late} on {self.where(late)} did not finish {stage} in time"
                result.log_tail = self.log_tail(late)
                result.stage(stage).status = "fail"
                break
            time.sleep(POLL)
        result.seconds = time.monotonic() - self.started
        return result

    def _await_probe(self, result: Readiness, grace: float = 3.0) -> None:
        """Another rank can fail before rank 0 has told its probe (a torch that does not import
        fails in a tenth of a second): give rank 0 a moment, so the report still says what the
        environment held."""
        assert self.group is not None
        until = time.monotonic() + grace
        while self.probe and not result.probe:
            alive = self.group.poll().get(0) is None
            self._read_events()
            result.probe = self._probe()
            if not alive or time.monotonic() > until:
                break
            time.sleep(POLL)

    def _costs(self) -> dict[int, dict[str, float]]:
        """What each rank said its preflight cost: CPU seconds until ready, and the seconds its
        import of torch took (the part the training run would pay anyway)."""
        costs: dict[int, dict[str, float]] = {}
        for rank, events in self._events.items():
            said: dict[str, float] = {}
            for event in events:
                for key in ("cpu_seconds", "import_seconds"):
                    value = event.get(key)
                    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                        said[key] = float(value)
            costs[rank] = said
        return costs

    def _probe(self) -> dict[str, Any]:
        event = next((e for e in self._events[0] if e.get("status") == "probe" and isinstance(e.get("facts"), dict)), None)
        return dict(event["facts"]) if event else {}

    def _current_stage(self, rank: int) -> str | None:
        for event in reversed(self._events[rank]):
            if event.get("stage") in PREFLIGHT_STAGES:
                return str(event["stage"])
        return None

    def _fold_stages(self, result: Readiness) -> None:
        for stage in result.stages:
            ends = [e for r in self._events for e in self._events[r] if e.get("stage") == stage.name and e.get("status") in ("pass", "no-gpu", "fail")]
            if len(ends) == self.shape.world_size or any(e.get("status") == "fail" for e in ends):
                statuses = {e["status"] for e in ends}
                stage.status = "fail" if "fail" in statuses else ("no-gpu" if "no-gpu" in statuses else "pass")
                stage.seconds = max(float(e.get("seconds", 0.0)) for e in ends)
                stage.detail = str(ends[0].get("detail", ""))

    # the run -------------------------------------------------------------------------------------

    def go(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        atomic_write(self.control / "go.json", json.dumps({"argv": argv, "cwd": str(cwd), "env": dict(env)}) + "\n")

    def wait_done(self, timeout: float) -> Finished:
        assert self.group is not None
        began = time.monotonic()
        while True:
            codes = self.group.poll()
            failed = [r for r, c in codes.items() if c not in (None, 0)]
            if failed:
                rank = failed[0]
                return Finished(
                    False,
                    time.monotonic() - began,
                    codes,
                    f"rank {rank} on {self.where(rank)} {self.group.describe(rank, codes[rank])}",
                    rank,
                    self.log_tail(rank),
                )
            if all(c == 0 for c in codes.values()):
                return Finished(True, time.monotonic() - began, codes)
            if time.monotonic() - began > timeout:
                running = [r for r, c in codes.items() if c is None]
                return Finished(
                    False,
                    time.monotonic() - began,
                    codes,
                    f"the run did not finish within {timeout:g} s (rank {running[0]} on {self.where(running[0])} still running)",
                    running[0],
                    self.log_tail(running[0]),
                )
            time.sleep(POLL)

    def stop(self) -> None:
        try:
            (self.control / "stop").touch()
        except OSError:
            pass
        if self.group is not None:
            self.group.stop()
