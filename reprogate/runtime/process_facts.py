"""What this process really runs with, read for the trace's meta: the CPU side (torch's kernels,
MKL's mode, threads, the variables that choose them), the determinism switches and the world size.

Read inside the training process, after the script configured torch, so `validate` and `rebuild`
hold a record to what the reference run used rather than to what it says it used. torch is taken
from sys.modules: these never import it.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings
from collections.abc import Callable
from typing import Any

from reprogate.runtime.portable_cpu import CPU_ENV_NAMES, mkl_cbwr_mode
from reprogate.runtime.seeding import applied


def cpu_facts() -> dict[str, Any]:
    """The CPU side of this process as torch sees it: capability, MKL mode, threads, variables."""
    facts: dict[str, Any] = {"architecture": platform.machine()}
    torch = sys.modules.get("torch")
    if torch is not None:
        facts["capability"] = str(torch.backends.cpu.get_cpu_capability()).lower()
        facts["threads"] = int(torch.get_num_threads())
        mode = mkl_cbwr_mode(torch)
        if mode is not None:
            facts["mkl_cbwr"] = mode
    variables = {name: os.environ[name] for name in CPU_ENV_NAMES if name in os.environ}
    if variables:
        facts["env"] = variables
    facts["portable"] = bool(applied().get("portable_cpu", False))
    return facts


def determinism_facts() -> dict[str, Any]:
    """The determinism switches in force in this process (torch imported by the script, else none)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}

    def read(get: Callable[[], Any]) -> Any:
        try:
            return get()
        except Exception:  # noqa: BLE001 - a switch this torch does not have
            return None

    with warnings.catch_warnings():  # the TF32 flags warn of deprecation in recent releases
        warnings.simplefilter("ignore")
        found = {
            "deterministic_algorithms": read(lambda: bool(torch.are_deterministic_algorithms_enabled())),
            "cudnn_deterministic": read(lambda: bool(torch.backends.cudnn.deterministic)),
            "cudnn_benchmark": read(lambda: bool(torch.backends.cudnn.benchmark)),
            "tf32_matmul": read(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
            "tf32_cudnn": read(lambda: bool(torch.backends.cudnn.allow_tf32)),
            "float32_matmul_precision": read(torch.get_float32_matmul_precision),
            "mkldnn_enabled": read(lambda: bool(torch.backends.mkldnn.enabled)),
            "mkldnn_deterministic": read(lambda: bool(torch.backends.mkldnn.deterministic)),
        }
    return {k: v for k, v in found.items() if v is not None}


def world_size() -> int:
    """The world size the process group really has, else what the launcher said."""
    dist = sys.modules.get("torch.distributed")
    launcher = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:  # noqa: BLE001 - a half-initialised group: fall back to the launcher's word
        return launcher
    return launcher
