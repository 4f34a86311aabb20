"""A local wheelhouse for the lock files the venv-realizer tests install, so those tests reach no index.

The locked project's lock files (`tests/fixtures/projects/*/requirements*.txt`, hashed) and the tiny
example's (`examples/tiny/requirements.txt`, and its bump in `tests/fixtures/tiny-lock-bump/`) pin wheels
that live on PyPI and on this machine's find-links. A rebuild test that let uv ask PyPI would fail
whenever the network blinked, and would test the network, not reprogate. So the wheels are fetched
once, by pip with its own configuration and `--require-hashes` (only the pinned artifacts), together
with the seed packages `uv venv --seed` installs; the test session then runs uv with `UV_NO_INDEX`
and `UV_FIND_LINKS` pointing here, which the realizer honours as a user's uv settings.

The folder is cached under ``.ci/cache/wheels/<key>/`` (``key`` hashes this script, the lock files
and the interpreter's version) with a ``complete`` marker written last. `.ci/run` fills it in the
background while the project installs; a test session that finds no complete folder fills it
itself, waiting on a file lock if another process is already at it. If pip cannot fetch a wheel,
no folder is marked complete and the tests fall back to the indexes pip is configured with.

Usage (also what `.ci/run` does):
    python tests/support/wheelhouse.py [--cache DIR]
It prints the folder, or why there is none.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_CACHE = REPO / ".ci" / "cache" / "wheels"
# the fixture projects' locks, the flagship example's and its lock bump (tests/test_flagship.py rebuilds both in a venv)
FLAGSHIP_LOCKS = [REPO / "examples" / "tiny" / "requirements.txt", REPO / "tests" / "fixtures" / "tiny-lock-bump" / "requirements.txt"]
LOCKS = [*sorted((REPO / "tests" / "fixtures" / "projects").glob("*/requirements*.txt")), *FLAGSHIP_LOCKS]
SEED = ("pip", "setuptools", "wheel")  # what `uv venv --seed` installs into a Python 3.11 venv
PIP_TIMEOUT = 900


def key() -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for lock in LOCKS:
        digest.update(lock.name.encode() + b"\0" + lock.read_bytes())
    digest.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return digest.hexdigest()[:16]


def provide(cache: Path | None = None) -> tuple[Path | None, str]:
    """The complete wheelhouse folder (filled here when missing), or None and why."""
    cache = cache or Path(os.environ.get("REPROGATE_TEST_WHEELHOUSE", DEFAULT_CACHE))
    try:
        return _provide(cache, cache / key())
    except OSError as exc:  # a folder that cannot be made or written: the tests use pip's indexes
        return None, f"cannot fill {cache}: {exc.strerror or exc}"


def _provide(cache: Path, folder: Path) -> tuple[Path | None, str]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{folder.name}.lock", "w") as guard:
        import fcntl  # here, not at the top: conftest imports this module on Windows too (the core tests)

        fcntl.flock(guard, fcntl.LOCK_EX)  # another process filling it: wait, then find it complete
        if (folder / "complete").exists():
            return folder, "cached"
        building = cache / f"{folder.name}.building"
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir()
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:", "--dest", str(building)]
        steps = [[*pip, "--no-deps", "--require-hashes", "--requirement", str(lock)] for lock in LOCKS] + [[*pip, *SEED]]
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=PIP_TIMEOUT)
            except subprocess.TimeoutExpired:
                return None, f"pip download did not finish within {PIP_TIMEOUT} s"
            if done.returncode != 0:
                return None, "pip download failed: " + (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        (building / "complete").write_text("\n".join(sorted(p.name for p in building.iterdir())) + "\n")
        building.rename(folder)
        return folder, "filled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    folder, how = provide(args.cache)
    print(f"{folder} ({how})" if folder else f"no wheelhouse: {how}", flush=True)
    return 0 if folder else 1


if __name__ == "__main__":
    sys.exit(main())
