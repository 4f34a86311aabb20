"""tools/gpu-check: prove reprogate's GPU half on a machine with an NVIDIA GPU, in one short run.

Nothing of reprogate's GPU half (NVML capture, the driver/CUDA classification, the nccl preflight,
a rebuild on CUDA) runs in CI, which has no GPU. This script runs it all on a lent GPU machine that
has no network, within a time budget, and writes one JSON summary. The steps, each with its own
time limit (docs/gpu-check.md says what each proves and how to run it):

  install                        reprogate built from this working tree and installed, with no index,
                                 into a fresh venv that still sees the machine's torch and nvidia-ml-py
  nvml-capture                   `reprogate capture`: driver, CUDA driver, GPU name, UUID and memory read
                                 through NVML, held against `nvidia-smi -q -x`
  driver-cuda-class              capture/compat.py and rules/driver_compat.py on the real driver and
                                 torch.version.cuda; the class is printed
  preflight-nccl-1               `reprogate preflight --backend nccl --world-size 1`
  preflight-nccl-2-ranks-1-gpu   the same with 2 ranks on the one GPU (not-run, saying so, where nccl
                                 refuses two ranks on one device)
  cuda-reference                 `reprogate init` of the tiny example's model on cuda (deterministic
                                 algorithms, CUBLAS_WORKSPACE_CONFIG=:4096:8), then `reprogate validate`
  cuda-rebuild-bitwise           `reprogate rebuild` of that record: must pass, bitwise
  cuda-rebuild-perturbed         the same with the weights nudged after step 7: must fail at model-state

A check is `passed`, `failed` or `not-run` with its reason. Without a GPU (`--dry-run`, or NVML
finding none) every GPU check is `not-run` with a reason beginning "no GPU": never passed. On a GPU,
a check the budget left no time for (or that waited on one it left no time for) makes the run
`incomplete`: what never ran proved nothing, so the verdict is not `passed`. Exit codes: 0 every
check ran and passed (the dry run: the install passed); 1 a check failed; 2 bad arguments; 3 no
GPU check could run without --dry-run (nothing was proven); 4 incomplete (the budget ran out before
every check ran). `--dry-run` prints the plan a device run would follow (PLAN).

`--prepare-wheels DIR` (run where pip reaches the package registry) downloads the wheels the GPU
machine lacks, for CPython 3.12 on manylinux x86-64, into DIR for the run to carry.

Only the standard library is imported here: the script starts under whatever python3 the machine
has, before reprogate is installed anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from email.parser import BytesParser
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).resolve().parent
DEFAULT_WHEELS = REPO / ".gpu-wheels"
DEFAULT_OUT = "reprogate-gpu-check"
BUDGET = 290.0  # seconds for the whole run: the device check must end well inside 5 minutes
WHEELS_LIMIT = 32 * 1024 * 1024  # of the 64 MiB a device run carries, the tree needs the rest

PASSED, FAILED, NOT_RUN = "passed", "failed", "not-run"
INCOMPLETE = "incomplete"  # the run's verdict when the budget left a check unrun; never a check's status
EXIT_INCOMPLETE = 4
BUDGET_SPENT = "not run: the run's budget was spent"
NO_REFERENCE = "not run: there is no CUDA reference (cuda-reference did not pass)"
GPU_CHECKS = (
    "nvml-capture",
    "driver-cuda-class",
    "preflight-nccl-1",
    "preflight-nccl-2-ranks-1-gpu",
    "cuda-reference",
    "cuda-rebuild-bitwise",
    "cuda-rebuild-perturbed",
)
# Each step's own limit, in seconds (the run's budget cuts it shorter where less is left).
LIMITS = {
    "install": 150.0,
    "probe": 60.0,
    "nvml-capture": 90.0,
    "nvidia-smi": 20.0,
    "driver-cuda-class": 60.0,
    "preflight-nccl-1": 90.0,
    "preflight-nccl-2-ranks-1-gpu": 90.0,
    "cuda-reference": 150.0,
    "validate": 60.0,
    "cuda-rebuild-bitwise": 120.0,
    "cuda-rebuild-perturbed": 120.0,
}
# What a device run does, in order: printed by --dry-run and kept in the summary, so a dry run
# shows the plan it proves nothing of.
PREFLIGHT_STAGE_TIMEOUT = 40.0
PLAN = (
    ("install", "a fresh venv (--system-site-packages) with this tree's wheel, installed with no index"),
    ("nvml-capture", "reprogate capture -o capture.json, held against nvidia-smi -q -x"),
    ("driver-cuda-class", "capture.compat.classify on the real driver and torch.version.cuda, the rule driver_runs_framework_cuda, a CUDA matmul"),
    ("preflight-nccl-1", f"reprogate preflight --backend nccl --world-size 1 --timeout {PREFLIGHT_STAGE_TIMEOUT:g}"),
    ("preflight-nccl-2-ranks-1-gpu", "the same with --world-size 2 on the one GPU (not-run where nccl refuses it)"),
    ("cuda-reference", "reprogate init of the tiny model on cuda (bitwise, CUBLAS_WORKSPACE_CONFIG=:4096:8), then reprogate validate"),
    ("cuda-rebuild-bitwise", "reprogate rebuild of that record: must pass, bitwise"),
    ("cuda-rebuild-perturbed", "the same with the weights nudged after step 7: must fail at model-state"),
)
# What the GPU machine's Python already has (the device tool's README): --prepare-wheels fetches
# reprogate's other requirements, and what building reprogate needs (hatchling) in an isolated env.
DEVICE_HAS = frozenset({"click", "pyyaml", "requests", "packaging", "urllib3", "scipy", "nvidia-ml-py", "torch"})
DEVICE_PYTHON = "3.12"
DEVICE_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
NO_GPU_DRY = "no GPU: --dry-run runs nothing on a GPU"
NCCL_REFUSES = ("duplicate gpu", "ncclinvalidusage", "invalid usage")
LOG_TAIL = 6000
GIT_USER = ["git", "-c", "user.name=gpu-check", "-c", "user.email=gpu-check@localhost"]


@dataclass(frozen=True)
class Check:
    """One check's result as the summary states it."""

    name: str
    status: str
    reason: str = ""
    seconds: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Proc:
    """What one command did: its exit status (None: killed at its limit) and output."""

    argv: list[str]
    rc: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.rc is None

    def tail(self, limit: int = 600) -> str:
        return (self.stderr.strip() or self.stdout.strip())[-limit:]


