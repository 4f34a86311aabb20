"""Which CUDA an image, a wheel or an index carries, and the driver that CUDA needs.

A change of CUDA is a driver change: the host driver must be at least the one the new CUDA
requires. Images say their CUDA in several ways: `nvidia/cuda:12.4.1-devel-ubuntu22.04` by tag,
NGC framework images by release (`nvcr.io/nvidia/pytorch:24.05-py3`: each monthly release pins
one CUDA), and many others by a `cuda12.4` / `cu124` part in the tag; wheels by a `+cu124` local
version; wheel indexes by a `/cu124` path segment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

# Minimum Linux driver of each CUDA toolkit release (major.minor, its first GA), from NVIDIA's
# "CUDA Toolkit Release Notes", table "CUDA Toolkit and Corresponding Driver Versions".
TOOLKIT_DRIVER = {
    "10.0": "410.48", "10.1": "418.39", "10.2": "440.33",
    "11.0": "450.36.06", "11.1": "455.23", "11.2": "460.27.03", "11.3": "465.19.01", "11.4": "470.42.01",
    "11.5": "495.29.05", "11.6": "510.39.01", "11.7": "515.43.04", "11.8": "520.61.05",
    "12.0": "525.60.13", "12.1": "530.30.02", "12.2": "535.54.03", "12.3": "545.23.06", "12.4": "550.54.14",
    "12.5": "555.42.02", "12.6": "560.28.03", "12.8": "570.26", "12.9": "575.51.03", "13.0": "580.65.06",
}  # fmt: skip

# NGC PyTorch container release -> (CUDA it is based on, driver branch its release notes require),
# from NVIDIA's "PyTorch Release Notes" (Deep Learning Frameworks documentation): the "Driver
# Requirements" section of each release ("Release 24.05 is based on NVIDIA CUDA 12.4.1, which
# requires NVIDIA Driver release 545 or later"), summarised in NVIDIA's "Frameworks Support Matrix".
NGC_PYTORCH = {
    "21.02": ("11.2.0", "460"), "21.03": ("11.2.1", "460"), "21.04": ("11.3.0", "465"), "21.05": ("11.3.0", "465"),
    "21.06": ("11.3.1", "465"), "21.07": ("11.4.0", "470"), "21.08": ("11.4.1", "470"), "21.09": ("11.4.2", "470"),
    "21.10": ("11.4.2", "470"), "21.11": ("11.5.0", "495"), "21.12": ("11.5.0", "495"),
    "22.01": ("11.6.0", "510"), "22.02": ("11.6.0", "510"), "22.03": ("11.6.1", "510"), "22.04": ("11.6.2", "510"),
    "22.05": ("11.7.0", "515"), "22.06": ("11.7.0", "515"), "22.07": ("11.7.1", "515"), "22.08": ("11.7.1", "515"),
    "22.09": ("11.8.0", "520"), "22.10": ("11.8.0", "520"), "22.11": ("11.8.0", "520"), "22.12": ("11.8.0", "520"),
    "23.01": ("12.0.1", "525"), "23.02": ("12.0.1", "525"), "23.03": ("12.1.0", "530"), "23.04": ("12.1.0", "530"),
    "23.05": ("12.1.1", "530"), "23.06": ("12.1.1", "530"), "23.07": ("12.1.1", "530"), "23.08": ("12.2.1", "535"),
    "23.09": ("12.2.1", "535"), "23.10": ("12.2.2", "535"), "23.11": ("12.3.0", "545"), "23.12": ("12.3.2", "545"),
    "24.01": ("12.3.2", "545"), "24.02": ("12.3.2", "545"), "24.03": ("12.4.0", "545"), "24.04": ("12.4.1", "545"),
    "24.05": ("12.4.1", "545"), "24.06": ("12.5.0", "555"), "24.07": ("12.5.1", "555"), "24.08": ("12.6.0", "560"),
    "24.09": ("12.6.1", "560"), "24.10": ("12.6.2", "560"), "24.11": ("12.6.3", "560"), "24.12": ("12.6.3", "560"),
    "25.01": ("12.8.0", "570"), "25.02": ("12.8.0", "570"), "25.03": ("12.8.1", "570"), "25.04": ("12.9.0", "575"),
    "25.05": ("12.9.0", "575"), "25.06": ("12.9.1", "575"), "25.08": ("13.0.0", "580"), "25.09": ("13.0.1", "580"),
    "25.10": ("13.0.2", "580"),
}  # fmt: skip

# The minimum Linux driver of each CUDA toolkit update (x.y.z, z the update), where it differs from
# its release's first GA above: the same table's rows "CUDA 12.4 Update 1 >= 550.54.15" and so on
# (../shared/reference/tech.md, section 2). An update not listed needs its GA's driver (12.1 Update 1,
# 11.8, 11.5 Update 1-2 ship none newer). A CUDA change that needs the same minimum driver moves no
# driver floor: it is a base-image change, not a driver change.
UPDATE_DRIVER = {
    "11.0.3": "450.51.06", "11.1.1": "455.32", "11.2.1": "460.32.03", "11.2.2": "460.32.03",
    "11.4.1": "470.57.02", "11.4.2": "470.57.02", "11.4.3": "470.82.01", "11.4.4": "470.82.01",
    "11.6.1": "510.47.03", "11.6.2": "510.47.03", "11.7.1": "515.48.07", "12.0.1": "525.85.12",
    "12.2.1": "535.86.09", "12.2.2": "535.104.05", "12.3.1": "545.23.08", "12.3.2": "545.23.08",
    "12.4.1": "550.54.15", "12.5.1": "555.42.06", "12.6.1": "560.35.03", "12.6.2": "560.35.03",
    "12.6.3": "560.35.05", "12.8.1": "570.124.06", "12.9.1": "575.57.08", "13.0.1": "580.82.07",
    "13.0.2": "580.95.05",
}  # fmt: skip

# NVIDIA's framework containers on nvcr.io (PyTorch, TensorFlow, TensorRT, Triton, PaddlePaddle, MXNet,
# JAX, ...) are released monthly, each release on one CUDA for all of them (the Frameworks Support
# Matrix has one row per release): NGC_PYTORCH's release table holds for every one. Their floor is
# the driver branch the release notes require.
NGC_FRAMEWORKS = ("pytorch", "tensorflow", "tensorrt", "tritonserver", "paddlepaddle", "mxnet", "jax", "cuda-dl-base", "dgl")

VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
_NGC_RELEASE = re.compile(r"^(\d{2})\.(\d{2})(?![\d.])")
_CUDA_IN_TAG = re.compile(r"(?:^|[-_.+])cuda-?(\d{2})\.?(\d)(?:\.(\d+))?(?=$|[-_.+a-z])", re.IGNORECASE)
_CU_IN_TAG = re.compile(r"(?:^|[-_.+/])cu(\d{2})(\d)(?=$|[-_.+/a-z])", re.IGNORECASE)
_CU_IN_LOCAL = re.compile(r"(?:^|[^a-z])cu(\d{2})(\d)(?!\d)")  # local labels run words together: pt270cu128cxx11abitrue


@dataclass(frozen=True)
class Cuda:
    """A CUDA version, where it was read from, and the driver it needs (None where unknown)."""

    version: str  # "12.4.1", "12.4", or "" when only an NGC release is known
    source: str  # "nvidia/cuda tag", "NGC pytorch 24.05", "+cu124 wheel", "cu124 index"
    driver: str | None = None  # minimum driver version or branch ("550.54.14", "R545")

    def describe(self) -> str:
        text = self.version or self.source
        if self.version and self.source and not self.source.endswith("tag"):
            text += f" ({self.source})"
        return text + (f"; driver >= {self.driver}" if self.driver else "")


def minimum_driver(version: str) -> str | None:
    """The minimum driver of a CUDA version: its update's where `x.y.z` names one, else its release's GA."""
    match = VERSION.match(version)
    if not match:
        return None
    short = f"{int(match.group(1))}.{int(match.group(2))}"
    update = f"{short}.{int(match.group(3))}" if match.group(3) else None
    return UPDATE_DRIVER.get(update or "") or TOOLKIT_DRIVER.get(short)


def same_floor(a: str | None, b: str | None) -> bool:
    """Whether two minimum drivers are one floor: equal versions, or the same branch where either
    is known only by its branch (`R545`, what NGC's release notes require)."""
    if a is None or b is None:
        return False
    if a.startswith("R") or b.startswith("R"):
        return branch(a.removeprefix("R")) == branch(b.removeprefix("R"))
    return a == b


def branch(driver: str | None) -> str | None:
    return f"R{driver.split('.')[0]}" if driver else None


def _from_digits(major: str, minor: str, patch: str | None, source: str) -> Cuda:
    version = f"{int(major)}.{int(minor)}" + (f".{patch}" if patch else "")
    return Cuda(version, source, minimum_driver(version))


def of_image(name: str, tag: str | None) -> Cuda | None:
    """The CUDA an image reference says it carries, or None (no CUDA, or nothing in the ref says)."""
    repository = name.lower().rsplit("/", 1)[-1]
    tag = tag or ""
    if repository in ("cuda", "cuda-dl-base") and (match := VERSION.match(tag)):
        return _from_digits(match.group(1), match.group(2), match.group(3), "nvidia/cuda tag")
    if name.lower().startswith("nvcr.io/nvidia/") and (release := _NGC_RELEASE.match(tag)):
        key = f"{release.group(1)}.{release.group(2)}"
        known = NGC_PYTORCH.get(key) if repository in NGC_FRAMEWORKS else None
        if known:
            return Cuda(known[0], f"NGC {repository} {key}", f"R{known[1]}")
        return Cuda("", f"NGC {repository} {key}", None)  # a release change is still a CUDA/driver change
    for pattern in (_CUDA_IN_TAG, _CU_IN_TAG):
        if match := pattern.search(tag):
            groups = match.groups()
            return _from_digits(groups[0], groups[1], groups[2] if len(groups) > 2 else None, "image tag")
    if "cuda" in repository:  # `pytorch-cuda:2.5.1-12.4.1`: the dash-separated part that is a CUDA release
        for part in reversed(tag.split("-")):
            if (match := VERSION.fullmatch(part)) and f"{int(match.group(1))}.{int(match.group(2))}" in TOOLKIT_DRIVER:
                return _from_digits(match.group(1), match.group(2), match.group(3), "image tag")
    return None


def of_wheel_version(version: str | None) -> Cuda | None:
    """`2.4.0+cu124` -> CUDA 12.4, from the local version label with packaging."""
    if not version:
        return None
    from packaging.version import InvalidVersion, Version

    try:
        local = Version(version.lstrip("=")).local
    except InvalidVersion:
        return None
    match = _CU_IN_LOCAL.search(local or "")
    return _from_digits(match.group(1), match.group(2), None, "+cu wheel") if match else None


def of_wheel_file(url: str) -> Cuda | None:
    """`.../flash_attn-2.8.3+cu128torch2.9-cp311-cp311-linux_x86_64.whl` -> CUDA 12.8."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        version = parse_wheel_filename(url.rsplit("/", 1)[-1])[1]
    except InvalidWheelFilename:
        return None
    return of_wheel_version(str(version))


def of_index(url: str) -> Cuda | None:
    """`https://download.pytorch.org/whl/cu124` (or `.../nightly/cu121`) -> CUDA 12.4."""

    path = urlsplit(url).path if "://" in url else url
    for segment in reversed(path.strip("/").split("/")):
        match = _CU_IN_TAG.fullmatch(segment) or _CU_IN_TAG.fullmatch("-" + segment)
        if match:
            return _from_digits(match.group(1), match.group(2), None, "cu index")
    return None


def of_arg(name: str, value: str) -> Cuda | None:
    """A build argument named for CUDA (`CUDA_VERSION=12.4.1`, `CUDA=cu124`) -> its CUDA."""
    if "cuda" not in name.lower() or not value:
        return None
    if match := VERSION.match(value):
        return _from_digits(match.group(1), match.group(2), match.group(3), f"ARG {name}")
    if value.isdigit() and len(value) == 3:  # CUDA="128", the spelling of wheel indexes without "cu"
        return _from_digits(value[:2], value[2], None, f"ARG {name}")
    if match := _CU_IN_TAG.fullmatch(value) or _CU_IN_TAG.fullmatch("-" + value):
        return _from_digits(match.group(1), match.group(2), None, f"ARG {name}")
    return None
