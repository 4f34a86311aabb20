"""The part of reprogate that training code may import, copied read-only beside a realized
environment, so the user installs nothing of reprogate there.

Training code imports `reprogate.trace` (or a framework's callback from
`reprogate.integrations`); the rebuild's rank host, preflight checks and probe run
from the same folder. Only these modules are copied (they import the standard library, and torch
inside functions): the public `reprogate.trace`, the canonical hashing it uses, the training-side
integrations (TRAINING_INTEGRATIONS), and every module of `reprogate/runtime/`, listed from the folder itself so a new runtime module cannot be left
behind (a rank would fail to import it). The folder is put on PYTHONPATH and mounted read-only
into containers. Every file is made read-only so a training script cannot change what the next
rank or seed runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import reprogate

PACKAGE = Path(reprogate.__file__).resolve().parent
# The framework callbacks training code imports (`from reprogate.integrations.transformers import
# ReprogateCallback`): they import only the runtime and their framework, so they travel with it.
TRAINING_INTEGRATIONS = ("__init__.py", "transformers.py", "lightning.py")
MODULES = (
    "__init__.py",
    "trace.py",
    "core/__init__.py",
    "core/canonical.py",
    *sorted(f"runtime/{path.name}" for path in (PACKAGE / "runtime").glob("*.py")),
    *(f"integrations/{name}" for name in TRAINING_INTEGRATIONS),
)


def runtime_folder(target: Path) -> Path:
    """Write the injected package under target/ (as target/reprogate/...); returns target."""
    for rel in MODULES:
        source = PACKAGE / rel
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
