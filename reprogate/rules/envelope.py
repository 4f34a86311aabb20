"""The reference run itself must lie inside the envelope its contract declares.

An envelope that excludes the hardware the reference ran on means no rebuild can ever match the
contract's terms; that is a mistake in the record, better caught at review than at the drill.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext


def release_admits(release: str, version: str) -> bool:
    """True if `version` (2.13.0+cu130) falls under the release prefix `release` (2.13)."""
    wanted = release.split(".")
    found = re.findall(r"\d+", version.split("+")[0])
    return found[: len(wanted)] == wanted


def reference_inside_envelope(ctx: RuleContext) -> Iterator[Diagnostic]:
    record = ctx.record
    if record.contract is None:
        return
    envelope = record.contract.envelope
    models = list(envelope.gpu_models or ())
    if models and record.devices is not None:
        for i, gpu in enumerate(record.devices.gpus or ()):
            if gpu.name not in models:
                yield ctx.finding(("devices", "gpus", i, "name"), f"GPU model {gpu.name!r} is not in the contract's envelope {models}", "envelope-gpu-model")
    nodes = record.execution.nodes if record.execution is not None else None
    low, high = envelope.nodes_min, envelope.nodes_max
    if nodes is not None:
        if (isinstance(low, int) and nodes < low) or (isinstance(high, int) and nodes > high):
            span = f"{low if isinstance(low, int) else 1}..{high if isinstance(high, int) else 'any'}"
            yield ctx.finding(("execution", "nodes"), f"{nodes} node(s) is outside the envelope's {span}", "envelope-nodes")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        yield ctx.finding(("contract", "envelope", "nodes"), f"node range {low}..{high} is empty", "envelope-empty-range")
    branches = list(envelope.driver_branch or ())
    driver = record.devices.driver_version if record.devices is not None else None
    if branches and driver is not None and driver.split(".")[0].isdigit():
        branch = "R" + driver.split(".")[0]
        if branch not in branches:
            yield ctx.finding(("devices", "driver_version"), f"driver {driver} is branch {branch}, outside the envelope's {branches}", "envelope-driver-branch")
    framework = envelope.framework
    software = record.software.framework if record.software is not None else None
    if framework is not None and software is not None:
        name, release, version = framework.name, framework.release, software.version
        if name != software.name:
            yield ctx.finding(("software", "framework", "name"), f"framework {software.name!r} is not the envelope's {name!r}", "envelope-framework")
        elif not release_admits(release, version):
            yield ctx.finding(
                ("software", "framework", "version"), f"{name} {version} is outside the envelope's release {release}", "envelope-framework-release"
            )
    systems = list(envelope.os or ())
    os_id, os_version = (record.host.os_id, record.host.os_version_id) if record.host is not None else (None, None)
    if systems and os_id is not None:
        label = f"{os_id}-{os_version}" if os_version is not None else os_id
        if label not in systems and os_id not in systems:
            yield ctx.finding(("host", "os"), f"operating system {label!r} is outside the envelope's {systems}", "envelope-os")
