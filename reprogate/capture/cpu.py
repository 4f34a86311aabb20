"""The CPU side of the numeric chain: instruction sets, torch's CPU capability, BLAS and threads.

Bitwise equality on a CPU holds only where the same kernels run. torch compiles its vectorised
kernels several times (default, AVX2, AVX-512) and picks one per process; MKL picks a BLAS code
path per CPU (Intel or not, which vector units) unless MKL_CBWR fixes it; oneDNN (convolutions)
JIT-compiles for the best instruction set below ONEDNN_MAX_CPU_ISA. So a record states the CPU's
flags, the capability torch chose, the BLAS/LAPACK and oneDNN builds and the thread counts.

`predict_capability` works out, without importing torch, which capability torch will choose in a
process started with a given environment on this CPU, following torch's own rules (ATen's
DispatchStub.cpp, x86-64 builds): an ATEN_CPU_CAPABILITY of exactly `default`, `avx2` or `avx512`
is honoured even where the CPU lacks the instructions (the process then dies of an illegal
instruction at its first such kernel); any other value is ignored with a warning, and then the
CPU decides: `avx512` needs AVX512VL, AVX512BW, AVX512DQ and FMA; `avx2` needs AVX2 and FMA;
otherwise `default`. `predict_mkl_cbwr` does the same for MKL's reproducibility mode.
"""

from __future__ import annotations

import importlib.util
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.capture.base import CaptureContext
from reprogate.runtime.portable_cpu import mkl_cbwr_mode

SECTION = "cpu"

X86 = ("x86_64", "amd64", "i386", "i686")
# /proc/cpuinfo flags that change which kernels torch, MKL or oneDNN run.
KERNEL_FLAGS = (
    "sse2",
    "ssse3",
    "sse4_1",
    "sse4_2",
    "avx",
    "f16c",
    "fma",
    "avx2",
    "avx_vnni",
    "avx512f",
    "avx512cd",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx512ifma",
    "avx512vbmi",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
)
# torch's x86 capabilities, weakest first, and the CPU flags each needs (DispatchStub.cpp).
CAPABILITY_NEEDS: dict[str, tuple[str, ...]] = {"default": (), "avx2": ("avx2", "fma"), "avx512": ("avx512vl", "avx512bw", "avx512dq", "fma")}
CAPABILITY_ENV = "ATEN_CPU_CAPABILITY"
# MKL_CBWR branches that name an instruction set, and the flag each needs; MKL honours them on Intel
# CPUs that have it and runs AUTO anywhere else (oneMKL developer guide, "Getting Started with
# Conditional Numerical Reproducibility").
MKL_BRANCH_NEEDS = {
    "SSE2": "sse2",
    "SSSE3": "ssse3",
    "SSE4_1": "sse4_1",
    "SSE4_2": "sse4_2",
    "AVX": "avx",
    "AVX2": "avx2",
    "AVX512": "avx512f",
    "AVX512_E1": "avx512_vnni",
}


@dataclass(frozen=True)
class CpuInfo:
    """What the kernel says about the CPU (Linux /proc/cpuinfo; on other systems only the architecture)."""

    architecture: str
    vendor: str | None = None
    model: str | None = None
    family: int | None = None
    model_number: int | None = None
    stepping: int | None = None
    logical_cpus: int | None = None
    flags: frozenset[str] = field(default_factory=frozenset)

    @property
    def x86(self) -> bool:
        return self.architecture.lower() in X86


def read_cpuinfo(path: Path = Path("/proc/cpuinfo"), architecture: str | None = None) -> CpuInfo:
    """The first processor's description, and how many processors there are."""
    arch = architecture or platform.machine()
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return CpuInfo(arch, logical_cpus=os.cpu_count())
    first: dict[str, str] = {}
    processors = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "processor":
            processors += 1
        if processors <= 1 and key not in first:
            first[key] = value.strip()

    def number(name: str) -> int | None:
        value = first.get(name, "")
        return int(value) if value.isdigit() else None

    flags = first.get("flags") or first.get("features") or ""
    return CpuInfo(
        architecture=arch,
        vendor=first.get("vendor_id") or first.get("cpu implementer"),
        model=first.get("model name") or first.get("hardware") or first.get("cpu model"),
        family=number("cpu family"),
        model_number=number("model"),
        stepping=number("stepping"),
        logical_cpus=processors or os.cpu_count(),
        flags=frozenset(flags.split()),
    )


