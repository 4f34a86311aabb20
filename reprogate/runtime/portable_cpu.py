"""Portable CPU mode: the settings that make a bitwise CPU contract hold across x86-64 machines,
and how to read back what torch and MKL really chose in this process.

A CPU picks its fastest kernels (AVX2, AVX-512) unless told otherwise, and different kernels sum in
different orders, so a trace made on one machine would not match a rebuild on another. This module
holds the one PORTABLE_CPU_ENV, applies it before torch and MKL read it, and refuses a run where
they already chose: a run that claims to be portable and is not would pass its own trace and fail
every rebuild elsewhere. Standard library only; torch is passed in by the caller.

`seed_everything(portable_cpu=True)` sets them inside the training process and `reprogate init
--portable-cpu` writes them into a record's execution.env: one mapping, so both name the same values.
oneDNN's instruction sets are named per architecture, so its cap applies to x86 only.
"""

from __future__ import annotations

import os
import platform
from typing import Any

# Settings every x86-64 CPU supports, so a bitwise CPU contract holds across machines: torch's
# baseline vector kernels instead of AVX2/AVX-512 ones, MKL's code path that is the same on every
# CPU (Intel or not), and oneDNN capped at SSE4.1. They must be in place before torch runs its
# first CPU kernel, MKL its first call and oneDNN its first primitive. Portable mode also turns
# oneDNN off in torch (convolutions then run as torch's own kernels over MKL): its blocking
# follows the CPU's cache sizes, so even capped it promises no equal bits across CPUs.
PORTABLE_CPU_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}
X86_ONLY = frozenset({"ONEDNN_MAX_CPU_ISA"})
X86_MACHINES = frozenset({"x86_64", "amd64", "i686", "i386"})
# MKL and torch's parallel reductions sum in per-thread pieces: a record that pins the kernels
# pins the thread count too (the script's own torch.set_num_threads does the same in-process).
FIXED_THREADS_ENV = {"OMP_NUM_THREADS": "1"}
CPU_ENV_NAMES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def portable_cpu_env(machine: str | None = None) -> dict[str, str]:
    """PORTABLE_CPU_ENV as it applies on `machine` (default: this one's `platform.machine()`)."""
    x86 = (machine if machine is not None else platform.machine()).lower() in X86_MACHINES
    return {name: value for name, value in PORTABLE_CPU_ENV.items() if x86 or name not in X86_ONLY}


def pin_portable_env() -> None:
    """Put PORTABLE_CPU_ENV in os.environ (where it applies to this CPU), before torch reads it."""
    for name, value in portable_cpu_env().items():
        if name == "MKL_CBWR" and os.environ.get(name, "").upper().startswith("COMPATIBLE"):
            continue  # COMPATIBLE,STRICT is as portable, and what the job asked for
        os.environ[name] = value


def check_portable(torch: Any) -> None:
    """Refuse a portable run whose torch kernels or MKL mode were fixed before the settings were."""
    capability = torch.backends.cpu.get_cpu_capability()
    problems = []
    if capability.lower() != "default":
        problems.append(f"torch already chose its {capability} CPU kernels")
    mode = mkl_cbwr_mode(torch)
    if mode is not None and not mode.startswith("COMPATIBLE"):
        problems.append(f"MKL already runs in reproducibility mode {mode}")
    if problems:
        raise RuntimeError(
            f"seed_everything(portable_cpu=True) came too late: {' and '.join(problems)}. Call it before any tensor "
            "operation, or set ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=SSE41 in the job's "
            "environment (a record's execution.env)"
        )


# MKL's conditional numerical reproducibility branches, as mkl_cbwr_get reports them (mkl_cbwr.h).
_MKL_BRANCHES = {
    1: "OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}
_MKL_STRICT = 0x10000


def mkl_cbwr_mode(torch: Any) -> str | None:
    """MKL's reproducibility mode in this process (OFF, AUTO, COMPATIBLE, AVX2, ... with ",STRICT"),
    or None where torch has no MKL or does not export MKL's query.

    torch links MKL statically; libtorch_cpu exports MKL's service call mkl_serv_cbwr_get (what
    mkl_cbwr_get resolves to). The first call fixes the mode from MKL_CBWR, like any MKL call, so
    read it only once the script has set its environment."""
    try:
        if not torch.backends.mkl.is_available():
            return None
        import ctypes

        library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        query = getattr(library, "mkl_serv_cbwr_get", None) or getattr(library, "mkl_cbwr_get", None)
        if query is None:
            return None
        query.restype, query.argtypes = ctypes.c_int, [ctypes.c_int]
        code = int(query(-1))  # MKL_CBWR_ALL
    except (OSError, AttributeError):
        return None
    if code < 0:
        return None
    name = _MKL_BRANCHES.get(code & 0xFFFF, f"BRANCH_{code & 0xFFFF}")
    return name + (",STRICT" if code & _MKL_STRICT else "")
