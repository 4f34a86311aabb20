"""`reprogate capture`: the environment half of a run record, one module per layer.

Each layer module is a CaptureLayer: SECTION (where its result goes) and capture(ctx) -> dict,
listed by name in LAYERS in the order they run (source first: later layers read its result). A
layer that cannot be read (no git, no NVIDIA driver, no torch, no Docker) returns `present: false` with the
reason; a layer that fails unexpectedly is turned into the same shape by `run_layer`, so capture
never crashes because one part of the machine is missing. Adding a layer is one module and one
line in LAYERS.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from reprogate import __version__
from reprogate.core.timestamps import utc_now


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


class CaptureLayer(Protocol):
    """What a capture layer module provides."""

    SECTION: str  # the capture document's key its result goes under

    def capture(self, ctx: CaptureContext) -> dict[str, Any]: ...


LAYERS: dict[str, str] = {  # name -> module under reprogate.capture, in the order they run
    "source": "source",
    "host": "host",
    "cpu": "cpu",
    "container": "container",
    "devices": "devices",
    "software": "software",
    "environment": "envvars",
}


def layer(name: str) -> CaptureLayer:
    """The layer module registered under `name` (imported on use: the layers import this module
    for CaptureContext, and capture --no-framework must not pay for the ones it skips)."""
    import importlib

    module: Any = importlib.import_module(f"reprogate.capture.{LAYERS[name]}")
    return module


def run_layer(layer: ModuleType | CaptureLayer, ctx: CaptureContext) -> dict[str, Any]:
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
        "captured_at": utc_now(),
        "captured_by": f"reprogate {__version__}",
    }
    for name in LAYERS:
        found = layer(name)
        ctx.results[found.SECTION] = document[found.SECTION] = run_layer(found, ctx)
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
