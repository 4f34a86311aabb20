"""A record whose framework CUDA build its driver cannot run is refused (see capture/compat.py)."""

from __future__ import annotations

from collections.abc import Iterator

from reprogate.capture.compat import FORWARD_ONLY, UNSUPPORTED, classify_record_sections
from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.rules.base import RuleContext, get


def driver_runs_framework_cuda(ctx: RuleContext) -> Iterator[Diagnostic]:
    verdict = classify_record_sections(get(ctx.data, "software"), get(ctx.data, "devices"))
    if verdict is None:
        return
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
