"""Scheduler overhead of `rebuild --launcher slurm`, against `srun` of the same command.

The same two-task command (each task stamps the time it started and the time it ended) runs
side by side, interleaved, on a two-node cluster:
  - srun: `srun --nodes=2 --ntasks=2 --ntasks-per-node=1 sh -c CMD` from this machine, what a
    user without reprogate would run;
  - reprogate: the slurm launcher as a rebuild uses it: job.sh and rank.sh written, sbatch, the
    job followed until it runs, the ranks' exit codes polled as RankHosts does (every 0.05 s),
    then `stop` (scancel, and wait until Slurm has released the allocation).
Reported, as medians over the repeats: submission to the first task's start, and teardown (the
last task's end to the allocation released — for srun, to srun's return), each with the ratio
reprogate / srun.

    .venv/bin/python benchmarks/slurm.py [--repeats 5]

Uses the cluster SLURM_CONF points at (two nodes, this folder shared), else starts the
repository's loopback cluster (tests/support/slurm.py) for the duration.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from reprogate.rebuild.launchers.base import Shape  # noqa: E402
from reprogate.rebuild.launchers.slurm import SlurmLauncher  # noqa: E402
from reprogate.rebuild.realizers.current import CurrentEnvironment  # noqa: E402

STAMP = 'date +%s.%N > "$OUT/$TAG-$SLURM_PROCID.start"; sleep 0.2; date +%s.%N > "$OUT/$TAG-$SLURM_PROCID.end"'


def stamps(folder: Path, tag: str, kind: str) -> list[float]:
    return [float(p.read_text()) for p in sorted(folder.glob(f"{tag}-*.{kind}"))]


def with_srun(folder: Path, tag: str, env: dict[str, str]) -> tuple[float, float]:
    begin = time.time()
    subprocess.run(
        ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "sh", "-c", STAMP],
        env={**env, "OUT": str(folder), "TAG": tag},
        check=True,
        capture_output=True,
    )
    done = time.time()
    return min(stamps(folder, tag, "start")) - begin, done - max(stamps(folder, tag, "end"))


def with_reprogate(folder: Path, tag: str, env: dict[str, str]) -> tuple[float, float]:
    logs = folder / f"{tag}-logs"
    launcher = SlurmLauncher()
    begin = time.time()
    group = launcher.start(CurrentEnvironment(), ["sh", "-c", STAMP], {**env, "OUT": str(folder), "TAG": tag}, Shape(2, 2, 0, 600.0), folder, logs)
    try:
        while not all(code is not None for code in group.poll().values()):
            time.sleep(0.05)
    finally:
        group.stop()
    done = time.time()
    return min(stamps(folder, tag, "start")) - begin, done - max(stamps(folder, tag, "end"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with ExitStack() as stack:
        if not os.environ.get("SLURM_CONF"):
            from support.slurm import start_cluster

            cluster = start_cluster(Path(tempfile.mkdtemp(prefix="reprogate-bench-slurm-")))
            stack.callback(cluster.stop)
            os.environ["SLURM_CONF"] = str(cluster.conf)
        folder = Path(tempfile.mkdtemp(prefix="reprogate-bench-"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURM_CONF": os.environ["SLURM_CONF"]}
        results: dict[str, list[tuple[float, float]]] = {"srun": [], "reprogate": []}
        with_srun(folder, "warm", env)  # the controller's first scheduling pass, outside the figures
        for i in range(args.repeats):
            results["srun"].append(with_srun(folder, f"s{i}", env))
            results["reprogate"].append(with_reprogate(folder, f"r{i}", env))
    start = {k: statistics.median(v[0] for v in runs) for k, runs in results.items()}
    teardown = {k: statistics.median(v[1] for v in runs) for k, runs in results.items()}
    print(f"two tasks on two nodes, medians of {args.repeats} interleaved runs")
    print(f"{'':28}{'srun':>10}{'reprogate':>12}{'ratio':>8}")
    print(f"{'submission to first start':28}{start['srun']:>9.3f}s{start['reprogate']:>11.3f}s{start['reprogate'] / start['srun']:>7.1f}x")
    print(f"{'teardown (last end to free)':28}{teardown['srun']:>9.3f}s{teardown['reprogate']:>11.3f}s{teardown['reprogate'] / teardown['srun']:>7.1f}x")


if __name__ == "__main__":
    main()