class Run:
    """The run's folders, clock and log: every command goes through `command`, so each has a
    limit inside the budget and leaves its output in gpu-check.log."""

    def __init__(self, out: Path, work: Path, budget: float) -> None:
        self.out, self.work = out, work
        self.deadline = time.monotonic() + budget
        self.log = (out / "gpu-check.log").open("w", encoding="utf-8")

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def say(self, text: str) -> None:
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()

    def command(self, argv: list[str], limit: float, cwd: Path | None = None, env: dict[str, str] | None = None) -> Proc:
        """Run argv in its own process group; at its limit (or the budget's end) kill the group.
        The default folder is the work folder: from the repository root, `import reprogate` would
        find the tree's own package rather than the installed one."""
        limit = max(1.0, min(limit, self.left()))
        cwd = cwd or self.work
        env = without_tree(env if env is not None else dict(os.environ))
        started = time.monotonic()
        self.log.write(f"$ {' '.join(argv)}   (cwd {cwd}, limit {limit:.0f} s)\n")
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            result = Proc(argv, 127, "", f"cannot start {argv[0]}: {exc}", 0.0)
        else:
            try:
                stdout, stderr = proc.communicate(timeout=limit)
                result = Proc(argv, proc.returncode, stdout, stderr, time.monotonic() - started)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                stdout, stderr = proc.communicate()
                result = Proc(argv, None, stdout, stderr + f"\n(killed at its limit of {limit:.0f} s)", time.monotonic() - started)
        self.log.write(f"-> rc {result.rc} in {result.seconds:.1f} s\n")
        for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
            if text.strip():
                self.log.write(f"--- {name} (last {LOG_TAIL} characters)\n{text[-LOG_TAIL:]}\n")
        self.log.flush()
        return result


def without_tree(env: dict[str, str]) -> dict[str, str]:
    """The environment with the working tree's root taken off PYTHONPATH (a test run or a developer's
    shell puts it there): the checks must run the venv's install of the tree, not the tree itself.
    Other PYTHONPATH entries stay, in case the machine's own packages need them."""
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO]
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": os.pathsep.join(kept)} if kept else env


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """End the process group this script started for one command (the command and its children)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def timed(name: str, work: Callable[[], tuple[str, str, dict[str, Any]]]) -> Check:
    """Run one check's work; an error in this script becomes a failed check, never a traceback."""
    started = time.monotonic()
    try:
        status, reason, facts = work()
    except Exception as exc:  # noqa: BLE001 - the summary must still be written
        status, reason, facts = FAILED, f"tools/gpu-check itself failed: {type(exc).__name__}: {exc}", {}
    return Check(name, status, reason, round(time.monotonic() - started, 3), facts)


# ---------------------------------------------------------------------------------------------
# install: the working tree's reprogate, offline, into a venv that sees the machine's packages


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    reprogate: Path


def venv_bridge(python: Path) -> str:
    """The .pth line that shows the launching interpreter's site-packages inside the new venv.

    `--system-site-packages` shows the *base* interpreter's packages; on the GPU machine python3 is
    itself a venv (/opt/torch/.venv) whose torch would then be invisible. `site.addsitedir` also
    runs that venv's own .pth files. The new venv's site-packages come first, so what is installed
    there (reprogate and the carried wheels) wins."""
    dirs = [p for p in _site_dirs() if p != str(python)]
    return "import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n"


def _site_dirs() -> list[str]:
    return [d for d in site.getsitepackages() if os.path.isdir(d)]


