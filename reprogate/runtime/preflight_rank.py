"""One rank of a preflight: framework op, process group, all-reduce.

Run as `python -m reprogate.runtime.preflight_rank` by `reprogate preflight`, one process per rank,
with the torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and
REPROGATE_PREFLIGHT_BACKEND / REPROGATE_PREFLIGHT_TIMEOUT; it prints one JSON object per line on
stdout as each stage starts and ends. The rebuild's rank host (rank_host.py) runs the same checks
through `run_checks`, reporting to a file instead. The parent enforces the time limits and kills
ranks that stop reporting, so nothing here needs to guard against hanging itself.

Only the standard library and torch are imported: this module runs inside realized environments
where reprogate itself is not installed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from typing import Any

Emit = Callable[..., None]


def emit_stdout(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


class PreflightStageFailed(Exception):
    """A preflight stage failed; the event saying so has been emitted. Carries the rank's exit code.
    Not core.errors.CheckFailed: this module runs where the rest of reprogate is not installed."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def stage(emit: Emit, name: str, rank: int, work: Any, **said: Any) -> Any:
    emit(rank=rank, stage=name, status="start", **said)
    start = time.monotonic()
    try:
        status, detail, value = work()
    except Exception as exc:  # noqa: BLE001 - the failure is the result
        emit(
            rank=rank,
            stage=name,
            status="fail",
            seconds=round(time.monotonic() - start, 3),
            detail=f"{type(exc).__name__}: {exc}"[:500],
            trace=traceback.format_exc(limit=3)[-800:],
        )
        raise PreflightStageFailed(1) from None
    emit(rank=rank, stage=name, status=status, seconds=round(time.monotonic() - start, 3), detail=detail)
    return value


def main() -> None:
    try:
        run_checks(emit_stdout, dict(os.environ))
    except PreflightStageFailed as exc:
        sys.exit(exc.code)


def run_checks(emit: Emit, env: dict[str, str]) -> None:
    """The framework-op, process-group and collective stages for this rank; the group is
    destroyed again at the end, so a training script can form its own afterwards."""
    rank = int(env["RANK"])
    world = int(env["WORLD_SIZE"])
    local_rank = int(env.get("LOCAL_RANK", rank))
    backend = env.get("REPROGATE_PREFLIGHT_BACKEND", "gloo")
    timeout = float(env.get("REPROGATE_PREFLIGHT_TIMEOUT", "30"))
    importing = time.monotonic()
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        emit(rank=rank, stage="startup", status="fail", detail=f"torch cannot be imported: {exc}")
        raise PreflightStageFailed(3) from None
    imported = round(time.monotonic() - importing, 3)  # most of a CPU preflight: said apart from the checks

    def framework_op() -> tuple[str, str, Any]:
        a = torch.arange(16, dtype=torch.float32).reshape(4, 4)
        expected = a @ a.T
        if not torch.cuda.is_available():
            got = (a @ a.T).sum().item()
            if got != expected.sum().item():
                raise RuntimeError(f"CPU matmul gave {got}, expected {expected.sum().item()}")
            return "no-gpu", "no GPU visible; a CPU matmul was checked instead", torch.device("cpu")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        result = (a.to(device) @ a.to(device).T).cpu()
        torch.cuda.synchronize(device)
        if not torch.equal(result, expected):
            raise RuntimeError(f"matmul on {torch.cuda.get_device_name(device)} returned a wrong result")
        return "pass", f"matmul checked on cuda:{device.index} ({torch.cuda.get_device_name(device)})", device

    device = stage(emit, "framework-op", rank, framework_op, import_seconds=imported)
    if backend == "nccl" and device.type != "cuda":
        emit(rank=rank, stage="process-group", status="fail", detail="nccl needs a GPU on every rank; none is visible")
        raise PreflightStageFailed(1)

    def process_group() -> tuple[str, str, None]:
        master = f"tcp://{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
        dist.init_process_group(backend, init_method=master, rank=rank, world_size=world, timeout=timedelta(seconds=timeout))
        return "pass", f"{backend} group of {world} formed (master {env.get('MASTER_ADDR')}:{env.get('MASTER_PORT')})", None

    stage(emit, "process-group", rank, process_group)

    def collective() -> tuple[str, str, None]:
        tensor = torch.full((4,), float(rank + 1), device=device)
        dist.all_reduce(tensor)
        expected = world * (world + 1) / 2
        if not torch.all(tensor.cpu() == expected):
            raise RuntimeError(f"all_reduce gave {tensor.cpu().tolist()}, expected {expected} everywhere")
        dist.barrier()
        dist.destroy_process_group()
        return "pass", f"all_reduce sum {expected:g} correct", None

    stage(emit, "collective", rank, collective)


if __name__ == "__main__":
    main()
