"""Python, the framework build and its determinism settings.

torch is imported only here and only when asked (it costs about a second); everything is read
defensively because CPU builds lack CUDA, cuDNN and NCCL attributes (torch.cuda.nccl.version()
raises AttributeError on CPU builds).
"""

from __future__ import annotations

import hashlib
import importlib.util
import platform
import warnings
from typing import Any

from reprogate.capture.base import CaptureContext

SECTION = "software"


def capture(ctx: CaptureContext) -> dict[str, Any]:
    section: dict[str, Any] = {"present": True, "python": platform.python_version()}
    if importlib.util.find_spec("torch") is None:
        section["reason"] = "torch is not installed"
        return section
    if not ctx.framework:
        section["reason"] = "framework not imported (--no-framework)"
        return section
    section.update(describe_torch())
    return section


def describe_torch() -> dict[str, Any]:
    import torch

    framework: dict[str, Any] = {
        "name": "torch",
        "version": str(torch.__version__),
        "git_version": str(torch.version.git_version),
        "cuda": torch.version.cuda and str(torch.version.cuda),
    }
    cudnn = _safe(lambda: torch.backends.cudnn.version())
    framework["cudnn"] = cudnn
    nccl = None
    if _safe(lambda: torch.distributed.is_available() and torch.distributed.is_nccl_available()):
        version = _safe(lambda: torch.cuda.nccl.version())
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else (str(version) if version else None)
    framework["nccl"] = nccl
    config = _safe(lambda: torch.__config__.show())
    if config:
        framework["config_digest"] = "sha256:" + hashlib.sha256(config.encode()).hexdigest()
    out: dict[str, Any] = {"framework": framework}
    if torch.version.cuda:
        out["cuda_toolkit"] = torch.version.cuda
        runtime = _safe(lambda: torch.cuda.is_available() and torch._C._cuda_getCompiledVersion())
        if isinstance(runtime, int) and runtime:
            out["cuda_runtime"] = f"{runtime // 1000}.{runtime % 1000 // 10}"
    with warnings.catch_warnings():  # the TF32 flags warn of deprecation in recent releases
        warnings.simplefilter("ignore")
        out["determinism"] = _determinism(torch)
    return out


def _determinism(torch: Any) -> dict[str, Any]:
    return {
        "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


def _safe(call: Any) -> Any:
    try:
        return call()
    except Exception:  # noqa: BLE001
        return None
