"""Write benchmarks/data/mlperf-rcp/seed-sets.json from MLPerf's reference convergence points.

MLCommons' logging repository (Apache-2.0) keeps, for every benchmark and ruleset, the runs of
each reference convergence point (RCP): how many epochs (or samples) each seed took to reach the
target quality. They are real seed-to-seed spreads of real training runs, which is what the
calibration benchmark needs. This keeps each distinct set of runs once (the same runs are
repeated across rulesets), with where it came from:

    python tools/mlperf_rcp_corpus.py /path/to/mlcommons-logging.git [--out FILE]

The git directory is a clone (or a bare mirror) of https://github.com/mlcommons/logging; the
commit read is HEAD, and it is written into the file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "benchmarks" / "data" / "mlperf-rcp" / "seed-sets.json"
FOLDER = "mlperf_logging/rcp_checker/"
UNITS = ("Epochs to converge", "samples to converge")


def git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def seed_sets(git_dir: Path) -> dict[str, Any]:
    commit = git(git_dir, "rev-parse", "HEAD").strip()
    paths = sorted(p for p in git(git_dir, "ls-tree", "-r", "--name-only", "HEAD", FOLDER).split() if p.endswith(".json") and "/rcps_" in p)
    found: dict[tuple[float, ...], dict[str, Any]] = {}
    for path in paths:
        for key, entry in json.loads(git(git_dir, "show", f"HEAD:{path}")).items():
            unit = next((u for u in UNITS if isinstance(entry.get(u), list)), None)
            if unit is None:
                continue
            values = [float(v) for v in entry[unit]]
            where = f"{path.removeprefix(FOLDER)}#{key}"
            same = found.get(tuple(sorted(values)))
            if same is not None:
                same["also_in"].append(where)
                continue
            found[tuple(sorted(values))] = {
                "id": where,
                "benchmark": str(entry.get("Benchmark")),
                "batch_size": entry.get("BS"),
                "unit": unit.lower(),
                "values": values,
                "also_in": [],
            }
    return {
        "source": "https://github.com/mlcommons/logging",
        "commit": commit,
        "license": "Apache-2.0 (LICENSE in this folder)",
        "what": "distinct sets of MLPerf reference convergence points: per seed, the epochs or samples a reference run took to converge",
        "sets": list(found.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    corpus = seed_sets(args.git_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    head = {k: v for k, v in corpus.items() if k != "sets"}
    lines = ",\n".join("  " + json.dumps(one) for one in corpus["sets"])  # one set a line: small, and a diff says which set changed
    text = json.dumps(head, indent=1)[:-2] + ',\n "sets": [\n' + lines + "\n ]\n}\n"
    json.loads(text)
    args.out.write_text(text, encoding="utf-8")
    print(f"{args.out}: {len(corpus['sets'])} distinct seed sets from {corpus['commit'][:12]}, {len(text):,} bytes")


if __name__ == "__main__":
    main()
