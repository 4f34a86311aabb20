"""Benchmark: how long `reprogate capture` and `reprogate preflight` take at job start.

Prints best-of-N wall times of:
  capture --no-framework        (aim: under 1 s)
  capture                       (imports torch to describe it)
  preflight, 2-rank gloo        (aim: under 5 s; a bare 2-process gloo all-reduce takes ~2 s here)
  preflight, peer never joins   (aim: a failed verdict within --timeout + 2 s)
and, as the anchor, a bare two-process gloo all-reduce written directly against torch.distributed.

    .venv/bin/python benchmarks/capture_preflight.py [--repeat 3] [--timeout 3]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BARE = """
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
def run(rank, path):
    dist.init_process_group("gloo", init_method="file://" + path, rank=rank, world_size=2)
    t = torch.full((4,), rank + 1.0); dist.all_reduce(t); assert t[0].item() == 3.0
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.get_context("spawn")
    mp.spawn(run, args=(sys.argv[1],), nprocs=2)
"""


def timed(argv: list[str], env: dict[str, str] | None = None, expect: int | None = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = time.perf_counter() - start
    if expect is not None and done.returncode != expect:
        raise SystemExit(f"{argv} exited {done.returncode}, expected {expect}:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=3.0)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "reprogate"]
    clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "capture.yaml")
        rows = [
            ("capture --no-framework", min(timed([*cli, "capture", "--no-framework", "-o", out]) for _ in range(args.repeat))),
            ("capture (imports torch)", min(timed([*cli, "capture", "-o", out]) for _ in range(args.repeat))),
            ("preflight 2-rank gloo", min(timed([*cli, "preflight", "--world-size", "2"], clean) for _ in range(args.repeat))),
        ]
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        lonely = {**clean, "RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        rows.append((f"preflight, peer never joins (--timeout {args.timeout:g})", timed([*cli, "preflight", "--timeout", str(args.timeout)], lonely, expect=1)))
        script = Path(tmp) / "bare.py"
        script.write_text(BARE)
        rows.append(("bare gloo all-reduce (anchor)", min(timed([sys.executable, str(script), str(Path(tmp) / f"rdv{i}")]) for i in range(args.repeat))))
    for name, seconds in rows:
        print(f"{name:<46} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
