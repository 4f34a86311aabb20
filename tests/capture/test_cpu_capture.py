"""The CPU layer of `capture`, and the prediction of torch's CPU capability and MKL's mode without torch.

The predictions are checked against torch itself in fresh processes (a capability is fixed once
per process), for every kind of ATEN_CPU_CAPABILITY value, so they hold whatever CPU runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import REPO

from reprogate.capture import CaptureContext, envvars, run_layer
from reprogate.capture import cpu as cpu_layer
from reprogate.capture.cpu import (
    CpuInfo,
    predict_capability,
    predict_mkl_cbwr,
    read_cpuinfo,
)

CPU_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def torch_reports(variables: dict[str, str]) -> tuple[str, str | None]:
    """(torch's CPU capability, MKL's mode) in a fresh process with these variables and no others of theirs."""
    env = {k: v for k, v in os.environ.items() if k not in CPU_VARIABLES}
    env.update(variables, PYTHONPATH=str(REPO))
    script = "import torch\nfrom reprogate.runtime.portable_cpu import mkl_cbwr_mode\nprint(torch.backends.cpu.get_cpu_capability(), mkl_cbwr_mode(torch))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    capability, mode = done.stdout.split()
    return capability.lower(), None if mode == "None" else mode


def needs_torch() -> None:
    if os.environ.get("CI") != "true":
        pytest.importorskip("torch")


def test_capture_lists_this_machines_cpu_and_torch_capability(tmp_path: Path) -> None:
    needs_torch()
    import torch

    section = run_layer(cpu_layer, CaptureContext(root=tmp_path))
    assert section["present"] is True and section["architecture"] and section["logical_cpus"] >= 1
    capability = section["capability"]
    assert capability["source"] == "torch" and capability["effective"] == torch.backends.cpu.get_cpu_capability().lower()
    assert capability["effective"] in capability["supported"] or "requested" in capability
    assert set(section["flags"]) <= set(cpu_layer.KERNEL_FLAGS) and set(section["flags"]) <= read_cpuinfo().flags
    assert section["threads"]["intra_op"] == torch.get_num_threads()
    if torch.backends.mkl.is_available():
        assert section["blas"]["vendor"] == "mkl" and "Math Kernel Library" in section["blas"]["version"]


def test_capture_without_the_framework_predicts_the_capability(tmp_path: Path) -> None:
    section = run_layer(cpu_layer, CaptureContext(root=tmp_path, framework=False, env={"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}))
    supported = list(cpu_layer.supported_capabilities(read_cpuinfo()))
    assert section["capability"] == {"supported": supported, "requested": "default", "effective": "default", "source": "predicted"}
    assert section["mkl_cbwr"] == "COMPATIBLE" and "blas" not in section


# Kinds of values: unset, each accepted one, wrong case, unknown, empty, misplaced options.
CAPABILITY_VALUES = [None, "default", "avx2", "avx512", "AVX2", "sse4", "", None, None]
MKL_VALUES = [None, "COMPATIBLE", "COMPATIBLE, STRICT", "compatible", "STRICT,COMPATIBLE", "AUTO,STRICT", "AVX2", "SSE4_2", "OFF"]


def test_predictions_are_what_torch_and_mkl_choose_for_every_kind_of_value() -> None:
    """Includes values torch or MKL ignore and capability requests this CPU may lack: torch
    honours those blindly, which get_cpu_capability shows without running a kernel."""
    needs_torch()
    cpu = read_cpuinfo()
    cases = [{k: v for k, v in (("ATEN_CPU_CAPABILITY", a), ("MKL_CBWR", m)) if v is not None} for a, m in zip(CAPABILITY_VALUES, MKL_VALUES, strict=True)]
    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(torch_reports, cases))
    assert [predict_capability(env, cpu).capability for env in cases] == [capability for capability, _ in found]
    if found[0][1] is None:
        if os.environ.get("CI") == "true":
            pytest.fail("torch's MKL does not answer mkl_cbwr_get under CI=true")
        return  # no MKL in this torch: nothing to hold the MKL prediction to
    assert [predict_mkl_cbwr(env, cpu) for env in cases] == [mode for _, mode in found]


AVX512_FLAGS = ["sse2", "sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"]
INTEL_AVX512 = CpuInfo("x86_64", "GenuineIntel", "Xeon", flags=frozenset(AVX512_FLAGS))
AMD_AVX2 = CpuInfo("x86_64", "AuthenticAMD", "EPYC", flags=frozenset(["sse2", "sse4_2", "avx", "avx2", "fma"]))
OLD_X86 = CpuInfo("x86_64", "GenuineIntel", "Core 2", flags=frozenset(["sse2", "ssse3"]))
ARM = CpuInfo("aarch64", "0x41", None, flags=frozenset(["fp", "asimd", "sve"]))


@pytest.mark.parametrize(
    ("cpu", "env", "capability", "runnable"),
    [
        (INTEL_AVX512, {}, "avx512", True),
        (INTEL_AVX512, {"ATEN_CPU_CAPABILITY": "default"}, "default", True),
        (AMD_AVX2, {}, "avx2", True),
        (AMD_AVX2, {"ATEN_CPU_CAPABILITY": "avx512"}, "avx512", False),  # honoured: the rank dies of SIGILL
        (OLD_X86, {}, "default", True),
        (OLD_X86, {"ATEN_CPU_CAPABILITY": "avx2"}, "avx2", False),
        (INTEL_AVX512, {"ATEN_CPU_CAPABILITY": "AVX2"}, "avx512", True),  # wrong case: ignored
        (ARM, {"ATEN_CPU_CAPABILITY": "default"}, "default", True),
        (ARM, {}, None, False),
    ],
)
def test_capability_rules(cpu: CpuInfo, env: dict[str, str], capability: str | None, runnable: bool) -> None:
    prediction = predict_capability(env, cpu)
    assert (prediction.capability, prediction.runnable) == (capability, runnable)


def test_a_script_that_pins_portable_mode_wins_over_the_environment() -> None:
    prediction = predict_capability({"ATEN_CPU_CAPABILITY": "avx512"}, AMD_AVX2, pinned_in_process="default")
    assert prediction.capability == "default" and prediction.runnable and "portable_cpu" in prediction.how


def test_mkl_honours_instruction_set_branches_only_on_intel_cpus_that_have_them() -> None:
    assert predict_mkl_cbwr({"MKL_CBWR": "AVX2"}, INTEL_AVX512) == "AVX2"
    assert predict_mkl_cbwr({"MKL_CBWR": "AVX2"}, AMD_AVX2) == "AUTO"
    assert predict_mkl_cbwr({"MKL_CBWR": "AVX512"}, AMD_AVX2) == "AUTO"
    assert predict_mkl_cbwr({"MKL_CBWR": "COMPATIBLE,STRICT"}, AMD_AVX2) == "COMPATIBLE,STRICT"
    assert predict_mkl_cbwr({}, INTEL_AVX512) == "OFF"


def test_read_cpuinfo_describes_this_machine() -> None:
    cpu = read_cpuinfo()
    assert cpu.architecture and (cpu.logical_cpus or 0) >= 1
    if cpu.x86 and Path("/proc/cpuinfo").exists():
        assert "sse2" in cpu.flags and cpu.vendor and "default" in cpu_layer.supported_capabilities(cpu)


def test_kernel_selecting_variables_are_recorded() -> None:
    for name in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "KMP_AFFINITY"):
        assert envvars.recorded(name), name
    assert not envvars.recorded("ATEN_SOMETHING_ELSE")
