"""The envelope's CPU check: will the rebuild's ranks run the kernels the reference ran?

A bitwise contract on a CPU holds only where torch runs the same compiled kernel set (its CPU
capability) and MKL the same BLAS code path. Both are decided inside each rank, from its
environment and the CPU, so this works them out before the run without importing torch: the
environment a rank gets is the rank allowlist overlaid with the record's execution.env (what the
launcher passes), and a training script that calls seed_everything(portable_cpu=True)
pins them itself, which its reference trace's meta says. What a contract needs comes from
contract.envelope.cpu, else from the reference trace's meta (what the reference really ran).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from reprogate.capture.cpu import (
    CpuInfo,
    normalise_capability,
    predict_capability,
    predict_mkl_cbwr,
    read_cpuinfo,
)
from reprogate.core.record import Envelope
from reprogate.rebuild.ranks import PASSED_THROUGH
from reprogate.rebuild.state import Event, RebuildJob
from reprogate.runtime.trace import CpuFacts, meta_events

WAY_OUT = (
    "pin a portable capability (ATEN_CPU_CAPABILITY=default and MKL_CBWR=COMPATIBLE in execution.env, or "
    "seed_everything(portable_cpu=True) in the script), declare contract.envelope.cpu.capability: [default] and "
    "remake the reference; or use a behavioral contract"
)


def kernel_environment(job: RebuildJob, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the launcher gives each rank, as far as the CPU kernels are concerned: the
    rank allowlist (rebuild/ranks.py) of this process's environment, overlaid with the record's
    execution.env. A variable set on the runner alone (ATEN_CPU_CAPABILITY, MKL_CBWR) never
    reaches a rank, so it cannot change the kernels a rebuild runs."""
    host = os.environ if base is None else base
    allowed = {k: v for k, v in host.items() if k in PASSED_THROUGH or k.startswith("LC_")}
    execution = job.record.execution
    record = dict((execution.env if execution is not None else None) or {})
    return {**allowed, **record}


def _reference_cpu(events: Sequence[Event]) -> list[CpuFacts]:
    return [e.cpu for e in meta_events(events) if e.cpu is not None]


def _allowed(declared: tuple[str, ...] | None, found: list[Any], normalise: Any) -> list[str]:
    """What the contract allows: the envelope's list, else the one value the reference's ranks agree on."""
    if declared:
        return [normalise(v) for v in declared]
    values = {normalise(v) for v in found if v is not None}
    return sorted(values) if len(values) == 1 else []


def cpu_envelope(
    job: RebuildJob, reference_events: Sequence[Event], cpu: CpuInfo | None = None, env: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, Any]]:
    """(problems, facts): problems empty when the ranks' CPU kernels fit the contract; the
    reference's own kernels come from its trace's meta."""
    cpu = cpu or read_cpuinfo()
    env = kernel_environment(job) if env is None else env
    reference = _reference_cpu(reference_events)
    portable = any(c.portable for c in reference)
    prediction = predict_capability(env, cpu, "default" if portable else None)
    mkl = predict_mkl_cbwr(env, cpu, "COMPATIBLE" if portable else None)
    facts: dict[str, Any] = {"cpu_capability": prediction.capability or "unknown", "mkl_cbwr": mkl}
    if cpu.model:
        facts["cpu_model"] = cpu.model
    problems: list[str] = []
    if prediction.capability is not None and not prediction.runnable:
        problems.append(f"the ranks would run torch's {prediction.capability} CPU kernels ({prediction.how}): they would die of an illegal instruction")
    if job.level != "bitwise":
        return problems, facts
    declared = job.record.contract.envelope if job.record.contract is not None else Envelope()
    capabilities = _allowed(declared.cpu_capability, [c.capability for c in reference], normalise_capability)
    where = "contract.envelope.cpu.capability" if declared.cpu_capability else "the reference trace's meta"
    if capabilities and prediction.capability is None:
        problems.append(
            f"a bitwise CPU contract needs torch's {'/'.join(capabilities)} kernels ({where}), and which kernels the ranks would use here "
            f"cannot be told ({prediction.how}): {WAY_OUT}"
        )
    elif capabilities and prediction.capability not in capabilities:
        problems.append(
            f"a bitwise CPU contract needs torch's {'/'.join(capabilities)} CPU kernels ({where}), this rebuild's ranks would use {prediction.capability} "
            f"({prediction.how}): the bits cannot match; {WAY_OUT}"
        )
    modes = _allowed(declared.cpu_mkl_cbwr, [c.mkl_cbwr for c in reference], lambda v: str(v).upper())
    if modes and mkl not in modes:
        where = "contract.envelope.cpu.mkl_cbwr" if declared.cpu_mkl_cbwr else "the reference trace's meta"
        problems.append(
            f"a bitwise CPU contract needs MKL reproducibility mode {'/'.join(modes)} ({where}), this rebuild's ranks would run {mkl} "
            f"(MKL_CBWR={env.get('MKL_CBWR', 'unset')}): set MKL_CBWR in execution.env"
        )
    architectures = list(declared.cpu_architectures or [])
    if architectures and cpu.architecture not in architectures:
        problems.append(f"architecture {cpu.architecture} is outside the envelope's {architectures}")
    return problems, facts
