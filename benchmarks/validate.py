"""Benchmark: `reprogate validate` against `check-jsonschema` on the same files, in one run.

check-jsonschema is what a user would otherwise run to validate records against our schema; it
checks the schema only, while reprogate also applies the semantic rules (hashing the lock files,
configuration and dataset manifest a record addresses), so the comparison is conservative.

Prints, for (a) one record, cold start, (b) 1,000 records in one call and (c) one record with
20,000 unknown keys (20,000 findings, each located by line and column): best-of-N wall time of
each tool and the ratio reprogate / check-jsonschema (below 1.0 means reprogate is faster).
Aims (issue #2): (a) ratio <= 0.9, (b) reprogate under 3 s on the 2-core CI machine; (c) issue
#13: locating findings must not be linear per finding (it took 86 s before).

    .venv/bin/python benchmarks/validate.py [--records 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def best_time(argv: list[str], repeat: int, expect: int = 0) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if result.returncode != expect:
            raise SystemExit(f"{argv[0]} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        best = min(best, elapsed)
    return best


def make_project(folder: Path, count: int) -> list[Path]:
    """The example project with `count` distinct records addressing the same files."""
    project = folder / "project"
    shutil.copytree(REPO / "examples", project)
    template = (project / "records" / "drill.yaml").read_text()
    out = project / "many"
    out.mkdir()
    paths = []
    for i in range(count):
        path = out / f"run-{i:05d}.yaml"
        path.write_text(template.replace("name: decoder-7b-d77-c19-ref", f"name: decoder-7b-run-{i:05d}"))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    reprogate = [str(BIN / "reprogate"), "validate"]
    checker = [str(BIN / "check-jsonschema"), "--schemafile", str(REPO / "schemas" / "run-record.schema.json")]
    with tempfile.TemporaryDirectory() as tmp:
        records = make_project(Path(tmp), args.records)
        one = [str(records[0])]
        rows = []
        ours, theirs = best_time(reprogate + one, args.repeat), best_time(checker + one, args.repeat)
        rows.append(("1 record, cold start", ours, theirs))
        many = [str(records[0].parent)]
        many_theirs = [*checker, *map(str, records)]
        ours, theirs = best_time(reprogate + many, max(1, args.repeat // 2)), best_time(many_theirs, max(1, args.repeat // 2))
        rows.append((f"{args.records:,} records", ours, theirs))
        wide = Path(tmp) / "project" / "records" / "unknown-keys.yaml"
        wide.write_text((REPO / "examples" / "records" / "drill.yaml").read_text() + "".join(f"unknown_{i:05d}: {i}\n" for i in range(20_000)))
        ours = best_time([*reprogate, str(wide)], max(1, args.repeat // 2), expect=1)
        theirs = best_time([*checker, str(wide)], max(1, args.repeat // 2), expect=1)
        rows.append(("20,000 unknown keys", ours, theirs))

    print(f"{'case':<24} {'reprogate':>11} {'check-jsonschema':>17} {'ratio':>7}")
    for name, ours, theirs in rows:
        print(f"{name:<24} {ours * 1000:>9.0f}ms {theirs * 1000:>15.0f}ms {ours / theirs:>7.2f}")
    python_start = best_time([sys.executable, "-c", "pass"], args.repeat)
    print(f"(Python start alone: {python_start * 1000:.0f} ms; best of {args.repeat} runs each)")


if __name__ == "__main__":
    main()
