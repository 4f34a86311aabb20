"""What every capture layer shares: the context it reads, the shape of an absent section, and the
guard that turns a layer's unexpected failure into that shape.

Kept apart from the package's `__init__` so the layer modules can import it while `LAYERS`, in
`__init__`, imports the layer modules themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from reprogate.core.redact import redact


@dataclass
class CaptureContext:
    root: Path  # the project folder (a repository or a folder inside one)
    image: str | None = None  # --image REF@sha256:... given by the user
    framework: bool = True  # import torch to describe it (costs about a second)
    lock_globs: list[str] = field(default_factory=list)
    exclude: list[Path] = field(default_factory=list)  # files left out of the dirty state (the record being filled)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    results: dict[str, Any] = field(default_factory=dict)  # sections captured so far
    notes: list[str] = field(default_factory=list)  # what a layer could not read but captured around (a bad lock file)


def absent(reason: str) -> dict[str, Any]:
    return {"present": False, "reason": reason}


class CaptureLayer(Protocol):
    """What a capture layer module provides."""

    SECTION: str  # the capture document's key its result goes under

    def capture(self, ctx: CaptureContext) -> dict[str, Any]: ...


def run_layer(layer: ModuleType | CaptureLayer, ctx: CaptureContext) -> dict[str, Any]:
    try:
        return layer.capture(ctx)
    except Exception as exc:  # noqa: BLE001 - one broken layer must not lose the others
        return absent(f"capture failed: {type(exc).__name__}: {redact(str(exc))[:200]}")
