"""One rank of a rebuild: preflight first, then, when told to, the record's entrypoint.

`reprogate rebuild` starts this (through a launcher, inside the realized environment) as
`python -m reprogate.runtime.rank_host CONTROL_DIR`, once per rank. Why one process for both:
the preflight proves the rank's devices, framework and collective before any data is fetched,
and the import of torch it pays for is kept, so the training script starts warm instead of
importing torch a second time (a second or more per rank, most of a small rebuild's overhead).

The conversation with the rebuild runs through files in CONTROL_DIR, which every launcher can
share (a local folder, a bind mount into a container, a shared folder on a cluster):

  plan.json                 written by the rebuild: {"preflight": bool, "probe": bool}
  rank<R>.events.jsonl      written here: rank 0's probe of its environment (when asked),
                            preflight stage events, then {"ready"} or a failure
  go.json                   written by the rebuild: {"argv", "cwd", "env"} for the entrypoint
  stop                      written by the rebuild: leave without running anything

Python entrypoints (`python script.py ...`, `python -m module ...`) run in this process with
runpy, as `python` itself would run them; anything else replaces this process (os.execvpe).
Only the standard library (and torch, inside the checks) is imported: reprogate is not installed
in the realized environment, this package is injected read-only beside the training code.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any

POLL = 0.02
WAIT_LIMIT = 24 * 3600.0  # the rebuild kills ranks it no longer needs; this only stops orphans


class Events:
    """Appends one JSON object per line to this rank's events file, flushed at once."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "a", encoding="utf-8")

    def __call__(self, **fields: Any) -> None:
        self.fh.write(json.dumps(fields) + "\n")
        self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def _wait_for_orders(control: Path) -> dict[str, Any] | None:
    """The go.json order, or None when told to stop (or orphaned)."""
    go, stop = control / "go.json", control / "stop"
    deadline = time.monotonic() + WAIT_LIMIT
    while time.monotonic() < deadline:
        if stop.exists():
            return None
        if go.exists():
            try:
                told: dict[str, Any] | None = json.loads(go.read_text(encoding="utf-8"))
                return told
            except ValueError:  # being written; it is renamed into place, but be patient anyway
                pass
        time.sleep(POLL)
    return None


def _python_names() -> set[str]:
    return {"python", "python3", f"python{sys.version_info.major}.{sys.version_info.minor}", os.path.basename(sys.executable)}


def run_entrypoint(argv: list[str]) -> None:
    """Run argv the way a shell would, in this process when it is a Python entrypoint; a torchrun
    command as the worker torchrun would start on this rank (see runtime/entry_command.py)."""
    argv = as_torchrun_worker(argv)
    if argv and os.path.basename(argv[0]) in _python_names() and len(argv) >= 2:
        if argv[1] == "-m" and len(argv) >= 3:
            sys.argv = [argv[2], *argv[3:]]
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
            return
        if not argv[1].startswith("-"):
            sys.argv = argv[1:]
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[1])))
            runpy.run_path(argv[1], run_name="__main__")
            return
    sys.stdout.flush()
    sys.stderr.flush()
    if argv and os.path.basename(argv[0]) in _python_names():  # `python -c ...`, `python -u x.py`: this environment's interpreter, PATH or not
        argv = [sys.executable, *argv[1:]]
    os.execvpe(argv[0], argv, dict(os.environ))


def as_torchrun_worker(argv: list[str]) -> list[str]:
    """`torchrun [options] train.py ARGS` as what torchrun runs on each of its workers: `python
    train.py ARGS` (`python -m MODULE ARGS`, or the program itself with --no-python), with
    OMP_NUM_THREADS=1 when torchrun would set it (more than one process per node, none set).
    This rank already is one of those workers: the launcher started nproc-per-node x nnodes
    ranks with torchrun's variables. A torchrun command that asks for another number of ranks
    than this rebuild runs is left as it is (it then starts its own workers, as before)."""
    from reprogate.runtime.entry_command import EntryCommandError, read_entry

    try:
        command = read_entry(argv, tuple(_python_names()))
    except EntryCommandError:
        return argv
    if command.launcher != "torchrun" or command.world_size != int(os.environ.get("WORLD_SIZE", "1")):
        return argv
    if (command.nproc_per_node or 1) > 1 and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = "1"
    if command.no_python:
        return [str(command.script or command.module), *command.arguments]
    if command.module is not None:
        return ["python", "-m", command.module, *command.arguments]
    return ["python", str(command.script), *command.arguments]


def main() -> int:
    control = Path(sys.argv[1])
    rank = int(os.environ["RANK"])
    events = Events(control / f"rank{rank}.events.jsonl")
    plan = json.loads((control / "plan.json").read_text(encoding="utf-8"))
    events(rank=rank, stage="host", status="start", pid=os.getpid(), node=os.uname().nodename)
    if plan.get("probe") and rank == 0:  # what this environment holds, before torch can fail to import
        from reprogate.runtime.probe import probe

        try:
            facts = probe()
        except Exception as exc:  # noqa: BLE001 - a broken package's metadata must not stop the rank; the report says so
            facts = {"error": f"{type(exc).__name__}: {exc}"}
        events(rank=rank, stage="host", status="probe", facts=facts)
    if plan.get("preflight", True):
        from reprogate.runtime.preflight_rank import PreflightStageFailed, run_checks

        try:
            run_checks(events, dict(os.environ))
        except PreflightStageFailed as exc:
            events.close()
            return exc.code
    ready: dict[str, Any] = {}
    torch = sys.modules.get("torch")  # imported by the preflight: name this rank's GPU (the envelope judges the nodes' models)
    if torch is not None and torch.cuda.is_available():
        ready["gpu"] = str(torch.cuda.get_device_name(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()))
    if rank == 0:  # a port for the training rendezvous, free on the node rank 0 runs on
        import socket

        with socket.socket() as sock:
            sock.bind(("", 0))
            ready["spare_port"] = int(sock.getsockname()[1])
    ready["cpu_seconds"] = round(time.process_time(), 3)  # this rank's CPU until now: start, probe, torch, the checks
    events(rank=rank, stage="host", status="ready", **ready)
    order = _wait_for_orders(control)
    if order is None:
        events(rank=rank, stage="host", status="stopped")
        events.close()
        return 0
    events(rank=rank, stage="host", status="go")
    events.close()
    os.environ.update({str(k): str(v) for k, v in order.get("env", {}).items()})
    os.chdir(order["cwd"])
    run_entrypoint([str(a) for a in order["argv"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
