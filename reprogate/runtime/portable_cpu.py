"""The CPU settings that make a bitwise CPU contract hold across x86-64 machines: one mapping.

`seed_everything(portable_cpu=True)` sets them inside the training process and `reprogate init
--portable-cpu` writes them into a record's execution.env, so both must name the same values. This
module sits in `runtime/` because the first runs where reprogate is not installed (the rebuild
copies `runtime/` beside the environment); it imports nothing.

Every x86-64 CPU supports these: torch's baseline vector kernels instead of AVX2/AVX-512 ones, MKL's
code path that is the same on every CPU (Intel or not), and oneDNN capped at SSE4.1. They must be
in place before torch runs its first CPU kernel, MKL its first call and oneDNN its first primitive.
oneDNN's instruction sets are named per architecture, so its cap applies to x86 only. Portable mode
in the script also turns oneDNN off in torch (its blocking follows the CPU's cache sizes, so even
capped it promises no equal bits across CPUs); an environment variable cannot do that.
"""

from __future__ import annotations

import platform

PORTABLE_CPU_ENV = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}
X86_ONLY = frozenset({"ONEDNN_MAX_CPU_ISA"})
X86_MACHINES = frozenset({"x86_64", "amd64", "i686", "i386"})
# MKL and torch's parallel reductions sum in per-thread pieces: a record that pins the kernels
# pins the thread count too (the script's own torch.set_num_threads does the same in-process).
FIXED_THREADS_ENV = {"OMP_NUM_THREADS": "1"}


def portable_cpu_env(machine: str | None = None) -> dict[str, str]:
    """PORTABLE_CPU_ENV as it applies on `machine` (default: this one's `platform.machine()`)."""
    x86 = (machine if machine is not None else platform.machine()).lower() in X86_MACHINES
    return {name: value for name, value in PORTABLE_CPU_ENV.items() if x86 or name not in X86_ONLY}


__all__ = ["FIXED_THREADS_ENV", "PORTABLE_CPU_ENV", "portable_cpu_env"]