def install(run: Run, wheels: Path | None) -> tuple[str, str, dict[str, Any]]:
    venv = run.work / "venv"
    facts: dict[str, Any] = {"venv": str(venv), "python": sys.version.split()[0], "wheels": _wheel_names(wheels)}
    made = run.command([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], 60)
    if made.rc != 0:
        return FAILED, f"python -m venv failed: {made.tail()}", facts
    python = venv / "bin" / "python"
    purelib = run.command([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], 30)
    if purelib.rc != 0:
        return FAILED, f"the venv's python does not start: {purelib.tail()}", facts
    Path(purelib.stdout.strip(), "_gpu_check_parent.pth").write_text(venv_bridge(python))
    find = ["--no-index", "--disable-pip-version-check", "--no-input"] + (["--find-links", str(wheels)] if wheels else [])
    has_hatchling = run.command([str(python), "-c", "import hatchling"], 30).rc == 0
    built = run.work / "built"
    # hatchling importable (a dev checkout): build with it; else pip fills an isolated build env from the wheels
    isolation = ["--no-build-isolation"] if has_hatchling else []
    wheel = run.command([str(python), "-m", "pip", "wheel", "-q", *find, *isolation, "--no-deps", "-w", str(built), str(REPO)], LIMITS["install"])
    facts["build_isolation"] = not has_hatchling
    if wheel.rc != 0:
        return FAILED, f"building reprogate's wheel from {REPO} with no index failed: {wheel.tail()}", facts
    made_wheels = sorted(built.glob("reprogate-*.whl"))
    if len(made_wheels) != 1:
        return FAILED, f"pip wheel left {len(made_wheels)} reprogate wheels in {built}", facts
    facts["wheel"] = made_wheels[0].name
    requires = wheel_requirements(made_wheels[0])
    facts["requires"] = requires
    own = run.command([str(python), "-m", "pip", "install", "-q", *find, "--no-deps", "--force-reinstall", str(made_wheels[0])], LIMITS["install"])
    if own.rc != 0:
        return FAILED, f"installing {made_wheels[0].name} failed: {own.tail()}", facts
    deps = run.command([str(python), "-m", "pip", "install", "-q", *find, *requires], LIMITS["install"])
    if deps.rc != 0:
        return FAILED, f"reprogate's requirements cannot be met without an index (carry their wheels: --prepare-wheels): {deps.tail()}", facts
    probe = run.command(
        [
            str(python),
            "-c",
            "import json, reprogate, jsonschema, pip_requirements_parser, dockerfile_parse, click, yaml, requests, packaging;"
            "print(json.dumps({'version': reprogate.__version__, 'file': reprogate.__file__, 'jsonschema': jsonschema.__file__}))",
        ],
        60,
    )
    if probe.rc != 0:
        return FAILED, f"the installed reprogate does not import: {probe.tail()}", facts
    seen = json.loads(probe.stdout)
    facts.update(reprogate_version=seen["version"], reprogate_file=seen["file"])
    if not Path(seen["file"]).resolve().is_relative_to(venv.resolve()):
        return FAILED, f"reprogate imports from {seen['file']}, not from the venv's own install of the working tree", facts
    cli = run.command([str(venv / "bin" / "reprogate"), "--version"], 60)
    if cli.rc != 0 or seen["version"] not in cli.stdout:
        return FAILED, f"`reprogate --version` in the venv said {cli.tail()!r}", facts
    return PASSED, "", facts


