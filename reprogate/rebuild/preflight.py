"""`reprogate preflight`: prove devices, framework and collective work before the big download.

Stages, in order, each with its own time limit and a name a failure is reported under:
  1. devices        every assigned device is visible (NVML, CUDA_VISIBLE_DEVICES, the record's UUIDs)
  2. framework-op   each rank runs a small op on its GPU (on a CPU-only machine: "no-gpu")
  3. process-group  the ranks form a group: the one torchrun set up, or N local ranks
  4. collective     a tiny all-reduce returns the right sum on every rank
Ranks run as child processes (preflight_rank.py) that report each stage as it starts and ends;
this parent owns the clock and kills every rank when a stage overruns, so preflight never hangs
past its limit whatever torch.distributed does.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import load_document
from reprogate.core.ports import free_port
from reprogate.core.processes import end_all
from reprogate.core.timestamps import utc_now

STAGES = ("devices", "framework-op", "process-group", "collective")
STARTUP_GRACE = 20.0  # starting Python and importing torch, before the first stage reports


@dataclass
class PreflightOptions:
    world_size: int | None = None
    backend: str | None = None  # gloo or nccl; default nccl with GPUs, else gloo
    timeout: float = 30.0  # per stage
    record: Path | None = None
    python: str = sys.executable


@dataclass
class Stage:
    name: str
    status: str = "not-run"  # pass, fail, no-gpu, not-run
    seconds: float = 0.0
    detail: str = ""
    ranks: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class PreflightOutcome:
    stages: list[Stage] = field(default_factory=lambda: [Stage(name) for name in STAGES])
    mode: str = "local"
    world_size: int = 0
    backend: str = ""
    started_at: str = ""
    seconds: float = 0.0
    could_not_start: str = ""

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)

    @property
    def failed_stage(self) -> str | None:
        return next((s.name for s in self.stages if s.status == "fail"), None)

    @property
    def exit_code(self) -> ExitCode:
        if self.could_not_start:
            return ExitCode.INFRA
        return ExitCode.FAILED if self.failed_stage else ExitCode.OK

    def as_json(self) -> dict[str, Any]:
        verdict = "error" if self.could_not_start else ("fail" if self.failed_stage else "pass")
        return {
            "apiVersion": "reprogate/v1",
            "kind": "Preflight",
            "verdict": verdict,
            "failed_stage": self.failed_stage,
            "could_not_start": self.could_not_start or None,
            "mode": self.mode,
            "world_size": self.world_size,
            "backend": self.backend,
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "tool": f"reprogate {__version__}",
            "stages": [
                {
                    "name": s.name,
                    "status": s.status,
                    "seconds": round(s.seconds, 3),
                    "detail": s.detail,
                    "ranks": {str(r): v for r, v in sorted(s.ranks.items())},
                }
                for s in self.stages
            ],
        }


def _expected_uuids(record: Path | None) -> list[str]:
    if record is None:
        return []

    data = load_document(record).data
    gpus = (data.get("devices") or {}).get("gpus") or [] if isinstance(data, dict) else []
    return [g["uuid"] for g in gpus if isinstance(g, dict) and isinstance(g.get("uuid"), str)]


def check_devices(record: Path | None) -> tuple[Stage, int]:
    """Stage 1 in this process: (stage, number of GPUs visible to CUDA)."""
    started = time.monotonic()
    stage = Stage("devices")
    expected = _expected_uuids(record)
    visible_env = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no package, no library, no driver
        reason = "nvidia-ml-py is not installed" if isinstance(exc, ImportError) else type(exc).__name__
        stage.seconds = time.monotonic() - started
        if expected:
            stage.status, stage.detail = "fail", f"the record expects {len(expected)} GPU(s); none visible ({reason})"
        else:
            stage.status, stage.detail = "no-gpu", f"no GPU: NVML unavailable ({reason}); stages run on the CPU with gloo"
        return stage, 0
    try:
        count = pynvml.nvmlDeviceGetCount()
        uuids = []
        for i in range(count):
            raw = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))
            uuids.append(raw.decode() if isinstance(raw, bytes) else raw)
    finally:
        pynvml.nvmlShutdown()
    assigned = uuids
    if visible_env is not None:
        wanted = [v.strip() for v in visible_env.split(",") if v.strip()]
        missing = [w for w in wanted if not (w.isdigit() and int(w) < count) and not any(u.startswith(w) for u in uuids)]
        if missing:
            stage.status, stage.detail = "fail", f"CUDA_VISIBLE_DEVICES names {missing}, which NVML does not see (it sees {count})"
            stage.seconds = time.monotonic() - started
            return stage, 0
        assigned = [uuids[int(w)] if w.isdigit() else next(u for u in uuids if u.startswith(w)) for w in wanted]
    absent = [u for u in expected if u not in uuids]
    stage.seconds = time.monotonic() - started
    if absent:
        stage.status, stage.detail = "fail", f"{len(absent)} GPU(s) of the record are not on this machine: {', '.join(absent[:4])}"
    elif not assigned:
        stage.status, stage.detail = (
            ("fail", f"the record expects {len(expected)} GPU(s); none assigned")
            if expected
            else ("no-gpu", "no GPU assigned; stages run on the CPU with gloo")
        )
    else:
        stage.status, stage.detail = "pass", f"{len(assigned)} GPU(s) visible: {', '.join(assigned)}"
    return stage, len(assigned)


def run_preflight(options: PreflightOptions) -> PreflightOutcome:
    report = PreflightOutcome(started_at=utc_now())
    started = time.monotonic()
    try:
        devices, gpus = check_devices(options.record)
    except Exception as exc:  # noqa: BLE001 - an unreadable record, for one
        report.could_not_start = f"devices: {type(exc).__name__}: {exc}"
        report.seconds = time.monotonic() - started
        return report
    report.stages[0] = devices
    joined = all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR"))
    report.mode = "torchrun" if joined else "local"
    report.backend = options.backend or ("nccl" if gpus else "gloo")
    if devices.status == "fail":
        report.seconds = time.monotonic() - started
        return report
    if joined:
        report.world_size = int(os.environ["WORLD_SIZE"])
        ranks = {int(os.environ["RANK"]): dict(os.environ)}
    else:
        report.world_size = options.world_size or (gpus if gpus else 2)
        port = free_port()
        ranks = {}
        for rank in range(report.world_size):
            env = dict(os.environ)
            env.update(
                RANK=str(rank),
                WORLD_SIZE=str(report.world_size),
                LOCAL_RANK=str(rank),
                LOCAL_WORLD_SIZE=str(report.world_size),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
            )
            env.setdefault("OMP_NUM_THREADS", "1")
            ranks[rank] = env
    _run_ranks(report, ranks, options)
    if not report.failed_stage and not report.could_not_start:
        for stage in report.stages[1:]:
            if stage.status == "not-run":  # every rank exited cleanly without reporting it
                stage.status, stage.detail = "fail", "no rank reported this stage"
                break
    report.seconds = time.monotonic() - started
    return report


def _run_ranks(report: PreflightOutcome, ranks: dict[int, dict[str, str]], options: PreflightOptions) -> None:
    procs: dict[int, subprocess.Popen[bytes]] = {}
    selector = selectors.DefaultSelector()
    buffers: dict[int, bytes] = {}
    current: dict[int, tuple[str, float]] = {}  # rank -> (stage, deadline)
    began: dict[int, float] = {}  # rank -> when its current stage started
    try:
        for rank, env in ranks.items():
            env = {**env, "REPROGATE_PREFLIGHT_BACKEND": report.backend, "REPROGATE_PREFLIGHT_TIMEOUT": str(options.timeout)}
            try:
                procs[rank] = subprocess.Popen(
                    [options.python, "-m", "reprogate.runtime.preflight_rank"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
                )
            except OSError as exc:
                report.could_not_start = f"cannot start rank {rank}: {exc}"
                return
            stdout = procs[rank].stdout
            assert stdout is not None  # started with stdout=PIPE
            selector.register(stdout, selectors.EVENT_READ, rank)
            buffers[rank] = b""
            current[rank] = ("startup", time.monotonic() + STARTUP_GRACE + options.timeout)
            began[rank] = time.monotonic()
        running = set(procs)
        while running:
            now = time.monotonic()
            overdue = [(r, s) for r, (s, d) in current.items() if r in running and now > d]
            if overdue:
                rank, name = overdue[0]
                report.stage("framework-op" if name == "startup" else name).seconds = now - began.get(rank, now)
                _fail(
                    report,
                    name,
                    rank,
                    f"rank {rank} did not finish {name} within {options.timeout:g} s"
                    if name != "startup"
                    else f"rank {rank} did not start within {STARTUP_GRACE + options.timeout:g} s",
                )
                return
            wait = max(0.0, min(d for r, (_, d) in current.items() if r in running) - now)
            for key, _ in selector.select(timeout=min(wait, 0.5)):
                rank = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    running.discard(rank)
                    code = procs[rank].wait()
                    name = current[rank][0]
                    if code != 0 and report.failed_stage is None and not report.could_not_start:
                        stderr = procs[rank].stderr
                        tail = (stderr.read() if stderr else b"").decode(errors="replace").strip().splitlines()[-3:]
                        _fail(
                            report,
                            name if name != "startup" else "framework-op",
                            rank,
                            f"rank {rank} exited with code {code} during {name}: {' | '.join(tail)}"[:500],
                        )
                    if report.failed_stage or report.could_not_start:
                        return
                    continue
                buffers[rank] += chunk
                while b"\n" in buffers[rank]:
                    line, buffers[rank] = buffers[rank].split(b"\n", 1)
                    event = json.loads(line)
                    if event.get("status") == "start":
                        began[rank] = time.monotonic()
                    _event(report, event, current, options)
                    if report.failed_stage or report.could_not_start:
                        return
    finally:
        end_all(procs.values())
        for proc in procs.values():
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()
        selector.close()


def _event(report: PreflightOutcome, event: dict[str, Any], current: dict[int, tuple[str, float]], options: PreflightOptions) -> None:
    rank, name, status = int(event["rank"]), event["stage"], event["status"]
    if name == "startup":
        report.could_not_start = event.get("detail", "a rank could not start")
        return
    stage = report.stage(name)
    if status == "start":
        current[rank] = (name, time.monotonic() + options.timeout)
        return
    current[rank] = (name, float("inf"))
    stage.ranks[rank] = {"status": status, "seconds": event.get("seconds", 0.0), "detail": event.get("detail", "")}
    stage.seconds = max(stage.seconds, float(event.get("seconds", 0.0)))
    if status == "fail":
        _fail(report, name, rank, f"rank {rank}: {event.get('detail', '')}")
        return
    if len(stage.ranks) == report.world_size or (report.mode == "torchrun" and len(stage.ranks) == 1):
        statuses = {r["status"] for r in stage.ranks.values()}
        stage.status = "no-gpu" if statuses == {"no-gpu"} else ("pass" if statuses <= {"pass", "no-gpu"} else "fail")
        stage.detail = "; ".join(sorted({r["detail"] for r in stage.ranks.values()}))[:500]


def _fail(report: PreflightOutcome, name: str, rank: int, detail: str) -> None:
    stage = report.stage("framework-op" if name == "startup" else name)
    stage.status, stage.detail = "fail", detail
    stage.ranks.setdefault(rank, {"status": "fail", "detail": detail})


def render_text(report: PreflightOutcome) -> str:
    lines = [f"preflight ({report.mode}, {report.world_size} rank(s), {report.backend}): {report.as_json()['verdict']} in {report.seconds:.1f} s"]
    for stage in report.stages:
        lines.append(f"  {stage.name:<14} {stage.status:<8} {stage.seconds:6.2f} s  {stage.detail}")
    if report.could_not_start:
        lines.append(f"  could not start: {report.could_not_start}")
    return "\n".join(lines)
