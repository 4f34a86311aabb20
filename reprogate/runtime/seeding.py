"""Seeding a run and carrying its generators' state across a resume.

A rebuild asks for a seed through REPROGATE_SEED; `seed_everything` applies it to every generator
a training script uses and remembers what it applied (`applied()`), so the trace's meta states
the seed the steps really ran with rather than the one a record claims. torch and NumPy are
imported inside the functions: this module runs where reprogate is not installed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import Any

from reprogate.runtime.portable_cpu import check_portable, pin_portable_env

SEED_ENV = "REPROGATE_SEED"

_RUN: dict[str, Any] = {}  # what seed_everything applied in this process, for the trace's meta


def applied() -> dict[str, Any]:
    """What seed_everything applied in this process (`seed`, `portable_cpu`); empty before it ran."""
    return dict(_RUN)


def seeded_by(seed: int, framework: str) -> None:
    """Say that a framework's own seeding applied `seed` in this process (transformers'
    set_seed, Lightning's seed_everything), so the trace's meta states it as seed_everything's."""
    _RUN.update(seed=seed, seeded_by=framework)


def seed_from_env(default: int) -> int:
    """The seed a rebuild asks for (REPROGATE_SEED), else the script's own default."""
    return int(os.environ.get(SEED_ENV, default))


def seed_everything(seed: int, rank: int = 0, deterministic: bool = True, allow_tf32: bool = False, portable_cpu: bool = False) -> Any:
    """Seed Python, NumPy and torch (CPU and CUDA) and switch on deterministic kernels.

    Each rank's own randomness (dropout, augmentation) is seeded with `seed + rank`; the returned
    torch.Generator is seeded with `seed` alone, identical on every rank, for the DataLoader or
    DistributedSampler, so all ranks agree on the data order.

    `portable_cpu=True` pins torch's CPU kernels, MKL and oneDNN to code paths every x86-64 CPU
    runs (PORTABLE_CPU_ENV) and turns torch's use of oneDNN off, so a bitwise CPU contract holds
    on machines with other instruction sets. Call it before any tensor operation: torch fixes its kernels at the first one and MKL
    its code path at its first call. If either already happened, this raises rather than trace a
    run that is not portable; the alternative is to set the same variables in the job's
    environment (a record's execution.env). Keep the thread count fixed as well (OMP_NUM_THREADS
    or torch.set_num_threads): MKL and torch's parallel reductions sum in per-thread pieces.
    """
    if portable_cpu:
        pin_portable_env()  # before torch could read them, if it has not yet
    import torch

    if portable_cpu:
        check_portable(torch)
        torch.backends.mkldnn.enabled = False  # type: ignore[assignment]  # torch types the flag as its ContextProp descriptor; a bool is what it takes
    os.environ.setdefault("PYTHONHASHSEED", str(seed))  # for subprocesses (DataLoader workers)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before any CUDA context
    random.seed(seed + rank)
    try:
        import numpy

        numpy.random.seed((seed + rank) % 2**32)
    except ImportError:
        pass
    torch.manual_seed(seed + rank)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed + rank)
    if deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    if not allow_tf32:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    _RUN.update(seed=seed, portable_cpu=portable_cpu)
    return torch.Generator().manual_seed(seed)


def rng_state(sampler_position: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Every generator's state (and where the sampler stood), to save with a checkpoint."""
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy

        state["numpy"] = numpy.random.get_state()
    except ImportError:
        pass
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    state["sampler"] = dict(sampler_position or {})
    return state


def restore_rng_state(state: Mapping[str, Any]) -> dict[str, int]:
    """Put the generators back as `rng_state` found them; returns the sampler position."""
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy

        numpy.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    return dict(state.get("sampler", {}))
