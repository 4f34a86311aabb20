"""tools/gpu-check on a machine without a GPU: its dry mode, and the device mode finding no GPU.

The script runs for real (a subprocess of tools/gpu-check, with this interpreter as PYTHON): it
builds reprogate's wheel from this working tree, installs it with no index into a fresh venv that
sees this interpreter's packages, and writes its JSON summary. What cannot be proven here — the
GPU checks — must come out `not-run` with a reason starting "no GPU", never `passed`; the checks'
own code is then run against this machine's real capture and preflight, and must fail, not pass.
Nothing else in the suite depends on the script.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support import REPO

SCRIPT = REPO / "tools" / "gpu-check"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "tools" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


gpu_check = load_tool()


def tool(*args: str, cwd: Path, out: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    env["PYTHON"] = sys.executable
    if out is not None:
        env["OUT"] = str(out)
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def gpu_visible() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no package, no library, no driver: no GPU
        return False
    try:
        return pynvml.nvmlDeviceGetCount() > 0
    finally:
        pynvml.nvmlShutdown()


def assert_shape(summary: dict[str, Any], mode: str) -> None:
    assert summary["tool"] == "tools/gpu-check" and summary["mode"] == mode
    assert [c["name"] for c in summary["checks"]] == ["install", *gpu_check.GPU_CHECKS]
    for check in summary["checks"]:
        assert set(check) == {"name", "status", "reason", "seconds", "facts"}, check
        assert check["status"] in ("passed", "failed", "not-run") and isinstance(check["seconds"], float)
        assert check["status"] == "passed" or check["reason"], f"{check['name']}: a check that did not pass says why"
    assert summary["counts"] == {s: sum(1 for c in summary["checks"] if c["status"] == s) for s in ("passed", "failed", "not-run")}
    assert summary["gpu"]["present"] is False and summary["gpu"]["reason"].startswith("no GPU")


def assert_no_gpu_check_ran(summary: dict[str, Any]) -> None:
    for check in summary["checks"][1:]:
        assert check["status"] == "not-run" and check["reason"].startswith("no GPU"), check


@pytest.fixture(scope="module")
def dry(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    """One dry run for the module: the summary under $OUT, the work folder kept for later tests."""
    base = tmp_path_factory.mktemp("gpu-check")
    (base / "wheels").mkdir()  # an empty wheel folder: everything reprogate needs is already here
    done = tool("--dry-run", "--wheels", str(base / "wheels"), "--work", str(base / "work"), cwd=base, out=base / "out")
    summary = json.loads((base / "out" / "gpu-check.json").read_text())
    return done, summary, base


def test_the_dry_run_installs_the_tree_with_no_index_and_runs_no_gpu_check(dry: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]) -> None:
    done, summary, base = dry
    assert done.returncode == 0, done.stdout + done.stderr
    assert_shape(summary, "dry-run")
    assert_no_gpu_check_ran(summary)
    assert summary["verdict"] == "not-run" and summary["exit_code"] == 0, "a dry run proves nothing of the GPU half, so it never says passed"
    install = summary["checks"][0]
    assert install["status"] == "passed", install
    venv = base / "work" / "venv"
    assert Path(install["facts"]["reprogate_file"]).is_relative_to(venv), "the venv's own install of the tree, not the tree or the caller's reprogate"
    assert install["facts"]["wheel"].startswith("reprogate-") and install["facts"]["wheels"] == []
    log = (base / "out" / "gpu-check.log").read_text()
    assert log.count("pip install") == 2 and all("--no-index" in line for line in log.splitlines() if " -m pip " in line)
    assert "NO GPU CHECK RAN" not in done.stdout and "not-run  nvml-capture: no GPU" in done.stdout
    assert sorted(p.name for p in (base / "out").iterdir()) == ["gpu-check.json", "gpu-check.log"]


def test_the_dry_run_prints_the_plan_a_device_run_would_follow(dry: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]) -> None:
    done, summary, _ = dry
    plan = done.stdout.split("plan of a device run", 1)[1].split("\n== ", 1)[0] if "plan of a device run" in done.stdout else ""
    listed = [line.split()[0] for line in plan.splitlines()[1:] if line.startswith("  ")]
    assert listed == ["install", *gpu_check.GPU_CHECKS], done.stdout
    assert "reprogate preflight --backend nccl --world-size 1" in plan and "150 s" in plan
    assert [step["name"] for step in summary["plan"]] == listed and summary["unfinished"] == []


def test_without_dry_run_and_without_a_gpu_every_gpu_check_is_not_run_and_the_exit_says_so(tmp_path: Path) -> None:
    if gpu_visible():
        pytest.skip("this machine has an NVIDIA GPU: the device mode would run the GPU checks")
    done = tool(cwd=tmp_path)
    summary = json.loads((tmp_path / gpu_check.DEFAULT_OUT / "gpu-check.json").read_text())
    assert done.returncode == 3, done.stdout + done.stderr
    assert_shape(summary, "device")
    assert_no_gpu_check_ran(summary)
    assert summary["verdict"] == "not-run" and "NO GPU CHECK RAN" in done.stdout
    assert not Path(summary["checks"][0]["facts"]["venv"]).parent.exists(), "the temporary work folder is removed after the run"


def test_the_checks_themselves_fail_on_this_machine_rather_than_pass(dry: tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]) -> None:
    """The capture, the classification and the nccl preflight run against this CPU machine's real
    answers (no NVML, a CPU torch build, no GPU for nccl): each must fail, naming why."""
    if gpu_visible():
        pytest.skip("this machine has an NVIDIA GPU")
    pytest.importorskip("torch")
    _, _, base = dry
    out = base / "checks"
    out.mkdir()
    run = gpu_check.Run(out, base / "work", 200)
    installed = gpu_check._installed(run)
    capture = gpu_check.timed("nvml-capture", lambda: gpu_check.nvml_capture(run, installed, {"error": "not asked"}))
    assert capture.status == "failed" and "devices present: false" in capture.reason, capture
    classed = gpu_check.timed("driver-cuda-class", lambda: gpu_check.driver_cuda_class(run, installed))
    assert classed.status == "failed" and classed.facts["class"] == "not-applicable", classed
    nccl = gpu_check.timed("preflight-nccl-1", lambda: gpu_check.preflight(run, installed, 1, "preflight-nccl-1"))
    assert nccl.status == "failed" and "nccl needs a GPU" in nccl.reason, nccl
    run.log.close()


def test_capture_is_held_against_nvidia_smi() -> None:
    devices = {"driver_version": "580.159.03", "cuda_driver_version": "13.0"}
    gpus = [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "memory_bytes": 143771 * 2**20}]
    smi = {"driver_version": "580.159.03", "cuda_version": "13.0", "gpus": [{"name": "NVIDIA H200", "uuid": "GPU-1", "memory_mib": 143771}]}
    assert gpu_check._against_smi(devices, gpus, smi) == []
    smi["gpus"][0].update(memory_mib=80000, name="NVIDIA H100")
    smi["driver_version"] = "570.1"
    problems = gpu_check._against_smi(devices, gpus, smi)
    assert len(problems) == 3 and "nvidia-smi's 570.1" in problems[0] and "NVIDIA H100" in problems[1] and "80000 MiB" in problems[2]
    assert gpu_check._against_smi(devices, gpus, {"gpus": []}) == ["nvidia-smi does not list GPU-1"]


def test_a_device_run_whose_budget_ran_out_after_one_check_is_incomplete_not_passed() -> None:
    """What check_all leaves when the budget is spent after nvml-capture: the rest not-run with its
    own wording. The old summary said `verdict: passed`, exit 0, over six checks that never ran."""
    checks = [gpu_check.Check("install", "passed"), gpu_check.Check("nvml-capture", "passed")]
    checks += [gpu_check.Check(name, "not-run", f"{gpu_check.BUDGET_SPENT} (3 s left)") for name in gpu_check.GPU_CHECKS[1:5]]
    checks += [gpu_check.Check(name, "not-run", gpu_check.NO_REFERENCE) for name in gpu_check.GPU_CHECKS[5:]]
    code = gpu_check.exit_code(checks, dry_run=False)
    summary = gpu_check.summary(checks, {"present": True}, False, "2026-12-01T00:00:00Z", 290.0, code, 290.0)
    assert code == 4 and summary["verdict"] == "incomplete", summary["verdict"]
    assert summary["unfinished"] == list(gpu_check.GPU_CHECKS[1:]), "the rebuilds waited on a reference the budget left unrun"
    # nccl refusing two ranks on one GPU is a not-run the check itself explains: that run is complete
    done = [gpu_check.Check(name, "passed") for name in ("install", *gpu_check.GPU_CHECKS) if name != "preflight-nccl-2-ranks-1-gpu"]
    done.append(gpu_check.Check("preflight-nccl-2-ranks-1-gpu", "not-run", "nccl refuses 2 ranks on one GPU (x)"))
    assert gpu_check.exit_code(done, dry_run=False) == 0 and gpu_check.verdict_of(0, dry_run=False) == "passed"
    # a failure still reads as one, however much was left unrun
    failed = [*checks[:1], gpu_check.Check("nvml-capture", "failed", "x"), *checks[2:]]
    assert gpu_check.exit_code(failed, dry_run=False) == 1


def test_out_names_a_folder_and_a_file_there_is_refused(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{}")
    done = tool("--dry-run", "--out", str(tmp_path / "summary.json"), cwd=tmp_path)
    assert done.returncode == 2 and "--out names the folder" in done.stderr, done.stderr
    assert "--out DIR" in tool("--help", cwd=tmp_path).stdout


def test_exit_codes_say_failed_and_nothing_proven_apart() -> None:
    ran = [gpu_check.Check("install", "passed"), gpu_check.Check("nvml-capture", "passed")]
    assert gpu_check.exit_code(ran, dry_run=False) == 0
    assert gpu_check.exit_code([*ran, gpu_check.Check("cuda-reference", "failed", "x")], dry_run=False) == 1
    nothing = [gpu_check.Check("install", "passed"), *(gpu_check.Check(n, "not-run", "no GPU: x") for n in gpu_check.GPU_CHECKS)]
    assert gpu_check.exit_code(nothing, dry_run=False) == 3 and gpu_check.exit_code(nothing, dry_run=True) == 0


@pytest.mark.parametrize(("args", "message"), [(["--budget", "0"], "--budget must be positive"), (["--wheels", "no-such-folder"], "no such folder")])
def test_bad_arguments_exit_2_naming_the_option(tmp_path: Path, args: list[str], message: str) -> None:
    done = tool(*args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / gpu_check.DEFAULT_OUT).exists(), "nothing written for arguments that were refused"


def test_prepare_wheels_asks_for_what_the_gpu_machine_lacks_and_the_build_backend() -> None:
    wanted = gpu_check.requirements_to_carry() if sys.version_info >= (3, 11) else pytest.skip("reads pyproject.toml with tomllib")
    names = {w.split(">")[0].split("=")[0] for w in wanted}
    assert names == {"jsonschema", "pip-requirements-parser", "dockerfile-parse", "hatchling"}, wanted