def wheel_requirements(wheel: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA (email header format), extras left out."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = BytesParser().parsebytes(archive.read(name), headersonly=True)
    return [r for r in metadata.get_all("Requires-Dist", []) if "extra ==" not in r.replace('"', "").replace("'", "")]


def _wheel_names(wheels: Path | None) -> list[str]:
    return sorted(p.name for p in wheels.glob("*.whl")) if wheels else []


def _installed(run: Run) -> Installed:
    venv = run.work / "venv"
    return Installed(venv, venv / "bin" / "python", venv / "bin" / "reprogate")


# ---------------------------------------------------------------------------------------------
# the GPU: what NVML, torch and nvidia-smi say, before any check relies on it

PROBE = """
import json
out = {}
try:
    import pynvml
    pynvml.nvmlInit()
    out["nvml_count"] = pynvml.nvmlDeviceGetCount()
    pynvml.nvmlShutdown()
except Exception as exc:
    out["nvml_error"] = f"{type(exc).__name__}: {exc}"
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    out["cuda_available"] = torch.cuda.is_available()
    out["device_count"] = torch.cuda.device_count() if out["cuda_available"] else 0
except Exception as exc:
    out["torch_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def probe_gpu(run: Run, installed: Installed) -> dict[str, Any]:
    """NVML's and torch's view of the GPUs, from the venv's python; `present` is NVML seeing one."""
    done = run.command([str(installed.python), "-c", PROBE], LIMITS["probe"])
    seen: dict[str, Any] = json.loads(done.stdout) if done.rc == 0 and done.stdout.strip() else {"probe_error": done.tail()}
    seen["present"] = bool(seen.get("nvml_count"))
    if not seen["present"]:
        why = seen.get("nvml_error") or seen.get("probe_error") or "NVML sees 0 GPUs"
        seen["reason"] = f"no GPU: {why}"
    seen["ld_library_path"] = os.environ.get("LD_LIBRARY_PATH")
    seen["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return seen


def nvidia_smi(run: Run) -> dict[str, Any]:
    """`nvidia-smi -q -x` read with an XML parser: the independent witness of what NVML said."""
    if shutil.which("nvidia-smi") is None:
        return {"error": "nvidia-smi is not on PATH"}
    done = run.command(["nvidia-smi", "-q", "-x"], LIMITS["nvidia-smi"])
    if done.rc != 0:
        return {"error": f"nvidia-smi -q -x failed: {done.tail(200)}"}
    root = ElementTree.fromstring(done.stdout)
    gpus = []
    for gpu in root.findall("gpu"):
        total = (gpu.findtext("fb_memory_usage/total") or "").split()
        gpus.append(
            {
                "name": gpu.findtext("product_name"),
                "uuid": gpu.findtext("uuid"),
                "memory_mib": int(total[0]) if total and total[0].isdigit() else None,
            }
        )
    return {"driver_version": root.findtext("driver_version"), "cuda_version": root.findtext("cuda_version"), "gpus": gpus}


# ---------------------------------------------------------------------------------------------
# nvml-capture and driver-cuda-class


def nvml_capture(run: Run, installed: Installed, smi: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    target = run.out / "capture.json"
    done = run.command([str(installed.reprogate), "capture", "-o", str(target), "--root", str(run.work)], LIMITS["nvml-capture"])
    if done.rc != 0 or not target.exists():
        return FAILED, f"reprogate capture exited {done.rc}: {done.tail()}", {}
    captured = json.loads(target.read_text())
    devices = captured.get("devices") or {}
    gpus = devices.get("gpus") or []
    facts = {
        "devices": {k: devices.get(k) for k in ("present", "reason", "driver_version", "cuda_driver_version")},
        "gpus": [{k: g.get(k) for k in ("index", "name", "uuid", "memory_bytes", "compute_capability", "mig_mode", "ecc_mode")} for g in gpus],
        "framework": (captured.get("software") or {}).get("framework"),
        "compatibility": captured.get("compatibility"),
        "nvidia_smi": smi,
    }
    if not devices.get("present"):
        return FAILED, f"capture says devices present: false ({devices.get('reason')})", facts
    problems = [f"devices.{k} missing" for k in ("driver_version", "cuda_driver_version") if not devices.get(k)]
    if not gpus:
        problems.append("devices.gpus is empty")
    for gpu in gpus:
        problems += [f"gpus[{gpu.get('index')}].{k} missing" for k in ("name", "uuid", "memory_bytes") if not gpu.get(k)]
        if gpu.get("uuid") and not str(gpu["uuid"]).startswith(("GPU-", "MIG-")):
            problems.append(f"gpus[{gpu.get('index')}].uuid {gpu['uuid']!r} is not an NVML UUID")
    problems += _against_smi(devices, gpus, smi)
    return (FAILED, "; ".join(problems), facts) if problems else (PASSED, "", facts)


def _against_smi(devices: dict[str, Any], gpus: list[dict[str, Any]], smi: dict[str, Any]) -> list[str]:
    """Where nvidia-smi can be read, NVML's values through capture must be the same ones."""
    if "error" in smi:
        return []
    problems = []
    if smi.get("driver_version") and smi["driver_version"] != devices.get("driver_version"):
        problems.append(f"driver {devices.get('driver_version')} != nvidia-smi's {smi['driver_version']}")
    if smi.get("cuda_version") and smi["cuda_version"] != devices.get("cuda_driver_version"):
        problems.append(f"CUDA driver {devices.get('cuda_driver_version')} != nvidia-smi's {smi['cuda_version']}")
    by_uuid = {g.get("uuid"): g for g in smi.get("gpus", [])}
    for gpu in gpus:
        other = by_uuid.get(gpu.get("uuid"))
        if other is None:
            problems.append(f"nvidia-smi does not list {gpu.get('uuid')}")
            continue
        if other.get("name") and other["name"] != gpu.get("name"):
            problems.append(f"{gpu.get('uuid')}: name {gpu.get('name')!r} != nvidia-smi's {other['name']!r}")
        mib = other.get("memory_mib")
        if mib and gpu.get("memory_bytes") and abs(gpu["memory_bytes"] / 2**20 - mib) > 0.01 * mib:
            problems.append(f"{gpu.get('uuid')}: memory {gpu['memory_bytes']} bytes != nvidia-smi's {mib} MiB")
    return problems


CLASSIFY = """
import datetime, json, sys
from pathlib import Path
import torch
from reprogate.capture.compat import classify, classify_record_sections
from reprogate.core.documents import load_document
from reprogate.rules.base import RuleContext
from reprogate.rules.driver_compat import driver_runs_framework_cuda
capture = Path(sys.argv[1])
doc = load_document(capture)
devices, software = doc.data.get("devices") or {}, doc.data.get("software") or {}
direct = classify(torch.version.cuda, devices.get("driver_version"))
sections = classify_record_sections(software, devices)
ctx = RuleContext(doc, "RunRecord", capture.parent, datetime.date.today(), 1 << 26)
rule = [{"code": d.code, "severity": str(d.severity), "message": d.message} for d in driver_runs_framework_cuda(ctx)]
ran = None
if torch.cuda.is_available():
    a = torch.arange(16, dtype=torch.float32, device="cuda").reshape(4, 4)
    ran = bool(torch.equal((a @ a.T).cpu(), torch.arange(16, dtype=torch.float32).reshape(4, 4) @ torch.arange(16, dtype=torch.float32).reshape(4, 4).T))
print(json.dumps({"direct": direct.as_dict(), "sections": sections.as_dict() if sections else None, "rule": rule, "cuda_op": ran, "torch": torch.__version__}))
"""
RUNS = ("supported", "minor-version-compatible", "forward-compatible-only")
RULE_CODES = {
    "supported": set(),
    "minor-version-compatible": set(),
    "forward-compatible-only": {"cuda-driver-forward-only"},
    "unsupported": {"cuda-driver-unsupported"},
}


def driver_cuda_class(run: Run, installed: Installed) -> tuple[str, str, dict[str, Any]]:
    capture = run.out / "capture.json"
    if not capture.exists():
        return NOT_RUN, "nvml-capture wrote no capture.json", {}
    done = run.command([str(installed.python), "-c", CLASSIFY, str(capture)], LIMITS["driver-cuda-class"])
    if done.rc != 0:
        return FAILED, f"the classification did not run: {done.tail()}", {}
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    direct, sections = seen["direct"], seen["sections"]
    run.say(f"driver/CUDA class: driver {direct['driver']} with torch's CUDA {direct['cuda']}: {direct['status']} ({direct['detail']})")
    facts = {"class": direct["status"], **seen}
    if sections is None or sections["status"] != direct["status"]:
        return FAILED, f"the capture's sections classify as {sections and sections['status']}, torch's build and the driver as {direct['status']}", facts
    codes = {f["code"] for f in seen["rule"]}
    if codes != RULE_CODES.get(direct["status"], set()):
        return FAILED, f"rules/driver_compat.py said {sorted(codes) or 'nothing'} for a {direct['status']} pair", facts
    if direct["status"] not in RUNS:
        return FAILED, f"{direct['status']}: {direct['detail']} (torch ran a CUDA op: {seen['cuda_op']})", facts
    if seen["cuda_op"] is not True:
        return FAILED, f"classified {direct['status']} but torch's CUDA matmul {'gave a wrong result' if seen['cuda_op'] is False else 'could not run'}", facts
    return PASSED, "", facts


# ---------------------------------------------------------------------------------------------
# preflight with nccl


def preflight(run: Run, installed: Installed, world: int, name: str) -> tuple[str, str, dict[str, Any]]:
    target = run.out / f"preflight-{world}.json"
    argv = [str(installed.reprogate), "preflight", "--backend", "nccl", "--world-size", str(world)]
    argv += ["--timeout", str(PREFLIGHT_STAGE_TIMEOUT), "-o", str(target), "--format", "json"]
    done = run.command(argv, LIMITS[name], env={**os.environ, "NCCL_DEBUG": "WARN"})
    if not target.exists():
        return FAILED, f"reprogate preflight exited {done.rc} and wrote no result: {done.tail()}", {}
    report = json.loads(target.read_text())
    stages = {s["name"]: s["status"] for s in report.get("stages", [])}
    facts = {"exit_code": done.rc, "verdict": report.get("verdict"), "failed_stage": report.get("failed_stage"), "stages": stages}
    facts["seconds"] = report.get("seconds")
    facts["details"] = {s["name"]: s["detail"] for s in report.get("stages", [])}
    if done.rc == 0 and report.get("verdict") == "pass" and set(stages.values()) == {"pass"}:
        return PASSED, "", facts
    failed = report.get("failed_stage")
    text = " ".join(str(s.get("detail", "")) + " " + json.dumps(s.get("ranks", {})) for s in report.get("stages", [])) + done.stderr
    if world > 1 and failed in ("process-group", "collective") and any(word in text.lower() for word in NCCL_REFUSES):
        detail = facts["details"].get(failed, "")
        return NOT_RUN, f"nccl refuses {world} ranks on one GPU ({failed}: {detail[:300]})", facts
    return FAILED, f"preflight {report.get('verdict')} at {failed or report.get('could_not_start')}: {facts['details'].get(failed or '', '')[:400]}", facts


# ---------------------------------------------------------------------------------------------
# the CUDA reference and its rebuilds


def cuda_reference(run: Run, installed: Installed) -> tuple[str, str, dict[str, Any]]:
    """A fresh repository holding the tiny example's config and data and a project whose train.py
    is tools/gpu_check_train.py (the example's own train.py beside it as example.py), committed;
    `reprogate init` makes its record, then `reprogate validate` holds it to the rules."""
    repo = run.work / "cuda-repo"
    tiny = REPO / "examples" / "tiny"
    shutil.copytree(tiny / "config", repo / "config")
    shutil.copytree(tiny / "data", repo / "data")
    (repo / "project").mkdir()
    shutil.copyfile(tiny / "project" / "train.py", repo / "project" / "example.py")
    shutil.copyfile(TOOLS / "gpu_check_train.py", repo / "project" / "train.py")
    for step in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], [*GIT_USER, "commit", "-qm", "the project"]):
        done = run.command(step, 30, cwd=repo)
        if done.rc != 0:
            return FAILED, f"{' '.join(step)} failed: {done.tail()}", {}
    argv = [str(installed.reprogate), "init", "project", "--world-size", "1", "--seeds", "1,2", "--level", "bitwise", "--realizer", "current"]
    argv += ["--env", "CUBLAS_WORKSPACE_CONFIG=:4096:8", "--timeout", "60", "-y"]
    done = run.command(argv, LIMITS["cuda-reference"], cwd=repo)
    record = repo / "records" / "project.yaml"
    facts: dict[str, Any] = {"init_exit_code": done.rc}
    if done.rc != 0 or not record.exists():
        return FAILED, f"reprogate init exited {done.rc}: {done.tail(900)}", facts
    shutil.copyfile(record, run.out / "record.yaml")
    checked = run.command([str(installed.reprogate), "validate", "--format", "json"], LIMITS["validate"], cwd=repo)
    facts["validate_exit_code"] = checked.rc
    facts.update(_record_facts(installed, run, record))
    if checked.rc != 0:
        return FAILED, f"reprogate validate exited {checked.rc} on the CUDA record: {checked.tail()}", facts
    run.command(["git", "add", "-A"], 30, cwd=repo)
    commit = run.command([*GIT_USER, "commit", "-qm", "the CUDA reference"], 30, cwd=repo)
    if commit.rc != 0:
        return FAILED, f"committing the reference failed: {commit.tail()}", facts
    problems = []
    if facts.get("level") != "bitwise":
        problems.append(f"the contract is {facts.get('level')}, not bitwise")
    if facts.get("execution_env", {}).get("CUBLAS_WORKSPACE_CONFIG") != ":4096:8":
        problems.append("execution.env lacks CUBLAS_WORKSPACE_CONFIG=:4096:8")
    if facts.get("deterministic_algorithms") is not True:
        problems.append(f"the trace's meta says deterministic algorithms {facts.get('deterministic_algorithms')}")
    return (FAILED, "; ".join(problems), facts) if problems else (PASSED, "", facts)


RECORD_FACTS = """
import json, sys
from pathlib import Path
from reprogate.core.documents import load_document
record = Path(sys.argv[1])
data = load_document(record).data
trace = record.parent.parent / data["reference"]["trace"]["path"]
meta = json.loads(trace.read_text().splitlines()[0])
print(json.dumps({
    "level": data["contract"]["level"],
    "envelope": data["contract"].get("envelope"),
    "execution_env": data["execution"].get("env", {}),
    "gpus": [g.get("name") for g in (data.get("devices") or {}).get("gpus", [])],
    "framework": (data.get("software") or {}).get("framework"),
    "driver_version": (data.get("devices") or {}).get("driver_version"),
    "deterministic_algorithms": (meta.get("determinism") or {}).get("deterministic_algorithms"),
    "meta": {k: meta.get(k) for k in ("seed", "world_size", "steps", "device", "cuda", "torch")},
}))
"""


def _record_facts(installed: Installed, run: Run, record: Path) -> dict[str, Any]:
    done = run.command([str(installed.python), "-c", RECORD_FACTS, str(record)], 30)
    return json.loads(done.stdout) if done.rc == 0 else {"record_facts_error": done.tail()}


EDIT_RECORD = """
import sys, yaml
from pathlib import Path
from reprogate.core.documents import load_document
path = Path(sys.argv[1])
data = load_document(path).data
data["execution"].setdefault("env", {})["EXAMPLE_PERTURB_STEP"] = sys.argv[2]
path.write_text(yaml.safe_dump(data, sort_keys=False))
"""
PERTURB_STEP = "7"


def cuda_rebuild(run: Run, installed: Installed, perturbed: bool) -> tuple[str, str, dict[str, Any]]:
    repo = run.work / "cuda-repo"
    record = repo / "records" / "project.yaml"
    name = "perturbed" if perturbed else "bitwise"
    if perturbed:
        edited = run.command([str(installed.python), "-c", EDIT_RECORD, str(record), PERTURB_STEP], 30)
        if edited.rc != 0:
            return FAILED, f"setting EXAMPLE_PERTURB_STEP in the record failed: {edited.tail()}", {}
    out = run.work / f"rebuild-{name}"
    argv = [str(installed.reprogate), "rebuild", "records/project.yaml", "--out", str(out), "--format", "json", "--workdir", str(run.work / f"work-{name}")]
    done = run.command(argv, LIMITS[f"cuda-rebuild-{name}"], cwd=repo)
    verdict_file = out / "verdict.json"
    if not verdict_file.exists():
        return FAILED, f"reprogate rebuild exited {done.rc} and wrote no verdict: {done.tail(900)}", {"exit_code": done.rc}
    shutil.copyfile(verdict_file, run.out / f"verdict-{name}.json")
    verdict = json.loads(verdict_file.read_text())
    stages = {s["name"]: s["status"] for s in verdict["stages"]}
    details = {s["name"]: s.get("detail", "") for s in verdict["stages"]}
    claim = verdict.get("claim") or {}
    facts = {
        "exit_code": done.rc,
        "verdict": verdict.get("verdict"),
        "diagnosis": verdict.get("diagnosis"),
        "stages": stages,
        "model_state_detail": details.get("model-state"),
        "claim": claim.get("text"),
        "environment": {k: v for k, v in (verdict.get("environment") or {}).items() if k in ("python", "framework", "gpus", "driver", "cuda", "sandbox")},
    }
    if not perturbed:
        if done.rc == 0 and verdict.get("verdict") == "pass" and stages.get("model-state") == "pass":
            return PASSED, "", facts
        failed = verdict.get("diagnosis")
        return FAILED, f"the rebuild of the CUDA reference says {verdict.get('verdict')} at {failed}: {details.get(failed or '', '')[:400]}", facts
    want = f"step {PERTURB_STEP}, rank 0"
    if done.rc == 1 and verdict.get("diagnosis") == "model-state" and str(details.get("model-state", "")).startswith(want) and stages.get("batches") == "pass":
        return PASSED, "", facts
    said = f"{verdict.get('verdict')} at {verdict.get('diagnosis')} (exit {done.rc})"
    return FAILED, f"the perturbed rebuild must fail at model-state ({want}); it said {said}", facts


# ---------------------------------------------------------------------------------------------
# the whole run


def check_all(run: Run, dry_run: bool, wheels: Path | None) -> tuple[list[Check], dict[str, Any]]:
    checks = [timed("install", lambda: install(run, wheels))]
    gpu: dict[str, Any] = {"present": False, "reason": NO_GPU_DRY} if dry_run else {}
    if checks[0].status != PASSED:
        gpu = gpu or {"present": False, "reason": "not probed: the install failed"}
        reason = NO_GPU_DRY if dry_run else "not run: the install failed"
        return checks + [Check(name, NOT_RUN, reason) for name in GPU_CHECKS], gpu
    installed = _installed(run)
    if dry_run:
        return checks + [Check(name, NOT_RUN, NO_GPU_DRY) for name in GPU_CHECKS], gpu
    gpu = probe_gpu(run, installed)
    if not gpu["present"]:
        return checks + [Check(name, NOT_RUN, gpu["reason"]) for name in GPU_CHECKS], gpu
    smi = nvidia_smi(run)
    gpu["nvidia_smi"] = smi
    steps: list[tuple[str, Callable[[], tuple[str, str, dict[str, Any]]]]] = [
        ("nvml-capture", lambda: nvml_capture(run, installed, smi)),
        ("driver-cuda-class", lambda: driver_cuda_class(run, installed)),
        ("preflight-nccl-1", lambda: preflight(run, installed, 1, "preflight-nccl-1")),
        ("preflight-nccl-2-ranks-1-gpu", lambda: preflight(run, installed, 2, "preflight-nccl-2-ranks-1-gpu")),
        ("cuda-reference", lambda: cuda_reference(run, installed)),
        ("cuda-rebuild-bitwise", lambda: cuda_rebuild(run, installed, perturbed=False)),
        ("cuda-rebuild-perturbed", lambda: cuda_rebuild(run, installed, perturbed=True)),
    ]
    for name, work in steps:
        if name.startswith("cuda-rebuild") and next(c for c in checks if c.name == "cuda-reference").status != PASSED:
            checks.append(Check(name, NOT_RUN, NO_REFERENCE))
        elif run.left() < 10:
            checks.append(Check(name, NOT_RUN, f"{BUDGET_SPENT} ({run.left():.0f} s left)"))
        else:
            run.say(f"== {name}")
            checks.append(timed(name, work))
        last = checks[-1]
        run.say(f"   {name}: {last.status}{' - ' + last.reason if last.reason else ''} ({last.seconds:.1f} s)")
    return checks, gpu


def unfinished(checks: list[Check]) -> list[Check]:
    """The checks the budget left no time for, and those that waited on one it left no time for."""
    spent = [c for c in checks if c.status == NOT_RUN and c.reason.startswith(BUDGET_SPENT)]
    reference = next((c for c in checks if c.name == "cuda-reference"), None)
    if reference is not None and reference in spent:
        spent += [c for c in checks if c.status == NOT_RUN and c.reason == NO_REFERENCE]
    return spent


def exit_code(checks: list[Check], dry_run: bool) -> int:
    if any(c.status == FAILED for c in checks):
        return 1
    if unfinished(checks):
        return EXIT_INCOMPLETE
    ran_gpu = any(c.status == PASSED for c in checks if c.name in GPU_CHECKS)
    return 0 if dry_run or ran_gpu else 3


def verdict_of(code: int, dry_run: bool) -> str:
    """passed only for a device run whose every check ran and passed (or said why it could not, as nccl does)."""
    if code == 1:
        return FAILED
    if code == EXIT_INCOMPLETE:
        return INCOMPLETE
    return PASSED if code == 0 and not dry_run else NOT_RUN


def summary(checks: list[Check], gpu: dict[str, Any], dry_run: bool, started_at: str, seconds: float, code: int, budget: float) -> dict[str, Any]:
    return {
        "tool": "tools/gpu-check",
        "mode": "dry-run" if dry_run else "device",
        "verdict": verdict_of(code, dry_run),
        "exit_code": code,
        "started_at": started_at,
        "seconds": round(seconds, 3),
        "budget_seconds": budget,
        "repository": str(REPO),
        "python": sys.version.split()[0],
        "gpu": gpu,
        "checks": [asdict(c) for c in checks],
        "counts": {s: sum(1 for c in checks if c.status == s) for s in (PASSED, FAILED, NOT_RUN)},
        "unfinished": [c.name for c in unfinished(checks)],
        "plan": [{"name": name, "runs": what, "limit_seconds": LIMITS[name]} for name, what in PLAN],
    }


def say_plan(run: Run, budget: float) -> None:
    """The checks a device run makes, in order, each with its limit: what a dry run proves nothing of."""
    run.say(f"plan of a device run ({budget:g} s budget; this dry run does the install only):")
    for name, what in PLAN:
        run.say(f"  {name:<29} {LIMITS[name]:>4.0f} s  {what}")


def write_json(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


# ---------------------------------------------------------------------------------------------
# --prepare-wheels


def requirements_to_carry() -> list[str]:
    """reprogate's requirements the GPU machine lacks, and its build backend (pyproject.toml)."""
    import tomllib  # here, not at the top: the dry run and the device run also start on Python 3.10

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wanted = []
    for requirement in [*project["project"]["dependencies"], *project["build-system"]["requires"]]:
        name = requirement.split(";")[0]
        for stop in "<>=!~[ ":
            name = name.split(stop)[0]
        if name.lower().replace("_", "-") in DEVICE_HAS:
            continue
        if ";" in requirement and "python_version < '3.11'" in requirement.replace('"', "'"):
            continue  # tomli: Python 3.12 has tomllib
        wanted.append(requirement.split(";")[0].strip())
    return wanted


def prepare_wheels(target: Path) -> int:
    wanted = requirements_to_carry()
    platforms = [arg for p in DEVICE_PLATFORMS for arg in ("--platform", p)]
    with tempfile.TemporaryDirectory(prefix="gpu-wheels-") as tmp:
        argv = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:", "--python-version", DEVICE_PYTHON]
        argv += ["--implementation", "cp", "--abi", "cp312", *platforms, "-d", tmp, *wanted]
        print(f"downloading for CPython {DEVICE_PYTHON} manylinux x86-64: {' '.join(wanted)} (and what they need)", flush=True)
        done = subprocess.run(argv, timeout=600, check=False)
        if done.returncode != 0:
            print(f"pip download failed (exit {done.returncode}); {target} is unchanged", file=sys.stderr)
            return 3
        fetched = sorted(Path(tmp).glob("*.whl"))
        names = [p.name.split("-")[0].lower() for p in fetched]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            print(f"pip fetched two versions of {', '.join(doubled)}; {target} is unchanged", file=sys.stderr)
            return 3
        size = sum(p.stat().st_size for p in fetched)
        if size > WHEELS_LIMIT:
            print(f"the wheels come to {size / 2**20:.1f} MiB, over the {WHEELS_LIMIT / 2**20:.0f} MiB this run may carry", file=sys.stderr)
            return 3
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.whl"):
            old.unlink()
        for wheel in fetched:
            shutil.move(str(wheel), target / wheel.name)
    print(f"{len(fetched)} wheels, {size / 2**20:.2f} MiB, in {target}:")
    for wheel in sorted(target.glob("*.whl")):
        print(f"  {wheel.name}")
    return 0


# ---------------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tools/gpu-check",
        description=__doc__.split("\n\n")[0],
        epilog="exit: 0 every check ran and passed (--dry-run: the install passed); 1 a check failed; 2 bad arguments; "
        "3 no GPU check could run (without --dry-run); 4 incomplete: the budget ran out before every check ran. See docs/gpu-check.md.",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="On a CPU: print the plan, install from the working tree and write the summary; every GPU check is not-run."
    )
    parser.add_argument(
        "--wheels",
        type=Path,
        default=None,
        help=f"Folder of wheels to install from, with no index (default {DEFAULT_WHEELS.relative_to(REPO)} when it exists).",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"The folder gpu-check.json, gpu-check.log and the checks' files go into, made when missing (default $OUT, else ./{DEFAULT_OUT}/).",
    )
    parser.add_argument(
        "--work", type=Path, default=None, help="Work folder for the venv and the CUDA reference (default: a fresh temporary one, removed after)."
    )
    parser.add_argument("--budget", type=float, default=BUDGET, help=f"Seconds the whole run may take (default {BUDGET:g}); each step has a limit inside it.")
    parser.add_argument("--prepare-wheels", type=Path, default=None, metavar="DIR", help="Download the wheels the GPU machine lacks into DIR, then exit.")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        parser.error("--budget must be positive")
    if args.wheels is not None and not args.wheels.is_dir():
        parser.error(f"--wheels {args.wheels}: no such folder")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: a file; --out names the folder the summary and its files go into")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.prepare_wheels is not None:
        return prepare_wheels(args.prepare_wheels.resolve())
    out = (args.out or Path(os.environ.get("OUT") or DEFAULT_OUT)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    wheels = args.wheels if args.wheels is not None else (DEFAULT_WHEELS if DEFAULT_WHEELS.is_dir() else None)
    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="reprogate-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    started_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = time.monotonic()
    run = Run(out, work, args.budget)
    try:
        run.say(f"tools/gpu-check ({'dry run' if args.dry_run else 'device'}): work {work}, summary in {out}, wheels {wheels or '(none)'}")
        if args.dry_run:
            say_plan(run, args.budget)
        checks, gpu = check_all(run, args.dry_run, wheels.resolve() if wheels else None)
        code = exit_code(checks, args.dry_run)
        data = summary(checks, gpu, args.dry_run, started_at, time.monotonic() - started, code, args.budget)
        write_json(out / "gpu-check.json", data)
        for check in checks:
            run.say(f"{check.status:8} {check.name}{': ' + check.reason if check.reason else ''}")
        if code == 3:
            run.say("NO GPU CHECK RAN: nothing of the GPU half was proven on this machine")
        if code == EXIT_INCOMPLETE:
            names = ", ".join(c.name for c in unfinished(checks))
            run.say(f"INCOMPLETE: the budget ({args.budget:g} s) ran out before {names} ran; what never ran proved nothing (--budget gives more)")
        run.say(f"wrote {out / 'gpu-check.json'} (exit {code})")
        return code
    finally:
        run.log.close()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
