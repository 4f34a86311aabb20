"""A record whose framework CUDA build its driver cannot run is refused (see capture/compat.py)."""

from __future__ import annotations

from collections.abc import Iterator

from reprogate.capture.compat import FORWARD_ONLY, UNSUPPORTED, classify
from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.rules.base import RuleContext


def driver_runs_framework_cuda(ctx: RuleContext) -> Iterator[Diagnostic]:
    """As capture.compat.classify_record_sections reads a capture: the framework's CUDA build (or the
    toolkit's) against the driver of devices that are present."""
    software, devices = ctx.record.software, ctx.record.devices
    if software is None or software.framework is None:
        return
    toolkit = software.framework.cuda or software.cuda_toolkit
    driver = devices.driver_version if devices is not None and devices.present else None
    verdict = classify(toolkit, driver)
    if verdict.status == UNSUPPORTED:
        yield ctx.finding(
            ("devices", "driver_version"), f"CUDA {verdict.toolkit} with driver {verdict.driver}: unsupported ({verdict.detail})", "cuda-driver-unsupported"
        )
    elif verdict.status == FORWARD_ONLY:
        yield ctx.finding(
            ("devices", "driver_version"),
            f"CUDA {verdict.toolkit} with driver {verdict.driver}: {verdict.detail}",
            "cuda-driver-forward-only",
            "record the cuda-compat package in the image, or use a newer driver",
            Severity.WARNING,
        )
