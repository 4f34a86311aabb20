"""Environment variables that change what libraries compute, and never a credential.

Allowlist, not denylist: only variables under these names and prefixes are recorded at all
(NCCL, cuBLAS, cuDNN, CUDA, PyTorch and its CPU capability, OpenMP/MKL/OpenBLAS threading, MKL's
reproducibility mode, oneDNN's instruction-set cap, hash seeds). Among those, any whose name or value looks like a credential
(core/redact) is dropped without a trace but a count: it is written nowhere.
"""

from __future__ import annotations

from typing import Any

from reprogate.capture.base import CaptureContext
from reprogate.core.redact import is_secret_name, looks_secret

SECTION = "environment"

PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "CUBLAS_",
    "CUBLASLT_",
    "CUDNN_",
    "CUDA_",
    "TORCH_",
    "PYTORCH_",
    "NVIDIA_",
    "OMP_",
    "KMP_",
    "MKL_",
    "OPENBLAS_",
    "GOMP_",
    "DNNL_",
    "ONEDNN_",
    "XLA_",
    "JAX_",
    "UCX_",
    "FI_",
    "GLOO_",
)
# TensorFlow's variables by name: the TF_ prefix also covers Terraform's (TF_VAR_*, TF_CLI_*).
NAMES = {
    "ATEN_CPU_CAPABILITY",
    "TF_DETERMINISTIC_OPS",
    "TF_CUDNN_DETERMINISTIC",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_GPU_ALLOCATOR",
    "TF_FORCE_GPU_ALLOW_GROWTH",
    "TF_XLA_FLAGS",
    "PYTHONHASHSEED",
    "TOKENIZERS_PARALLELISM",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
}
MAX_VALUE = 4096


def recorded(name: str) -> bool:
    return name in NAMES or name.startswith(PREFIXES)


def capture(ctx: CaptureContext) -> dict[str, Any]:
    variables: dict[str, str] = {}
    redacted = 0
    for name in sorted(ctx.env):
        if not recorded(name):
            continue
        value = ctx.env[name]
        if is_secret_name(name) or looks_secret(value) or len(value) > MAX_VALUE:
            redacted += 1
            continue
        variables[name] = value
    return {"variables": variables, "redacted": redacted}
