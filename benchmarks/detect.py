"""Benchmark: `reprogate detect` on large diffs, side by side with `git diff --name-status`.

  (a) 5,000 changed files (4,000 Python files, 1,000 YAML files)        aim: < 0.5 s
  (b) 50,000 changed files (same mix)                                   aim: <= 3 s, linear in (a)
  (c) one requirements.txt whose diff is 50,000 lines (10,000 pinned packages with hashes, all bumped)

detect makes one `git diff --name-status` call for the file list and one `git cat-file --batch`
for the watched files' contents, never a process per file; YAML files that name no image, runner,
record or manifest are not parsed. Each case's repository is repacked first, as a fresh clone is.
Whole processes are timed, paired (detect, then git) --repeat times; medians and their ratio are
printed, and the per-file cost of (b) over (a).

    .venv/bin/python benchmarks/detect.py [--repeat 5]
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


def big_lock(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for version in (1, 2):
        lines = []
        for i in range(10_000):
            digest = hashlib.sha256(f"{i}-{version}".encode()).hexdigest()
            lines.append(f"package-{i:05d}==1.{version}.0 \\\n    --hash=sha256:{digest} \\\n    --hash=sha256:{digest[::-1]}\n    # via -r requirements.in\n")
        (repo / "requirements.txt").write_text("".join(lines))
        commit_all(repo, f"v{version}")


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    detect = [sys.executable, "-m", "reprogate", "detect", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", "--repo"]
    cases = (("(a) 5,000 files changed", 5_000, many_files(5_000)), ("(b) 50,000 files changed", 50_000, many_files(50_000)),
             ("(c) 50,000-line lock file diff", 1, big_lock))  # fmt: skip
    print(f"{'case':<34} {'reprogate':>10} {'git diff --name-status':>23} {'ratio':>7}")
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, count, build in cases:
            repo = Path(tmp) / label[1]
            repo.mkdir()
            build(repo)
            git(repo, "repack", "-adq")
            ours, plain = [], []
            for _ in range(args.repeat):
                ours.append(timed([*detect, str(repo)]))
                plain.append(timed(["git", "-C", str(repo), "diff", "--name-status", "HEAD~1", "HEAD"]))
            medians[count] = statistics.median(ours)
            anchor = statistics.median(plain)
            print(f"{label:<34} {medians[count]:>9.3f}s {anchor:>22.3f}s {medians[count] / anchor:>7.1f}", flush=True)
    startup = timed([sys.executable, "-m", "reprogate", "--help"])
    per_file = (medians[50_000] - medians[5_000]) / 45_000
    print(f"\nper changed file: {per_file * 1e6:.1f} us (from (b) - (a)); `reprogate --help` (start-up alone): {startup:.3f}s")


if __name__ == "__main__":
    main()
