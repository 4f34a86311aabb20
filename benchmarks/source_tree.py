"""Benchmark: `validate`'s check that a record's pinned project folder still has its tree, on a
folder of N files (default 5,000), against git answering the same question.

- clean: the folder as committed; reprogate asks git for the tree id (`status` + `rev-parse`),
  hashing nothing. Anchor: `git status --porcelain -- FOLDER` plus `git rev-parse HEAD:FOLDER`.
- changed: one file edited; reprogate has git write the folder's tree from a copy of its index
  (only the changed file is hashed) and names what changed with `git diff-tree`. Anchor: `git
  status` plus `git add -A --dry-run` over the folder.

Prints seconds (median of --repeat) and the ratios; aim: the whole validate < 0.5 s for 5,000 files.

    .venv/bin/python benchmarks/source_tree.py [--files 5000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def run(*args: str, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=ENV, check=False, capture_output=True)
    return time.perf_counter() - started


def median(times: list[float]) -> float:
    return statistics.median(times)


def project(root: Path, files: int) -> Path:
    from reprogate.core.gittree import tree_id

    folder = root / "train"
    for i in range(files):
        sub = folder / f"pkg{i % 50:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"mod{i:05d}.py").write_text(f"VALUE = {i}\n" * 20)
    tree = tree_id(folder)
    (root / "records").mkdir()
    record = root / "records" / "train.yaml"
    record.write_text(
        "apiVersion: reprogate/v1\nkind: RunRecord\nmetadata: {name: bench}\ncontract: {level: startup}\n"
        f"source: {{path: train, tree: '{tree}'}}\ncontainer: {{used: false, reason: bench}}\ndataset: {{used: false, reason: bench}}\n"
        "job: {entrypoint: [python, train.py]}\n"
    )
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "base")):
        subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)
    return record


def check_seconds(record: Path, repeat: int) -> float:
    """The rule alone, in this process (start-up and schema loading left out)."""
    from reprogate.core.documents import load_document
    from reprogate.rules.base import RuleContext
    from reprogate.rules.source_tree import source_tree_matches

    times = []
    for _ in range(repeat):
        ctx = RuleContext(load_document(record), "RunRecord", record.parent.parent, datetime.date.today(), 1 << 30, {}, record)
        began = time.perf_counter()
        list(source_tree_matches(ctx))
        times.append(time.perf_counter() - began)
    return median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        record = project(root, options.files)
        validate = [sys.executable, "-m", "reprogate", "validate", str(record)]
        whole = median([run(*validate, cwd=root) for _ in range(options.repeat)])
        clean = check_seconds(record, options.repeat)
        status = [run("git", "status", "--porcelain", "--", "train", cwd=root) + run("git", "rev-parse", "HEAD:train", cwd=root) for _ in range(options.repeat)]
        (root / "train" / "pkg00" / "mod00000.py").write_text("VALUE = -1\n")
        changed = check_seconds(record, options.repeat)
        adding = [
            run("git", "add", "-A", "--dry-run", "--", "train", cwd=root) + run("git", "status", "--porcelain", "--", "train", cwd=root)
            for _ in range(options.repeat)
        ]
    print(f"{options.files:,} files in the pinned folder (median of {options.repeat} runs)")
    print(f"  validate, whole command:     {whole:.3f} s")
    print(f"  the check, folder clean:     {clean:.3f} s; git status + rev-parse {median(status):.3f} s; ratio {clean / median(status):.2f}")
    print(f"  the check, one file changed: {changed:.3f} s; git add --dry-run + status {median(adding):.3f} s; ratio {changed / median(adding):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
