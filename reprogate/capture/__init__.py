"""`reprogate capture`: the environment half of a run record, one module per layer.

Each layer module is a CaptureLayer: SECTION (where its result goes) and capture(ctx) -> dict,
listed in `layers.LAYERS` (section -> module) in the order they run (source first: later layers
read its result). A layer that cannot be read (no git, no NVIDIA driver, no torch, no Docker)
returns `present: false` with the reason; a layer that fails unexpectedly is turned into the same
shape by `run_layer`, so capture never crashes because one part of the machine is missing. Adding
a layer is one module and one line in `layers.LAYERS`. The parts every layer shares are in `base`,
named here too.
"""

from __future__ import annotations

from reprogate.capture.base import CaptureContext, CaptureLayer, absent, run_layer

__all__ = ["CaptureContext", "CaptureLayer", "absent", "run_layer"]
