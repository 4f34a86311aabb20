"""Run a helper program with a timeout, never through a shell, never raising."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def run(argv: list[str], cwd: Path | None = None, timeout: float = 10.0) -> tuple[int, bytes, str]:
    """(exit code, stdout bytes, stderr text); exit code 127 when the program is missing."""
    if shutil.which(argv[0]) is None:
        return 127, b"", f"{argv[0]} not found"
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, b"", f"{argv[0]} timed out after {timeout:.0f} s"
    except OSError as exc:
        return 126, b"", str(exc)
    return done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")
