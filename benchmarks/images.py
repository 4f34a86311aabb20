"""Benchmark: resolving 100 image references against a local registry.

reprogate (one process, one connection pool, tokens reused) against `skopeo inspect --raw` run
once per reference, as a shell script would. Needs docker-registry and skopeo (Debian).

    .venv/bin/python benchmarks/images.py [--count 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.registry import start_registry  # the same registry the tests start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        registry = start_registry(Path(tmp) / "registry")
        try:
            refs = []
            for i in range(args.count):
                registry.push(f"bench/app{i % 10}", f"v{i}", f"payload {i}")
                refs.append(f"{registry.host}/bench/app{i % 10}:v{i}")
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "reprogate", "image", "resolve", *refs], check=True, capture_output=True)
            ours = time.perf_counter() - start
            start = time.perf_counter()
            for ref in refs:
                subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"], check=True, capture_output=True)
            theirs = time.perf_counter() - start
        finally:
            registry.stop()
    print(
        f"{args.count} references: reprogate {ours:.2f} s ({ours / args.count * 1000:.1f} ms each, one process), skopeo "
        f"inspect --raw per reference {theirs:.2f} s ({theirs / args.count * 1000:.1f} ms each); ratio {ours / theirs:.2f}"
    )


if __name__ == "__main__":
    main()
