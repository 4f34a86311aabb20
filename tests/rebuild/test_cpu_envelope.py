"""The envelope's CPU check on the example record, for CPUs other than this one.

The CPU is described, not detected, so each case means the same on every machine: an AVX-512
Intel server, an AVX2 AMD one, an ARM one. (The rebuild tests run the check on the real CPU.)
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES
from support.rebuilds import make_job

from reprogate.capture.cpu import CpuInfo
from reprogate.core.documents import load_document
from reprogate.rebuild.cpu import cpu_envelope, kernel_environment
from reprogate.rebuild.state import Event, RebuildJob
from reprogate.runtime.trace import CpuFacts, MetaEvent, read_trace

RECORD = EXAMPLES / "tiny" / "records" / "tiny.yaml"
AVX512_FLAGS = ["sse2", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"]
INTEL_AVX512 = CpuInfo("x86_64", "GenuineIntel", "Xeon Platinum", flags=frozenset(AVX512_FLAGS))
AMD_AVX2 = CpuInfo("x86_64", "AuthenticAMD", "EPYC", flags=frozenset(["sse2", "sse4_2", "avx", "avx2", "fma"]))
ARM = CpuInfo("aarch64", "0x41", None, flags=frozenset(["fp", "asimd"]))


def context(tmp_path: Path, change: Any = None, portable_reference: bool = False) -> tuple[RebuildJob, list[Event]]:
    """The example's rebuild job (its record changed by `change`) and its reference trace."""
    data = copy.deepcopy(load_document(RECORD).data)
    if change:
        change(data)
    events = read_trace([EXAMPLES / "tiny" / "reference" / "trace.jsonl"])
    if portable_reference:  # the events are frozen: a changed reference is a new one
        events = [dataclasses.replace(e, cpu=dataclasses.replace(e.cpu or CpuFacts(), portable=True)) if isinstance(e, MetaEvent) else e for e in events]
    return make_job(RECORD, data, EXAMPLES, tmp_path), events


def check(case: tuple[RebuildJob, list[Event]], cpu: CpuInfo, machine_env: dict[str, str] | None = None) -> tuple[list[str], dict[str, Any]]:
    job, events = case
    return cpu_envelope(job, events, cpu, kernel_environment(job, base=machine_env or {}))


@pytest.mark.parametrize("cpu", [INTEL_AVX512, AMD_AVX2], ids=["avx512-intel", "avx2-amd"])
def test_the_examples_pins_hold_on_other_x86_cpus(tmp_path: Path, cpu: CpuInfo) -> None:
    problems, facts = check(context(tmp_path), cpu, {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX512"})
    assert problems == [] and facts["cpu_capability"] == "default" and facts["mkl_cbwr"] == "COMPATIBLE"


def test_without_its_pins_the_example_is_rejected_on_an_avx512_machine(tmp_path: Path) -> None:
    ctx = context(tmp_path, lambda r: r["execution"].update(env={"OMP_NUM_THREADS": "1"}))
    problems, facts = check(ctx, INTEL_AVX512)
    assert facts["cpu_capability"] == "avx512" and facts["mkl_cbwr"] == "OFF"
    assert any("needs torch's default CPU kernels (contract.envelope.cpu.capability)" in p and "would use avx512" in p for p in problems)
    assert any("needs MKL reproducibility mode COMPATIBLE" in p and "would run OFF" in p for p in problems)


def test_without_an_envelope_the_reference_meta_says_what_is_needed(tmp_path: Path) -> None:
    def unpinned(record: dict[str, Any]) -> None:
        record["execution"]["env"] = {"OMP_NUM_THREADS": "1"}
        del record["contract"]["envelope"]["cpu"]

    problems, _ = check(context(tmp_path, unpinned), AMD_AVX2)
    assert any("needs torch's default CPU kernels (the reference trace's meta)" in p and "would use avx2" in p for p in problems)


def test_a_script_pinning_portable_mode_itself_is_predicted_as_such(tmp_path: Path) -> None:
    ctx = context(tmp_path, lambda r: r["execution"].update(env={"OMP_NUM_THREADS": "1"}), portable_reference=True)
    problems, facts = check(ctx, INTEL_AVX512, {"ATEN_CPU_CAPABILITY": "avx512"})
    assert problems == [] and facts["cpu_capability"] == "default"


def test_a_capability_the_cpu_cannot_run_is_rejected_for_any_contract(tmp_path: Path) -> None:
    def behavioral_avx512(record: dict[str, Any]) -> None:
        record["contract"].update(level="behavioral", tolerance={"abs": 1e-4})
        record["execution"]["env"]["ATEN_CPU_CAPABILITY"] = "avx512"

    problems, _ = check(context(tmp_path, behavioral_avx512), AMD_AVX2)
    assert len(problems) == 1 and "illegal instruction" in problems[0] and "avx512bw" in problems[0]


def test_other_architectures_are_outside_the_examples_envelope(tmp_path: Path) -> None:
    problems, _ = check(context(tmp_path), ARM)
    assert any("architecture aarch64 is outside" in p for p in problems)
