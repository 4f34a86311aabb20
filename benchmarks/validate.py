"""Benchmark: `reprogate validate` against `check-jsonschema` on the same files, in one run.

check-jsonschema is what a user would otherwise run to validate records against our schema; it
checks the schema only, while reprogate also applies the semantic rules (hashing the lock files,
configuration and dataset manifest a record addresses), so the comparison is conservative.

Rows: one record from a cold start, then N records in one call for each N of --records (default
1,000 and 10,000: records that address a handful of files, as the example does). For each: the
median and best wall time of --repeat runs, reprogate's wall and CPU time per record (CPU: user +
system of the whole process tree, so the forked validation workers count), and the ratio
reprogate / check-jsonschema (below 1.0 means reprogate is faster). Aims (issue #18): at most
3 ms a record, and the same per-record time at 10,000 as at 1,000 (linear).

The sizes are run in turns (1,000, 10,000, 1,000, ...), the same number of times each, and
linearity is taken from the medians: on a shared machine the speed of the same command drifts
20-40 % from minute to minute, so a best of three at one size against a single run at the other
measures the drift, not the tool. check-jsonschema takes about 80 ms a record here, so it runs
only up to --anchor-max records; larger rows compare with its per-record time at the largest
size it ran (marked "rate").

    .venv/bin/python benchmarks/validate.py [--records 1000,10000] [--repeat 5] [--anchor-max 1000]

issue 44's figures (3 ms CPU a record at 100 and at 1,000): --records 100,1000 --anchor-max 100 --repeat 3
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], expect: int = 0) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process tree) of one run."""
    before = children_cpu()
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != expect:
        raise SystemExit(f"{argv[0]} exited {result.returncode}:\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return elapsed, children_cpu() - before


def best_time(argv: list[str], repeat: int, expect: int = 0) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run) over `repeat` runs."""
    return min(timed(argv, expect) for _ in range(repeat))


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
    parser.add_argument("--records", default="1000,10000", help="comma-separated record counts")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each size, in turns")
    parser.add_argument("--anchor-max", type=int, default=1000, help="largest count check-jsonschema runs on")
    args = parser.parse_args()
    counts = sorted(int(n) for n in args.records.split(","))

    reprogate = [str(BIN / "reprogate"), "validate"]
    checker = [str(BIN / "check-jsonschema"), "--schemafile", str(REPO / "schemas" / "run-record.schema.json")]
    rows: list[tuple[str, float, float, int, str, str, float, str]] = []
    medians: list[tuple[int, float, float]] = []  # (records, wall s a record, CPU s a record)
    anchor_rate = anchor_cpu_rate = None
    with tempfile.TemporaryDirectory() as tmp:
        records = make_project(Path(tmp), max(counts))
        ours, cpu = best_time(reprogate + [str(records[0])], args.repeat)
        theirs, their_cpu = best_time(checker + [str(records[0])], args.repeat)
        rows.append(("1 record, cold start", ours, cpu, 1, f"{theirs * 1000:.0f} ms", f"{ours / theirs:.2f}", ours, f"{cpu / their_cpu:.2f}"))
        folders = {}
        for count in counts:
            folders[count] = records[0].parent.parent / f"set-{count}"  # inside the project: same root, same addressed files
            folders[count].mkdir()
            for path in records[:count]:
                (folders[count] / path.name).symlink_to(path)
        runs: dict[int, list[tuple[float, float]]] = {count: [] for count in counts}
        for _ in range(args.repeat):  # in turns, so drift in the machine's speed falls on every size alike
            for count in counts:
                runs[count].append(timed(reprogate + [str(folders[count])]))
        for count in counts:
            ours, cpu = statistics.median(wall for wall, _ in runs[count]), statistics.median(cpu for _, cpu in runs[count])
            best = min(wall for wall, _ in runs[count])
            medians.append((count, ours / count, cpu / count))
            if count <= args.anchor_max:
                theirs, their_cpu = best_time(checker + [str(p) for p in records[:count]], 1)
                anchor_rate, anchor_cpu_rate = theirs / count, their_cpu / count
                rows.append((f"{count:,} records", ours, cpu, count, f"{theirs:.1f} s", f"{ours / theirs:.3f}", best, f"{cpu / their_cpu:.3f}"))
            elif anchor_rate is not None:
                assert anchor_cpu_rate is not None
                wall_ratio, cpu_ratio = f"{ours / (anchor_rate * count):.3f}", f"{cpu / (anchor_cpu_rate * count):.3f}"
                rows.append((f"{count:,} records", ours, cpu, count, f"rate {anchor_rate * 1000:.0f} ms/record", wall_ratio, best, cpu_ratio))
            else:
                rows.append((f"{count:,} records", ours, cpu, count, "-", "-", best, "-"))
        wide = Path(tmp) / "project" / "records" / "unknown-keys.yaml"  # issue 13: findings located in linear time
        wide.write_text((REPO / "examples" / "records" / "drill.yaml").read_text() + "".join(f"unknown_{i:05d}: {i}\n" for i in range(20_000)))
        ours, cpu = best_time([*reprogate, str(wide)], 1, expect=1)
        theirs, their_cpu = best_time([*checker, str(wide)], 1, expect=1)
        rows.append(("20,000 unknown keys", ours, cpu, 1, f"{theirs * 1000:.0f} ms", f"{ours / theirs:.2f}", ours, f"{cpu / their_cpu:.2f}"))

    print(f"{'case':<22} {'reprogate':>10} {'best':>8} {'ms/record':>10} {'CPU ms/rec':>10}  {'check-jsonschema':>22} {'ratio':>7} {'CPU ratio':>9}")
    for name, ours, cpu, count, theirs, ratio, best, cpu_ratio in rows:
        print(f"{name:<22} {ours:>9.2f}s {best:>7.2f}s {ours / count * 1000:>10.2f} {cpu / count * 1000:>10.2f}  {theirs:>22} {ratio:>7} {cpu_ratio:>9}")
    print("(N-record rows: medians of runs in turns; best: the fastest run; single rows: best of --repeat)")
    if len(medians) > 1:
        (low, wall_low, cpu_low), (high, wall_high, cpu_high) = medians[0], medians[-1]
        print(f"linearity, per record at {high:,} / at {low:,}: wall {wall_high / wall_low:.2f}, CPU {cpu_high / cpu_low:.2f} (1.00 = linear)")
        # The fixed start (interpreter, imports, schemas) flatters the larger size; without it:
        start_wall, start_cpu = rows[0][1], rows[0][2]
        marginal = [((wall * count - start_wall) / (count - 1), (cpu * count - start_cpu) / (count - 1)) for count, wall, cpu in (medians[0], medians[-1])]
        print(f"  the same less the one-record run's cost: wall {marginal[1][0] / marginal[0][0]:.2f}, CPU {marginal[1][1] / marginal[0][1]:.2f}")
    python_start, _ = best_time([sys.executable, "-c", "pass"], args.repeat)
    print(f"(Python start alone: {python_start * 1000:.0f} ms; best of {args.repeat} runs each)")


if __name__ == "__main__":
    main()