# predictions -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapabilityPrediction:
    capability: str | None  # what torch will use, lowercase (None: cannot say on this architecture)
    requested: str | None  # ATEN_CPU_CAPABILITY as the process will see it
    supported: tuple[str, ...]  # what this CPU can run
    how: str  # why, in words

    @property
    def runnable(self) -> bool:
        return self.capability is not None and self.capability in self.supported


def supported_capabilities(cpu: CpuInfo) -> tuple[str, ...]:
    """torch's x86 capabilities this CPU has the instructions for, weakest first."""
    if not cpu.x86:
        return ("default",)
    return tuple(name for name, needs in CAPABILITY_NEEDS.items() if all(flag in cpu.flags for flag in needs))


def predict_capability(env: Mapping[str, str], cpu: CpuInfo, pinned_in_process: str | None = None) -> CapabilityPrediction:
    """The CPU capability torch will choose in a process with environment `env` on `cpu`.

    `pinned_in_process` is a capability the training script sets itself before its first kernel
    (seed_everything(portable_cpu=True) sets `default`), which wins over the environment."""
    supported = supported_capabilities(cpu)
    requested = env.get(CAPABILITY_ENV)
    if pinned_in_process:
        how = f"the training script pins {pinned_in_process} itself (seed_everything(portable_cpu=True))"
        return CapabilityPrediction(pinned_in_process, requested, supported, how)
    if requested == "default":
        return CapabilityPrediction("default", requested, supported, "ATEN_CPU_CAPABILITY=default")
    if not cpu.x86:
        how = f"torch's choice on {cpu.architecture} is not predicted; only ATEN_CPU_CAPABILITY=default is certain there"
        return CapabilityPrediction(None, requested, supported, how)
    if requested in CAPABILITY_NEEDS:
        how = f"ATEN_CPU_CAPABILITY={requested}"
        if requested not in supported:
            missing = ", ".join(f for f in CAPABILITY_NEEDS[requested] if f not in cpu.flags)
            how += f", which this CPU lacks the instructions for ({missing} missing)"
        return CapabilityPrediction(requested, requested, supported, how)
    best = supported[-1]
    why = f"the best this CPU supports ({'/'.join(CAPABILITY_NEEDS[best]) or 'baseline x86-64'})"
    if requested is not None:
        why = f"ATEN_CPU_CAPABILITY={requested!r} is not a value torch accepts (default, avx2, avx512: lowercase), so torch ignores it and takes " + why
    return CapabilityPrediction(best, requested, supported, why)


def predict_mkl_cbwr(env: Mapping[str, str], cpu: CpuInfo, pinned_in_process: str | None = None) -> str:
    """MKL's reproducibility mode in a process with environment `env` on `cpu`.

    As MKL reads MKL_CBWR (checked against MKL in tests): unset or empty is OFF; otherwise a
    branch name exactly as documented (upper case, first), optionally followed by `,STRICT`;
    anything else runs AUTO. An instruction-set branch runs only on an Intel CPU that has it,
    AUTO elsewhere."""
    if pinned_in_process:
        return pinned_in_process
    value = env.get("MKL_CBWR")
    if not value:
        return "OFF"
    branch, *rest = value.split(",")
    options = [p.strip() for p in rest]
    if branch not in ("AUTO", "COMPATIBLE", *MKL_BRANCH_NEEDS) or any(p != "STRICT" for p in options):
        return "AUTO"
    strict = ",STRICT" if options else ""
    if branch in ("AUTO", "COMPATIBLE"):
        return branch + strict
    if cpu.vendor == "GenuineIntel" and MKL_BRANCH_NEEDS[branch] in cpu.flags:
        return branch + strict
    return "AUTO" + strict


