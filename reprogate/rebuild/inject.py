"""The part of reprogate that training code may import, copied read-only beside a realized
environment, so the user installs nothing of reprogate there.

Training code imports `reprogate.trace`; the rebuild's rank host, preflight checks and probe run
from the same folder. Only these modules are copied (they import the standard library, and torch
inside functions); the folder is put on PYTHONPATH and mounted read-only into containers. Every
file is made read-only so a training script cannot change what the next rank or seed runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import reprogate

MODULES = (
    "__init__.py",
    "trace.py",
    "core/__init__.py",
    "core/canonical.py",
    "runtime/__init__.py",
    "runtime/trace.py",
    "runtime/portable_cpu.py",
    "runtime/rank_host.py",
    "runtime/preflight_rank.py",
    "runtime/probe.py",
)


def runtime_folder(target: Path) -> Path:
    """Write the injected package under target/ (as target/reprogate/...); returns target."""
    package = Path(reprogate.__file__).resolve().parent
    for rel in MODULES:
        source = package / rel
        if not source.exists():
            continue
        dest = target / "reprogate" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        dest.chmod(0o444)
    for folder in sorted({p for p in (target / "reprogate").rglob("*") if p.is_dir()} | {target / "reprogate"}, reverse=True):
        folder.chmod(0o555)
    return target


def make_writable(target: Path) -> None:
    """Undo the read-only bits so the work folder can be removed."""
    if not target.exists():
        return
    for path in [target, *target.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
