"""Can this driver run this CUDA build? A table from NVIDIA's documentation, not a guess.

Sources (read 2026-11-29):
- CUDA Toolkit release notes, Table 3 "CUDA Toolkit and Corresponding Driver Versions" (the
  driver each toolkit shipped with, GA and updates) and Table 2 (minor-version compatibility
  minimums): https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
- CUDA Compatibility guide (backward, minor-version and forward compatibility, and the FAQ):
  https://docs.nvidia.com/deploy/cuda-compatibility/
Rules: a driver at or above the toolkit's GA driver supports it fully (backward compatibility);
at or above its major family's minor-version-compatibility minimum it runs with limited features
(no JIT of newer PTX: cudaErrorUnsupportedPtxVersion 222; newer APIs return
cudaErrorCallRequiresNewerDriver 36); below that, only the cuda-compat forward-compatibility
package can help, and only on data-center GPUs. A toolkit missing from the table is "unknown",
which counts as unsupported: looking close is never supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# toolkit -> the Linux x86_64 driver it was released with (GA). Table 3 has no 12.7.
TOOLKIT_DRIVER: dict[str, str] = {
    "11.0": "450.36.06",
    "11.1": "455.23",
    "11.2": "460.27.03",
    "11.3": "465.19.01",
    "11.4": "470.42.01",
    "11.5": "495.29.05",
    "11.6": "510.39.01",
    "11.7": "515.43.04",
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",
}
# major -> minimum driver for minor-version compatibility across that major (Table 2; 11.x needs
# 450.80.02 per its footnote; the x.0 GA driver is the safe exact floor for 12.x and 13.x).
MVC_MINIMUM: dict[str, str] = {"11": "450.80.02", "12": "525.60.13", "13": "580.65.06"}

SUPPORTED = "supported"
MINOR_VERSION = "minor-version-compatible"
FORWARD_ONLY = "forward-compatible-only"
UNSUPPORTED = "unsupported"
NOT_APPLICABLE = "not-applicable"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


@dataclass
class Verdict:
    status: str
    toolkit: str | None
    driver: str | None
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "cuda": self.toolkit, "driver": self.driver, "detail": self.detail}


def classify(toolkit: str | None, driver: str | None) -> Verdict:
    """Classify a (framework CUDA build, NVIDIA driver) pair."""
    if not toolkit:
        return Verdict(NOT_APPLICABLE, toolkit, driver, "the framework is a CPU build; no CUDA driver is needed")
    if not driver:
        return Verdict(NOT_APPLICABLE, toolkit, driver, "no NVIDIA driver was captured")
    short = ".".join(toolkit.split(".")[:2])
    try:
        have = _version(driver)
    except ValueError:
        return Verdict(UNSUPPORTED, toolkit, driver, f"driver version {driver!r} cannot be read")
    if short not in TOOLKIT_DRIVER:
        return Verdict(UNSUPPORTED, toolkit, driver, f"CUDA {short} is not in reprogate's table from NVIDIA's release notes; compatibility cannot be confirmed")
    ga = TOOLKIT_DRIVER[short]
    if have >= _version(ga):
        return Verdict(SUPPORTED, toolkit, driver, f"driver {driver} >= {ga}, the driver CUDA {short} shipped with")
    family = short.split(".")[0]
    floor = MVC_MINIMUM[family]
    if have >= _version(floor):
        return Verdict(
            MINOR_VERSION,
            toolkit,
            driver,
            f"driver {driver} is below {ga} (CUDA {short} GA) but at or above {floor}, the CUDA {family}.x minor-version "
            "minimum: runs with limited features (no JIT of newer PTX, newer APIs fail); binaries need SASS for the GPU",
        )
    return Verdict(
        FORWARD_ONLY,
        toolkit,
        driver,
        f"driver {driver} is below {floor}, the CUDA {family}.x minimum: only the cuda-compat-{family}-{short.split('.')[1]} "
        "forward-compatibility package can run it, and only on NVIDIA data-center GPUs",
    )


def classify_record_sections(software: Any, devices: Any) -> Verdict | None:
    """The verdict for a record's (or capture's) software and devices sections, if both say enough."""
    framework = software.get("framework") if isinstance(software, dict) else None
    if not isinstance(framework, dict) or "version" not in framework:
        return None
    toolkit = framework.get("cuda") or (software.get("cuda_toolkit") if isinstance(software, dict) else None)
    driver = devices.get("driver_version") if isinstance(devices, dict) and devices.get("present", True) else None
    return classify(toolkit if isinstance(toolkit, str) else None, driver if isinstance(driver, str) else None)
