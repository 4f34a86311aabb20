"""Every optional or heavy library reprogate imports where it is used, imported at once on request.

Functions import a few libraries only when they need them (tests/test_architecture.py lists
them: NVML, blake3, docker, kubernetes, requests, jsonschema ...), so `validate` starts fast. A
rebuild must not: its ranks run the code under test, which could plant a module (a `pynvml.py`)
anywhere on reprogate's import path it can write — an unsandboxed rank, a Slurm node sharing the
runner's home — and reprogate would import it after the ranks ran, in its own process, able to
rewrite the verdict. `preload()` imports each of them before the first rank starts and records
each one that is absent as absent (`sys.modules[name] = None`: a later import raises ImportError
without looking at the file system), so nothing written after that point is ever imported. The
action's own venv is read-only and checked by its digest besides (docs/security.md).
"""

from __future__ import annotations

import importlib
import sys

# The deferred imports of the package (tests/test_architecture.py DEFERRED) that a command past
# its start may reach, with the submodules functions import by name. torch, numpy and scipy are
# not here: the rebuild's own process never imports them (the ranks do, in their environment).
OPTIONAL_MODULES: tuple[str, ...] = (
    "pynvml",
    "blake3",
    "docker",
    "docker.types",
    "kubernetes",
    "kubernetes.client",
    "kubernetes.config",
    "requests",
    "requests.adapters",
    "requests.utils",
    "urllib3",
    "urllib3.util.retry",
    "jsonschema",
    "jsonschema.exceptions",
    "referencing",
    "dockerfile_parse",
    "dockerfile_parse.util",
    "pip_requirements_parser",
    "packaging.requirements",
    "packaging.utils",
    "packaging.version",
    "fcntl",
    "tomllib",
    "tomli",  # tomllib's name before Python 3.11
    "yaml",
)


def preload(names: tuple[str, ...] = OPTIONAL_MODULES) -> dict[str, bool]:
    """Import every module of `names` now; one that cannot be imported is recorded as absent, so
    it stays absent for the rest of the process. Returns which were found."""
    found: dict[str, bool] = {}
    for name in names:
        if name in sys.modules:
            found[name] = sys.modules[name] is not None
            continue
        try:
            importlib.import_module(name)
            found[name] = True
        except Exception:  # noqa: BLE001 - not installed, or a library that fails to load here (no driver): absent either way
            sys.modules[name] = None  # type: ignore[assignment]  # None there makes a later import raise ImportError (the import system's documented block); typeshed types the values as ModuleType
            found[name] = False
    return found


__all__ = ["OPTIONAL_MODULES", "preload"]
