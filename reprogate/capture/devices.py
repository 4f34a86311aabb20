"""GPUs as NVML reports them: driver, CUDA driver version, each device by UUID, and topology.

Every NVML call is wrapped: a field the driver does not support (ECC on consumer cards, MIG on
pre-Ampere parts) is left out rather than failing the layer. Devices are keyed by UUID because
NVML indices are not stable across reboots.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from reprogate.capture.base import CaptureContext, absent

SECTION = "devices"
# nvmlDeviceGetTopologyCommonAncestor levels, as nvidia-smi topo -m names them.
TOPOLOGY = {0: "INTERNAL", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _try(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception:  # noqa: BLE001 - pynvml raises NVMLError_NotSupported & co. per field
        return None


def capture(ctx: CaptureContext) -> dict[str, Any]:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return absent("nvidia-ml-py is not installed (pip install 'reprogate[gpu]')")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return absent(f"NVML could not start: {type(exc).__name__} (no NVIDIA driver on this machine?)")
    try:
        return _read(pynvml)
    finally:
        _try(pynvml.nvmlShutdown)


def _read(nv: Any) -> dict[str, Any]:
    section: dict[str, Any] = {"present": True, "driver_version": _text(nv.nvmlSystemGetDriverVersion())}
    cuda = _try(nv.nvmlSystemGetCudaDriverVersion_v2) or _try(nv.nvmlSystemGetCudaDriverVersion)
    if cuda:
        section["cuda_driver_version"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
    gpus = [_gpu(nv, index, handle) for index, handle in enumerate(handles)]
    section["gpus"] = gpus
    if len(handles) > 1:
        section["topology"] = _topology(nv, handles, gpus)
    return section


def _gpu(nv: Any, index: int, handle: Any) -> dict[str, Any]:
    gpu: dict[str, Any] = {"index": index, "name": _text(nv.nvmlDeviceGetName(handle)), "uuid": _text(nv.nvmlDeviceGetUUID(handle))}
    pci = _try(lambda: nv.nvmlDeviceGetPciInfo(handle))
    if pci is not None:
        gpu["pci_bus_id"] = _text(pci.busId)
    memory = _try(lambda: nv.nvmlDeviceGetMemoryInfo(handle))
    if memory is not None:
        gpu["memory_bytes"] = int(memory.total)
    capability = _try(lambda: nv.nvmlDeviceGetCudaComputeCapability(handle))
    if capability:
        gpu["compute_capability"] = f"{capability[0]}.{capability[1]}"
    mig = _try(lambda: nv.nvmlDeviceGetMigMode(handle))
    if mig is not None:
        gpu["mig_mode"] = bool(mig[0])
    ecc = _try(lambda: nv.nvmlDeviceGetEccMode(handle))
    if ecc is not None:
        gpu["ecc_mode"] = bool(ecc[0])
    persistence = _try(lambda: nv.nvmlDeviceGetPersistenceMode(handle))
    if persistence is not None:
        gpu["persistence_mode"] = persistence == nv.NVML_FEATURE_ENABLED
    power = _try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(handle))
    if power is not None:
        gpu["power_limit_watts"] = power / 1000
    return gpu


def _topology(nv: Any, handles: list[Any], gpus: list[dict[str, Any]]) -> dict[str, Any]:
    nvlinks = []
    peers: dict[int, set[str]] = {i: set() for i in range(len(handles))}
    bus_to_index = {g.get("pci_bus_id", "").lower(): i for i, g in enumerate(gpus)}
    for i, handle in enumerate(handles):
        for link, peer in _nvlinks(nv, handle):
            nvlinks.append({"gpu": gpus[i]["uuid"], "link": link, "peer": peer})
            peers[i].add(peer.lower())
    matrix = []
    for i, first in enumerate(handles):
        row = []
        for j, second in enumerate(handles):
            if i == j:
                row.append("X")
            elif any(bus_to_index.get(p) == j for p in peers[i]) or (peers[i] and not any(p in bus_to_index for p in peers[i])):
                row.append("NV")  # direct NVLink, or links to NVSwitches (all-to-all)
            else:
                level = _common_ancestor(nv, first, second)
                row.append(TOPOLOGY.get(level, "SYS") if level is not None else "SYS")
        matrix.append(row)
    return {"matrix": matrix, "nvlinks": nvlinks}


def _nvlinks(nv: Any, handle: Any) -> list[tuple[int, str]]:
    """The device's active NVLinks, each with the PCI bus id of its far end ("unknown" where NVML cannot say)."""
    links = []
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        # _try calls each at once; partial binds this iteration's link all the same.
        if _try(functools.partial(nv.nvmlDeviceGetNvLinkState, handle, link)) != 1:
            continue
        remote = _try(functools.partial(nv.nvmlDeviceGetNvLinkRemotePciInfo, handle, link))
        links.append((link, _text(remote.busId) if remote is not None else "unknown"))
    return links


def _common_ancestor(nv: Any, first: Any, second: Any) -> Any:
    return _try(lambda: nv.nvmlDeviceGetTopologyCommonAncestor(first, second))
