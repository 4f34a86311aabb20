"""Benchmark: the tiny example's rebuild against the same two ranks started by hand.

  rebuild   wall time of `reprogate rebuild examples/tiny/records/tiny.yaml`, a whole process,
            every stage included (preflight too)
  bare      the same entrypoint as two ranks started directly with torchrun's variables and the
            record's execution.env, writing the same trace: what a user would otherwise run
  ratio     rebuild / bare (aim: <= 1.2)

Run alternately, best of --repeat each, so both see the same machine:

    .venv/bin/python benchmarks/rebuild.py [--repeat 3]

The Tracer's own cost per step is benchmarks/tracer.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny"
RECORD = TINY / "records" / "tiny.yaml"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rebuild_once() -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "reprogate", "rebuild", str(RECORD), "--out", out], capture_output=True, text=True, cwd=REPO)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(done.stdout + done.stderr)
        verdict = json.loads((Path(out) / "verdict.json").read_text())
    return elapsed, {s["name"]: s["seconds"] for s in verdict["stages"]}


def bare_once() -> float:
    record = yaml.safe_load(RECORD.read_text())
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update({str(k): str(v) for k, v in record["execution"]["env"].items()})
    port = _port()
    with tempfile.TemporaryDirectory() as trace:
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                [sys.executable, *record["job"]["entrypoint"][1:]],
                cwd=TINY / "project",
                env={
                    **env,
                    "RANK": str(r),
                    "LOCAL_RANK": str(r),
                    "WORLD_SIZE": "2",
                    "LOCAL_WORLD_SIZE": "2",
                    "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port),
                    "REPROGATE_TRACE_DIR": trace,
                },
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for r in range(2)
        ]
        codes = [p.wait() for p in procs]
        elapsed = time.perf_counter() - start
    if codes != [0, 0]:
        raise SystemExit(f"the bare run failed: {codes}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rebuilds, bares, stages = [], [], []
    for _ in range(args.repeat):
        elapsed, per_stage = rebuild_once()
        rebuilds.append(elapsed)
        stages.append(per_stage)
        bares.append(bare_once())
    best = min(range(len(rebuilds)), key=rebuilds.__getitem__)
    print(f"rebuild (whole process, best of {args.repeat}): {rebuilds[best]:.2f} s")
    print("  stages: " + ", ".join(f"{name} {seconds:.2f}" for name, seconds in stages[best].items() if seconds >= 0.01))
    print(f"bare 2-rank run (best of {args.repeat}):       {min(bares):.2f} s")
    print(f"ratio rebuild / bare: {rebuilds[best] / min(bares):.2f}  (aim <= 1.2)")
    print(f"load average now: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
