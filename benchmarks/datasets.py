"""Benchmark: `reprogate dataset manifest` and `verify` against the tools a user would otherwise run.

Every command runs as a whole process, page cache warm, in paired rounds (each round runs every
command once, in a rotating order); the table shows the median over the rounds of each: CPU
seconds (user + system of the whole process tree, from GNU time: on a shared machine what a run
costs, whatever else is running) and wall seconds. Ratios are reprogate's divided by the anchor's
(lower is better; the CPU ratio is the one the aims are stated in), and the peak RSS of each (the
largest process of the command's tree, so reprogate's forked hashing workers and each openssl count
on their own).

  small   N files of 1 KiB: manifest (.jsonl) and verify vs `xargs -P2 openssl dgst -sha256`
          (two openssl processes, like reprogate's two workers)          aim: CPU ratio <= 1.2
  large   F files of M MiB (default 128 x 64 MiB, 8 GiB, page cache warm): manifest and verify vs
          the same two openssl processes                   aim: CPU ratio <= 1.03 (0.97x openssl's)
          (reprogate's start-up, about 0.2 s, is nothing on a real dataset but a fifth of a 1 s
          run: 8 GiB keeps it to a twentieth, and the table also gives the ratios with it
          subtracted; --large-files 64 --large-mib 32 gives the 2 GiB figure)
  also    b3sum (apt: b3sum) against reprogate --algorithm blake3, and `dvc add --no-commit`
          (DVC's own md5 of a folder, hash cache cleared first; --dvc PATH, DVC is not a
          dependency of reprogate: install it in a separate virtual environment)
  million --million: 1,000,000 files of 64 bytes in 1,000 folders: manifest and verify,
          time and peak RSS (aim < 200 MiB); opt-in, it needs ~4 GB of disk and a few minutes

    .venv/bin/python benchmarks/datasets.py [--small 200000] [--large-files 128 --large-mib 64]
        [--rounds 3] [--workdir DIR] [--dvc PATH/TO/dvc] [--skip-small] [--skip-large] [--million]

issue 44's figures: --small 100000 --large-files 64 --large-mib 32 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
GNU_TIME = Path("/usr/bin/time")
JOBS = 2  # the anchors run two processes; reprogate gets two workers (the machine's cores here)


@dataclass
class Timing:
    seconds: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system of the whole process tree

    @property
    def median(self) -> float:
        """Wall seconds, the median of the paired rounds (every round is printed with --verbose)."""
        return statistics.median(self.seconds)

    @property
    def peak(self) -> int:
        return max(self.rss) if self.rss else 0

    @property
    def median_cpu(self) -> float:
        """CPU seconds of the process tree, the median of the rounds: what the work costs, whatever
        else the machine is running (a loaded machine stretches wall time far more than CPU time)."""
        return statistics.median(self.cpu) if self.cpu else 0.0


def run(command: list[str] | str, cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in bytes, CPU seconds) of one command, started by GNU time so the
    RSS is the command's own, not this (larger) Python process's; CPU counts its children."""
    shell = isinstance(command, str)
    argv = ["sh", "-c", command] if shell else command
    with tempfile.NamedTemporaryFile("r") as rss:
        wrapped = [str(GNU_TIME), "-q", "-f", "%M %U %S", "-o", rss.name, *argv] if GNU_TIME.exists() else argv
        start = time.perf_counter()
        result = subprocess.run(wrapped, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - start
        if result.returncode not in ok:
            raise SystemExit(f"{' '.join(argv)[:200]} exited {result.returncode}: {result.stderr.decode()[-2000:]}")
        fields = rss.read().split()
    return elapsed, int(fields[-3]) * 1024 if fields else 0, float(fields[-2]) + float(fields[-1]) if fields else 0.0


def rounds(commands: dict[str, tuple[list[str] | str, Path]], count: int, before: dict[str, list[str] | str] | None = None) -> dict[str, Timing]:
    """Run every command once per round, rotating the order so none always goes first."""
    timings = {name: Timing() for name in commands}
    names = list(commands)
    for r in range(count):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            command, cwd = commands[name]
            if before and name in before:
                subprocess.run(before[name], cwd=cwd, shell=isinstance(before[name], str), check=True, stdout=subprocess.DEVNULL)
            seconds, rss, cpu = run(command, cwd)
            timings[name].seconds.append(seconds)
            timings[name].rss.append(rss)
            timings[name].cpu.append(cpu)
    return timings


def xargs(tool: str, folder: str, files: int, procs: int = JOBS) -> str:
    """`find | xargs -P procs tool`, each process given an equal share of the files."""
    per = max(1, math.ceil(files / procs))
    return f"find {folder} -type f -print0 | xargs -0 -P {procs} -n {per} {tool} > /dev/null"


def make_small(root: Path, count: int, size: int, per_folder: int = 1000) -> None:
    payload = os.urandom(size + count)
    for i in range(count):
        folder = root / f"d{i // per_folder:04d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"f{i:07d}.bin", "wb") as fh:
            fh.write(payload[i : i + size])


def make_large(root: Path, files: int, mib: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    block = os.urandom(mib * 1024 * 1024)
    for i in range(files):
        with open(root / f"shard-{i:04d}.bin", "wb") as fh:
            fh.write(i.to_bytes(8, "little"))
            fh.write(memoryview(block)[8:])


def reprogate(*args: str) -> list[str]:
    return [str(BIN / "reprogate"), "dataset", *args, "-q"]


def check_against_openssl(manifest: Path, root: Path, sample: int = 2000) -> None:
    """The manifest's checksums are openssl's, for the first `sample` shards (untimed)."""
    expected = {}
    with open(manifest, encoding="utf-8") as fh:
        fh.readline()
        for line, _ in zip(fh, range(sample), strict=False):
            shard = json.loads(line)
            expected[shard["name"]] = shard["checksum"].split(":", 1)[1]
    out = subprocess.run(["openssl", "dgst", "-sha256", "-r", *expected], cwd=root, capture_output=True, text=True, check=True).stdout
    found = {name.lstrip("*"): digest for digest, name in (line.split(" ", 1) for line in out.splitlines())}
    if found != expected:
        raise SystemExit(f"{manifest}: checksums differ from openssl's")


def row(work: str, ours: Timing, anchor: Timing, anchor_name: str, unit: tuple[str, float]) -> list[str]:
    label, amount = unit

    def rate(t: Timing) -> str:
        return f"{t.median:.2f} s, {amount / t.median:,.0f} {label}"

    rss = f"{ours.peak / 2**20:.0f} / {anchor.peak / 2**20:.0f} MiB"
    cpu = f"{ours.median_cpu:.2f} / {anchor.median_cpu:.2f} s" if anchor.median_cpu else "-"
    cpu_ratio = f"{ours.median_cpu / anchor.median_cpu:.2f}" if anchor.median_cpu else "-"
    return [work, cpu, cpu_ratio, rate(ours), f"{anchor_name}: {rate(anchor)}", f"{ours.median / anchor.median:.2f}", rss]


def print_table(title: str, rows: list[list[str]]) -> None:
    head = ["work", "CPU (reprogate / anchor)", "CPU ratio", "reprogate wall", "anchor wall", "wall ratio", "peak RSS (reprogate / anchor)"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print(f"\n{title}")
    for r in [head, ["-" * w for w in widths], *rows]:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))


def bench_files(name: str, root: Path, count: int, total: int, args: argparse.Namespace, unit: tuple[str, float]) -> None:
    base = root.parent
    manifest, blake = base / f"{root.name}.jsonl", base / f"{root.name}.b3.jsonl"
    subprocess.run(reprogate("manifest", str(root), "-o", str(manifest)), check=True, stdout=subprocess.DEVNULL)
    subprocess.run(reprogate("manifest", str(root), "-o", str(blake), "--algorithm", "blake3"), check=True, stdout=subprocess.DEVNULL)
    check_against_openssl(manifest, root)
    run(xargs("cat", root.name, count), base)  # warm the page cache
    tiny = base / "tiny"
    tiny.mkdir(exist_ok=True)
    (tiny / "one.bin").write_bytes(b"1")
    subprocess.run(reprogate("manifest", str(tiny), "-o", str(base / "tiny.jsonl")), check=True, stdout=subprocess.DEVNULL)
    jobs = ["--jobs", str(JOBS)]
    commands: dict[str, tuple[list[str] | str, Path]] = {
        "start-up": (reprogate("verify", str(base / "tiny.jsonl"), "--root", str(tiny)), base),
        "manifest": (reprogate("manifest", str(root), "-o", str(base / "out.jsonl"), *jobs), base),
        "verify": (reprogate("verify", str(manifest), "--root", str(root), *jobs), base),
        "openssl": (xargs("openssl dgst -sha256", root.name, count), base),
        "verify-blake3": (reprogate("verify", str(blake), "--root", str(root), *jobs), base),
        "b3sum": (xargs("b3sum --num-threads 1", root.name, count), base),
    }
    before: dict[str, list[str] | str] = {}
    if args.dvc:
        repo = root.parent
        if not (repo / ".dvc").exists():
            subprocess.run([args.dvc, "init", "--no-scm", "-q"], cwd=repo, check=True)
            subprocess.run([args.dvc, "config", "core.site_cache_dir", str(repo / ".dvc-site")], cwd=repo, check=True)
        commands["dvc"] = ([args.dvc, "add", "--no-commit", "-q", root.name], repo)
        before["dvc"] = f"rm -rf .dvc-site .dvc/tmp {root.name}.dvc"  # DVC caches hashes by inode and mtime
    timings = rounds(commands, args.rounds, before)
    rows = [
        row(f"manifest, {name}", timings["manifest"], timings["openssl"], "xargs -P2 openssl", unit),
        row(f"verify, {name}", timings["verify"], timings["openssl"], "xargs -P2 openssl", unit),
        row(f"verify --algorithm blake3, {name}", timings["verify-blake3"], timings["b3sum"], "xargs -P2 b3sum", unit),
    ]
    if "dvc" in timings:
        rows.append(row(f"manifest, {name} (DVC hashes md5)", timings["manifest"], timings["dvc"], "dvc add --no-commit", unit))
    print_table(f"{name}: {count:,} files, {total / 2**20:,.1f} MiB, medians of {args.rounds} paired rounds", rows)
    start, start_cpu = timings["start-up"].median, timings["start-up"].median_cpu
    print(f"  reprogate's start-up (verify of a one-shard manifest), included in its times: {start:.2f} s wall, {start_cpu:.2f} s CPU")
    steady = [f"{work} {(timings[work].median_cpu - start_cpu) / timings['openssl'].median_cpu:.2f}" for work in ("manifest", "verify")]
    print(f"  CPU ratios with that start-up subtracted (the hashing itself): {', '.join(steady)}")
    if args.verbose:
        for label, timing in timings.items():
            print(f"  {label:<16} wall " + " ".join(f"{t:.2f}" for t in timing.seconds) + " s; CPU " + " ".join(f"{t:.2f}" for t in timing.cpu) + " s")
    for path in (manifest, blake, base / "out.jsonl", base / f"{root.name}.dvc"):
        path.unlink(missing_ok=True)


def bench_million(base: Path, count: int, reuse: Path | None) -> None:
    """One round at a million shards: time, peak RSS and CPU of manifest and verify (and of
    validate and digest, which read the manifest alone), openssl over the same files."""
    root = reuse or base / "million"
    if reuse is None:
        started = time.perf_counter()
        make_small(root, count, 64)
        print(f"\nmillion: made {count:,} files in {time.perf_counter() - started:.0f} s")
    count = sum(len(files) for _, _, files in os.walk(root))
    manifest = base / "million.jsonl"
    work = {
        "manifest": run(reprogate("manifest", str(root), "-o", str(manifest), "--jobs", str(JOBS)), base),
        "verify": run(reprogate("verify", str(manifest), "--root", str(root), "--jobs", str(JOBS)), base),
        "validate": run([str(BIN / "reprogate"), "validate", str(manifest)], base),
        "digest --manifest": run([str(BIN / "reprogate"), "digest", "--manifest", str(manifest)], base),
    }
    anchor = run(xargs("openssl dgst -sha256", root.name, count), root.parent)
    rows = []
    for name, (seconds, rss, cpu) in work.items():
        hashing = name in ("manifest", "verify")
        rows.append(
            [
                f"{name}, {count:,} shards",
                f"{cpu:.1f} / {anchor[2]:.1f} s" if hashing else f"{cpu:.1f} s",
                f"{cpu / anchor[2]:.2f}" if hashing else "-",
                f"{seconds:.1f} s, {count / seconds:,.0f} shards/s",
                f"xargs -P2 openssl: {anchor[0]:.1f} s" if hashing else "-",
                f"{seconds / anchor[0]:.2f}" if hashing else "-",
                f"{rss / 2**20:.0f} / {anchor[1] / 2**20:.0f} MiB" if hashing else f"{rss / 2**20:.0f} MiB",
            ]
        )
    print_table(f"million: {count:,} shards, manifest {manifest.stat().st_size / 2**20:.0f} MiB (one round)", rows)
    if reuse is None:
        shutil.rmtree(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=200_000, help="number of 1 KiB files")
    parser.add_argument("--large-files", type=int, default=128)
    parser.add_argument("--large-mib", type=int, default=64, help="size of each large file (8 GiB in all by default: it must fit in the page cache)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--dvc", default=shutil.which("dvc"), help="the dvc executable (default: on PATH)")
    parser.add_argument("--skip-small", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="also every round's time of every command")
    parser.add_argument("--million", action="store_true", help="also the 1M-shard run (opt-in)")
    parser.add_argument("--million-files", type=int, default=1_000_000)
    parser.add_argument("--million-dir", type=Path, default=None, help="an existing folder of many small files to use instead")
    args = parser.parse_args()
    for tool in ("openssl", "b3sum"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (apt-get install {tool})")
    print(f"reprogate --jobs {JOBS} vs anchors with {JOBS} processes; dvc: {args.dvc or 'not installed (pass --dvc)'}")
    # An installed reprogate starts from bytecode (pip compiles it when installing); a checkout run
    # with PYTHONDONTWRITEBYTECODE set would compile its modules again in every timed start.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "reprogate")], check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        base = Path(tmp)
        if not args.skip_small:
            make_small(base / "small", args.small, 1024)
            bench_files(f"{args.small:,} × 1 KiB", base / "small", args.small, args.small * 1024, args, ("files/s", args.small))
            shutil.rmtree(base / "small")
        if not args.skip_large:
            total = args.large_files * args.large_mib * 2**20
            make_large(base / "large", args.large_files, args.large_mib)
            bench_files(f"{args.large_files} × {args.large_mib} MiB", base / "large", args.large_files, total, args, ("MB/s", total / 1e6))
            shutil.rmtree(base / "large")
        if args.million:
            bench_million(base, args.million_files, args.million_dir)


if __name__ == "__main__":
    main()
