"""Benchmark: the tiny example's rebuild against the same two ranks started by hand.

  rebuild   wall time of `reprogate rebuild examples/tiny/records/tiny.yaml`, a whole process,
            every stage included (preflight too)
  bare      the same entrypoint as two ranks started directly with torchrun's variables and the
            record's execution.env, writing the same trace: what a user would otherwise run
  ratio     rebuild / bare (aim: <= 1.2)
  preflight the preflight stage against the rest of the rebuild (aim: <= 15 % of the stages' time):
            its wall seconds, and the same less the ranks' import of torch (which the rank hosts
            keep for the run: the training script does not import it again, and the bare run pays
            it too), and each rank's CPU seconds until ready, that import included (preflight.json)

Run alternately, medians of --repeat each (CPU and wall), so both see the same machine:

    .venv/bin/python benchmarks/rebuild.py [--repeat 3]

The Tracer's own cost per step is benchmarks/tracer.py.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
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


def run(argv: list[str], **kwargs: object) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process tree it waited for, exit code) of one command."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    _, status, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def rebuild_once() -> tuple[float, float, dict[str, float], dict[str, object]]:
    """(wall, CPU, stage seconds, preflight.json) of one whole rebuild."""
    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as parent:
        work = Path(parent) / "work"
        elapsed, cpu, code = run([sys.executable, "-m", "reprogate", "rebuild", str(RECORD), "--out", out, "--workdir", str(work)], cwd=REPO)
        if code != 0:
            raise SystemExit(f"the rebuild exited {code}")
        verdict = json.loads((Path(out) / "verdict.json").read_text())
        preflight = json.loads((work / "preflight.json").read_text())
    return elapsed, cpu, {s["name"]: s["seconds"] for s in verdict["stages"]}, preflight


def bare_once() -> tuple[float, float]:
    record = yaml.safe_load(RECORD.read_text())
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update({str(k): str(v) for k, v in record["execution"]["env"].items()})
    port = _port()
    with tempfile.TemporaryDirectory() as trace:
        start = time.perf_counter()
        before = os.times()
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
        after = os.times()
    if codes != [0, 0]:
        raise SystemExit(f"the bare run failed: {codes}")
    return elapsed, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "reprogate")], check=True, stdout=subprocess.DEVNULL)
    rebuilds, bares, shares, trimmed, imports, rank_cpu, preflights = [], [], [], [], [], [], []
    for _ in range(args.repeat):
        wall, cpu, per_stage, preflight = rebuild_once()
        rebuilds.append((wall, cpu))
        bares.append(bare_once())
        total = sum(per_stage.values())
        ranks = preflight.get("ranks", {})
        imported = max((float(r.get("import_seconds", 0.0)) for r in ranks.values()), default=0.0)
        preflights.append(per_stage["preflight"])
        shares.append(per_stage["preflight"] / total)
        trimmed.append((per_stage["preflight"] - imported) / (total - imported))
        imports.append(imported)
        rank_cpu.append(max((float(r.get("cpu_seconds", 0.0)) for r in ranks.values()), default=0.0))
    wall, cpu = statistics.median(w for w, _ in rebuilds), statistics.median(c for _, c in rebuilds)
    bare_wall, bare_cpu = statistics.median(w for w, _ in bares), statistics.median(c for _, c in bares)
    print(f"rebuild (whole process, medians of {args.repeat}): {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"bare 2-rank run:                         {bare_wall:.2f} s wall, {bare_cpu:.2f} s CPU")
    print(f"ratio rebuild / bare: wall {wall / bare_wall:.2f}, CPU {cpu / bare_cpu:.2f}  (aim <= 1.2)")
    print(
        f"preflight stage: {statistics.median(preflights):.2f} s, {statistics.median(shares):.0%} of the stages' time; "
        f"less the ranks' import of torch ({statistics.median(imports):.2f} s, kept for the run): {statistics.median(trimmed):.0%}  (aim <= 15 %)"
    )
    print(f"  CPU of the busiest rank until ready (start, probe, torch, checks): {statistics.median(rank_cpu):.2f} s")
    print(f"load average now: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
