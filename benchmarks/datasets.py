"""Benchmark: `reprogate dataset verify` against openssl and sha256sum over the same files.

Two datasets, page-cached: (a) 2 GiB in 64 shards, (b) 20,000 files of 4 KiB. For each, prints
wall time, throughput, peak RSS (ru_maxrss of that process alone) and ratios:

  per core   reprogate --jobs 1  vs  openssl dgst -sha256 (one process)     aim >= 0.9x throughput
  all cores  reprogate --jobs N  vs  openssl dgst -sha256 (one process)     aim >= 1.8x on (a)
  small      reprogate --jobs N  vs  xargs -P N openssl                     aim: no slower on (b)
  memory     peak RSS of reprogate                                          aim < 100 MiB

openssl uses SHA-NI here (about 1.6 GB/s, the per-core limit); coreutils 9.1 sha256sum does not
(about 0.5 GB/s). Best of --repeat runs each. Needs about 2.1 GiB in --workdir (default: a
temporary folder).

    .venv/bin/python benchmarks/datasets.py [--repeat 3] [--workdir DIR] [--skip-large]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
CORES = os.cpu_count() or 1


GNU_TIME = Path("/usr/bin/time")


def run(argv: list[str], cwd: Path) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of one command; fails loudly on a non-zero exit.

    Peak RSS comes from GNU time, which forks the command from its own small process: a child
    forked from this (large) Python process would report our high-water mark instead of its own.
    For a pipeline (xargs), it is the largest process in it.
    """
    with tempfile.NamedTemporaryFile("r") as rss:
        wrapped = [str(GNU_TIME), "-q", "-f", "%M", "-o", rss.name, *argv] if GNU_TIME.exists() else argv
        start = time.perf_counter()
        result = subprocess.run(wrapped, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:3])} ... exited {result.returncode}: {result.stderr.decode()}")
        text = rss.read().strip()
    return elapsed, int(text.splitlines()[-1]) * 1024 if text else 0


def best(argv: list[str], cwd: Path, repeat: int) -> tuple[float, int]:
    runs = [run(argv, cwd) for _ in range(repeat)]
    return min(t for t, _ in runs), max(r for _, r in runs)


def xargs(tool: list[str], files: list[str], jobs: int) -> list[str]:
    per = max(1, math.ceil(len(files) / jobs))
    return ["sh", "-c", f"printf '%s\\0' \"$@\" | xargs -0 -P {jobs} -n {per} {' '.join(tool)} > /dev/null", "sh", *files]


def make_large(root: Path) -> None:
    block = os.urandom(32 * 1024 * 1024)
    for i in range(64):
        with open(root / f"shard-{i:03d}.bin", "wb") as fh:
            fh.write(i.to_bytes(8, "little"))
            fh.write(memoryview(block)[8:])
    del block


def make_small(root: Path) -> None:
    for i in range(20_000):
        folder = root / f"d{i // 1000:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.bin").write_bytes(os.urandom(4096))


def bench(name: str, root: Path, repeat: int) -> None:
    manifest = root.parent / f"{root.name}.manifest.json"  # JSON: the format for large datasets
    subprocess.run([str(BIN / "reprogate"), "dataset", "manifest", str(root), "-o", str(manifest), "-q"], check=True, stdout=subprocess.DEVNULL)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    total = sum((root / f).stat().st_size for f in files)
    run(["cat", *files[:2000]], root)  # warm the page cache (files were just written, mostly cached)
    verify = [str(BIN / "reprogate"), "dataset", "verify", str(manifest), "--root", str(root), "-q"]
    rows = {
        "reprogate --jobs 1": best([*verify, "--jobs", "1"], root, repeat),
        f"reprogate --jobs {CORES}": best([*verify, "--jobs", str(CORES)], root, repeat),
        "openssl dgst -sha256": best(xargs(["openssl", "dgst", "-sha256"], files, 1), root, repeat),
        f"xargs -P {CORES} openssl": best(xargs(["openssl", "dgst", "-sha256"], files, CORES), root, repeat),
        "sha256sum": best(xargs(["sha256sum"], files, 1), root, repeat),
        f"xargs -P {CORES} sha256sum": best(xargs(["sha256sum"], files, CORES), root, repeat),
    }
    print(f"\n{name}: {len(files):,} files, {total / 2**30:.2f} GiB")
    print(f"  {'command':<24} {'seconds':>8} {'MB/s':>8} {'peak RSS':>10}")
    for label, (seconds, rss) in rows.items():
        print(f"  {label:<24} {seconds:>8.3f} {total / seconds / 1e6:>8.0f} {rss / 2**20:>7.1f} MiB")
    one = rows["openssl dgst -sha256"][0]
    print(f"  per core : reprogate/openssl throughput = {one / rows['reprogate --jobs 1'][0]:.2f}x")
    print(f"  all cores: reprogate/openssl throughput = {one / rows[f'reprogate --jobs {CORES}'][0]:.2f}x")
    print(f"  vs xargs -P {CORES} openssl: {rows[f'xargs -P {CORES} openssl'][0] / rows[f'reprogate --jobs {CORES}'][0]:.2f}x (>1: reprogate faster)")
    print(f"  vs sha256sum: {rows['sha256sum'][0] / rows[f'reprogate --jobs {CORES}'][0]:.2f}x")
    print(f"  reprogate peak RSS: {max(rows['reprogate --jobs 1'][1], rows[f'reprogate --jobs {CORES}'][1]) / 2**20:.1f} MiB (largest process; the small-file pool forks {CORES} workers)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--skip-large", action="store_true", help="only the 20,000 small files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        base = Path(tmp)
        if not args.skip_large:
            (base / "large").mkdir()
            make_large(base / "large")
            bench("(a) 64 shards of 32 MiB", base / "large", args.repeat)
            for p in (base / "large").iterdir():
                p.unlink()
        (base / "small").mkdir()
        make_small(base / "small")
        bench("(b) 20,000 files of 4 KiB", base / "small", args.repeat)


if __name__ == "__main__":
    main()
