"""Benchmark: `reprogate detect` on large diffs, side by side with `git diff --name-status`.

  (a) 5,000 changed files (4,000 Python files, 1,000 YAML files)        aim: < 0.5 s
  (b) 50,000 changed files (same mix)                                   aim: <= 3 s, linear in (a)
  (c) one pip-compile requirements.txt of 1,000 pins, all bumped (two hashes a pin), vs `git diff`
  (d) the same with 10,000 pins (a 50,000-line diff)                    aim: <= 0.5 s CPU, linear in (c)

detect makes one `git diff --name-status` call for the file list and one `git cat-file --batch`
for the watched files' contents, never a process per file; YAML files that name no image, runner,
record or manifest are not parsed; a lock file's two sides are parsed once each and compared pin by
pin, and past 500 changes a file's are counted, not listed. Each case's repository is repacked
first, as a fresh clone is. Whole processes are timed, paired (detect, then git) --repeat times:
medians of CPU seconds (user + system of detect and its git processes, from wait4) and of wall
seconds, their ratios to git's, and the per-file (per-pin) cost of the larger case over the smaller.

    .venv/bin/python benchmarks/detect.py [--repeat 5] [--cases abcd]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=ENV)


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def many_files(count: int):
    def build(repo: Path) -> None:
        git(repo, "init", "-q", "-b", "main")
        for version in (1, 2):
            for i in range(count):
                yaml_file = i % 5 == 0
                folder = repo / ("conf" if yaml_file else "src") / f"part{i // 250:03d}"
                folder.mkdir(parents=True, exist_ok=True)
                if yaml_file:
                    (folder / f"c{i:05d}.yaml").write_text(f"name: c{i}\nvalue: {i * version}\nitems: [1, 2, 3]\n")
                else:
                    (folder / f"mod{i:05d}.py").write_text(f"VALUE = {i * version}\n")
            commit_all(repo, f"v{version}")

    return build


def big_lock(pins: int):
    def build(repo: Path) -> None:
        lock(repo, pins)

    return build


def lock(repo: Path, pins: int) -> None:
    git(repo, "init", "-q", "-b", "main")
    for version in (1, 2):
        lines = []
        for i in range(pins):
            digest = hashlib.sha256(f"{i}-{version}".encode()).hexdigest()
            lines.append(f"package-{i:05d}==1.{version}.0 \\\n    --hash=sha256:{digest} \\\n    --hash=sha256:{digest[::-1]}\n    # via -r requirements.in\n")
        (repo / "requirements.txt").write_text("".join(lines))
        commit_all(repo, f"v{version}")


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and the children it waited for) of one run."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read() if process.stderr else b""
    if process.returncode != 0:
        raise SystemExit(f"{argv} exited {process.returncode}: {stderr.decode()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", default="abcd", help="which of the cases to run (default all)")
    args = parser.parse_args()
    detect = [sys.executable, "-m", "reprogate", "detect", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", "--repo"]
    cases = (
        ("a", "(a) 5,000 files changed", 5_000, many_files(5_000), ["diff", "--name-status"]),
        ("b", "(b) 50,000 files changed", 50_000, many_files(50_000), ["diff", "--name-status"]),
        ("c", "(c) 1,000 pins bumped", 1_000, big_lock(1_000), ["diff"]),
        ("d", "(d) 10,000 pins bumped", 10_000, big_lock(10_000), ["diff"]),
    )
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "reprogate")], check=True, stdout=subprocess.DEVNULL)
    print(f"{'case':<26} {'reprogate CPU':>13} {'git CPU':>8} {'CPU ratio':>9}  {'reprogate wall':>14} {'git wall':>9} {'wall ratio':>10}")
    medians: dict[str, tuple[int, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, label, count, build, anchor in cases:
            if key not in args.cases:
                continue
            repo = Path(tmp) / key
            repo.mkdir()
            build(repo)
            git(repo, "repack", "-adq")
            ours, plain = [], []
            for _ in range(args.repeat):
                ours.append(timed([*detect, str(repo)]))
                plain.append(timed(["git", "-C", str(repo), *anchor, "HEAD~1", "HEAD"]))
            wall, cpu = statistics.median(w for w, _ in ours), statistics.median(c for _, c in ours)
            git_wall, git_cpu = statistics.median(w for w, _ in plain), statistics.median(c for _, c in plain)
            medians[key] = (count, cpu)
            print(f"{label:<26} {cpu:>12.3f}s {git_cpu:>7.3f}s {cpu / git_cpu:>9.1f}  {wall:>13.3f}s {git_wall:>8.3f}s {wall / git_wall:>10.1f}", flush=True)
        one = Path(tmp) / "one"
        one.mkdir()
        lock(one, 1)
        start_cpu = statistics.median(timed([*detect, str(one)])[1] for _ in range(args.repeat))
    print(f"(detect of a one-pin bump, start-up and git included: {start_cpu:.3f} s CPU; medians of {args.repeat} paired runs)")
    for small, large, unit in (("a", "b", "changed file"), ("c", "d", "pin")):
        if small in medians and large in medians:
            (n1, c1), (n2, c2) = medians[small], medians[large]
            print(
                f"CPU per {unit}: {(c1 - start_cpu) / n1 * 1e6:.1f} us at {n1:,}, {(c2 - start_cpu) / n2 * 1e6:.1f} us at {n2:,} "
                f"(start-up subtracted; equal = linear), {(c2 - c1) / (n2 - n1) * 1e6:.1f} us from ({large}) - ({small})"
            )


if __name__ == "__main__":
    main()
