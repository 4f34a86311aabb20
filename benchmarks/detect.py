"""Benchmark: `reprogate detect` on large diffs, against `git diff --name-only` and `python -c pass`.

  (a) a 5,000-file diff (4,000 Python files and 1,000 YAML files, all modified)    aim: < 0.5 s
  (b) one requirements.txt whose diff is 50,000 lines (10,000 pinned packages with hashes, all bumped)
                                                                                    aim: < 1 s
detect makes one `git diff --name-status` call for the file list and one `git cat-file --batch`
for the watched files' contents, never a process per file. Best of --repeat runs.

    .venv/bin/python benchmarks/detect.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
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


def best(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def many_files(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for version in (1, 2):
        for i in range(4000):
            folder = repo / "src" / f"pkg{i // 100:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"mod{i:04d}.py").write_text(f"VALUE = {i * version}\n")
        for i in range(1000):
            folder = repo / "conf" / f"set{i // 100:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"c{i:04d}.yaml").write_text(f"name: c{i}\nvalue: {i * version}\nitems: [1, 2, 3]\n")
        commit_all(repo, f"v{version}")


def big_lock(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for version in (1, 2):
        lines = []
        for i in range(10_000):
            digest = hashlib.sha256(f"{i}-{version}".encode()).hexdigest()
            lines.append(f"package-{i:05d}==1.{version}.0 \\\n    --hash=sha256:{digest} \\\n    --hash=sha256:{digest[::-1]}\n    # via -r requirements.in\n")
        (repo / "requirements.txt").write_text("".join(lines))
        commit_all(repo, f"v{version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    detect = [sys.executable, "-m", "reprogate", "detect", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", "--repo"]
    floor = best([sys.executable, "-c", "pass"], args.repeat)
    print(f"{'case':<40} {'reprogate':>10} {'git diff --name-only':>21} {'python -c pass':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in (("(a) 5,000 files changed", many_files), ("(b) 50,000-line lock file diff", big_lock)):
            repo = Path(tmp) / label[1]
            repo.mkdir()
            build(repo)
            ours = best([*detect, str(repo)], args.repeat)
            plain = best(["git", "-C", str(repo), "diff", "--name-only", "HEAD~1", "HEAD"], args.repeat)
            print(f"{label:<40} {ours:>9.3f}s {plain:>20.3f}s {floor:>14.3f}s")


if __name__ == "__main__":
    main()