def normalise_capability(value: Any) -> str:
    """torch's spelling (AVX2, DEFAULT) and the environment's (avx2, default) compare as one."""
    return str(value).strip().lower()


# the capture layer -------------------------------------------------------------------------------


def capture(ctx: CaptureContext) -> dict[str, Any]:
    cpu = read_cpuinfo()
    section: dict[str, Any] = {"present": True, "architecture": cpu.architecture}
    for key in ("vendor", "model", "family", "model_number", "stepping", "logical_cpus"):
        value = getattr(cpu, key)
        if value is not None:
            section[key] = value
    section["flags"] = sorted(f for f in KERNEL_FLAGS if f in cpu.flags)
    prediction = predict_capability(ctx.env, cpu)
    capability: dict[str, Any] = {"supported": list(prediction.supported)}
    if prediction.requested is not None:
        capability["requested"] = prediction.requested
    if prediction.capability is not None:
        capability.update(effective=prediction.capability, source="predicted")
    section["mkl_cbwr"] = predict_mkl_cbwr(ctx.env, cpu)
    section["capability"] = capability
    if ctx.framework and _torch_installed():
        section.update(describe_torch_cpu(capability))
    return section


def _torch_installed() -> bool:

    return importlib.util.find_spec("torch") is not None


def describe_torch_cpu(capability: dict[str, Any]) -> dict[str, Any]:
    """What torch itself reports: its capability, its BLAS/LAPACK and oneDNN builds, thread counts."""
    import torch

    capability.update(effective=normalise_capability(torch.backends.cpu.get_cpu_capability()), source="torch")
    out: dict[str, Any] = {}
    config = parse_build_config(torch.__config__.show())
    settings = config["settings"]
    blas: dict[str, Any] = {}
    if settings.get("BLAS_INFO"):
        blas["vendor"] = settings["BLAS_INFO"]
    if settings.get("LAPACK_INFO"):
        blas["lapack"] = settings["LAPACK_INFO"]
    for line in config["components"]:
        if "Math Kernel Library" in line:
            blas["version"] = line
    mode = mkl_cbwr_mode(torch)
    if mode is not None:
        out["mkl_cbwr"] = mode
    if blas:
        out["blas"] = blas
    onednn = next((line for line in config["components"] if "MKL-DNN" in line or "oneDNN" in line), None)
    if onednn:
        out["onednn"] = {"version": onednn, "enabled": bool(torch.backends.mkldnn.is_available())}
    openmp = next((line for line in config["components"] if line.startswith("OpenMP")), None)
    if openmp:
        out["openmp"] = openmp
    info = parse_parallel_info(torch.__config__.parallel_info())
    threads = {"intra_op": int(torch.get_num_threads()), "inter_op": int(torch.get_num_interop_threads())}
    for key, name in (("omp_get_max_threads()", "openmp"), ("mkl_get_max_threads()", "mkl")):
        if info.get(key, "").isdigit():
            threads[name] = int(info[key])
    out["threads"] = threads
    if info.get("ATen parallel backend"):
        out["parallel_backend"] = info["ATen parallel backend"]
    return out


def parse_build_config(text: str) -> dict[str, Any]:
    """torch.__config__.show(): its `  - component` lines and the `Build settings: K=V, ...` line."""
    components: list[str] = []
    settings: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("- Build settings:"):
            for item in stripped.removeprefix("- Build settings:").split(", "):
                key, sep, value = item.partition("=")
                if sep and key.strip().isupper():
                    settings[key.strip()] = value.strip().rstrip(",")
        elif stripped.startswith("- "):
            components.append(stripped[2:].strip())
    return {"components": components, "settings": settings}


def parse_parallel_info(text: str) -> dict[str, str]:
    """torch.__config__.parallel_info(): its `name : value` lines."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" : ")
        if sep:
            values[key.strip()] = value.strip()
        elif line.startswith("ATen parallel backend:"):
            values["ATen parallel backend"] = line.split(":", 1)[1].strip()
    return values
