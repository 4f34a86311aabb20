"""`reprogate capture`: the environment half of a run record, one module per layer.

Each layer module exposes SECTION (where its result goes) and capture(ctx) -> dict. A layer that
cannot be read (no git, no NVIDIA driver, no torch, no Docker) returns `present: false` with the
reason; a layer that fails unexpectedly is turned into the same shape by `run_layer`, so capture
never crashes because one part of the machine is missing. Adding a layer is one module and one
line in LAYERS.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

from reprogate import __version__


@dataclass
class CaptureContext:
    root: Path  # the project folder (a repository or a folder inside one)
    image: str | None = None  # --image REF@sha256:... given by the user
    framework: bool = True  # import torch to describe it (costs about a second)
    lock_globs: list[str] = field(default_factory=list)
    exclude: list[Path] = field(default_factory=list)  # files left out of the dirty state (the record being filled)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    results: dict[str, Any] = field(default_factory=dict)  # sections captured so far


def absent(reason: str) -> dict[str, Any]:
    return {"present": False, "reason": reason}


def _layers() -> list[ModuleType]:
    from reprogate.capture import container, cpu, devices, envvars, host, software, source

    return [source, host, cpu, container, devices, software, envvars]


def run_layer(layer: ModuleType, ctx: CaptureContext) -> dict[str, Any]:
    try:
        return layer.capture(ctx)
    except Exception as exc:  # noqa: BLE001 - one broken layer must not lose the others
        from reprogate.core.redact import redact

        return absent(f"capture failed: {type(exc).__name__}: {redact(str(exc))[:200]}")


def capture_all(ctx: CaptureContext) -> dict[str, Any]:
    """Every layer, then the driver/CUDA compatibility verdict derived from them."""
    from reprogate.capture.compat import classify_record_sections

    document: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "kind": "EnvironmentCapture",
        "captured_at": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "captured_by": f"reprogate {__version__}",
    }
    for layer in _layers():
        ctx.results[layer.SECTION] = document[layer.SECTION] = run_layer(layer, ctx)
    verdict = classify_record_sections(document.get("software"), document.get("devices"))
    if verdict is not None:
        document["compatibility"] = verdict.as_dict()
    return without_credentials(document)


def without_credentials(node: Any) -> Any:
    """Every string of the capture with URL userinfo and credential query parameters taken out
    (core/redact.strip_credentials): one pass over what the layers found, so no layer can write a
    credential into a record, whatever it read (a git remote, a mirror URL, MASTER_ADDR)."""
    from reprogate.core.redact import strip_credentials

    if isinstance(node, str):
        return strip_credentials(node)
    if isinstance(node, dict):
        return {key: without_credentials(value) for key, value in node.items()}
    if isinstance(node, list):
        return [without_credentials(value) for value in node]
    return node
