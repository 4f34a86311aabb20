"""The reference run itself must lie inside the envelope its contract declares.

An envelope that excludes the hardware the reference ran on means no rebuild can ever match the
contract's terms; that is a mistake in the record, better caught at review than at the drill.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext, get, items


def release_admits(release: str, version: str) -> bool:
    """True if `version` (2.13.0+cu130) falls under the release prefix `release` (2.13)."""
    wanted = release.split(".")
    found = re.findall(r"\d+", version.split("+")[0])
    return found[: len(wanted)] == wanted


def reference_inside_envelope(ctx: RuleContext) -> Iterator[Diagnostic]:
    envelope = get(ctx.data, "contract", "envelope")
    if not isinstance(envelope, dict):
        return
    models = envelope.get("gpu_models")
    if isinstance(models, list) and models:
        for i, gpu in items(get(ctx.data, "devices", "gpus")):
            name = get(gpu, "name")
            if isinstance(name, str) and name not in models:
                yield ctx.finding(("devices", "gpus", i, "name"), f"GPU model {name!r} is not in the contract's envelope {models}", "envelope-gpu-model")
    nodes = get(ctx.data, "execution", "nodes")
    low, high = get(envelope, "nodes", "min"), get(envelope, "nodes", "max")
    if isinstance(nodes, int):
        if (isinstance(low, int) and nodes < low) or (isinstance(high, int) and nodes > high):
            span = f"{low if isinstance(low, int) else 1}..{high if isinstance(high, int) else 'any'}"
            yield ctx.finding(("execution", "nodes"), f"{nodes} node(s) is outside the envelope's {span}", "envelope-nodes")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        yield ctx.finding(("contract", "envelope", "nodes"), f"node range {low}..{high} is empty", "envelope-empty-range")
    branches = envelope.get("driver_branch")
    driver = get(ctx.data, "devices", "driver_version")
    if isinstance(branches, list) and branches and isinstance(driver, str) and driver.split(".")[0].isdigit():
        branch = "R" + driver.split(".")[0]
        if branch not in branches:
            yield ctx.finding(("devices", "driver_version"), f"driver {driver} is branch {branch}, outside the envelope's {branches}", "envelope-driver-branch")
    framework = envelope.get("framework")
    software = get(ctx.data, "software", "framework")
    if isinstance(framework, dict) and isinstance(software, dict):
        name, release, version = framework.get("name"), framework.get("release"), software.get("version")
        if isinstance(name, str) and isinstance(software.get("name"), str) and name != software["name"]:
            yield ctx.finding(("software", "framework", "name"), f"framework {software['name']!r} is not the envelope's {name!r}", "envelope-framework")
        elif isinstance(release, str) and isinstance(version, str) and not release_admits(release, version):
            yield ctx.finding(
                ("software", "framework", "version"), f"{name} {version} is outside the envelope's release {release}", "envelope-framework-release"
            )
    systems = envelope.get("os")
    os_id, os_version = get(ctx.data, "host", "os", "id"), get(ctx.data, "host", "os", "version_id")
    if isinstance(systems, list) and systems and isinstance(os_id, str):
        label = f"{os_id}-{os_version}" if isinstance(os_version, str) else os_id
        if label not in systems and os_id not in systems:
            yield ctx.finding(("host", "os"), f"operating system {label!r} is outside the envelope's {systems}", "envelope-os")
