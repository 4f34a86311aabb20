"""Every capture layer, in the order they run, and the capture document they make together.

Apart from the package's `__init__` because naming the layers imports them all (and, through the
source layer, every lock-file parser): `validate` reads the driver table in `capture.compat`,
which runs `__init__`, and must not pay for layers it never runs.
"""

from __future__ import annotations

from typing import Any

from reprogate import __version__
from reprogate.capture import container, cpu, devices, envvars, host, software, source
from reprogate.capture.base import CaptureContext, CaptureLayer, run_layer
from reprogate.capture.compat import classify_record_sections
from reprogate.core.redact import strip_credentials
from reprogate.core.timestamps import utc_now

LAYERS: dict[str, CaptureLayer] = {  # section -> layer module, in the order they run
    "source": source,
    "host": host,
    "cpu": cpu,
    "container": container,
    "devices": devices,
    "software": software,
    "environment": envvars,
}


def capture_all(ctx: CaptureContext) -> dict[str, Any]:
    """Every layer, then the driver/CUDA compatibility verdict derived from them."""

    document: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "kind": "EnvironmentCapture",
        "captured_at": utc_now(),
        "captured_by": f"reprogate {__version__}",
    }
    for found in LAYERS.values():
        ctx.results[found.SECTION] = document[found.SECTION] = run_layer(found, ctx)
    verdict = classify_record_sections(document.get("software"), document.get("devices"))
    if verdict is not None:
        document["compatibility"] = verdict.as_dict()
    cleaned: dict[str, Any] = without_credentials(document)
    return cleaned


def without_credentials(node: Any) -> Any:
    """Every string of the capture with URL userinfo and credential query parameters taken out
    (core/redact.strip_credentials): one pass over what the layers found, so no layer can write a
    credential into a record, whatever it read (a git remote, a mirror URL, MASTER_ADDR)."""

    if isinstance(node, str):
        return strip_credentials(node)
    if isinstance(node, dict):
        return {key: without_credentials(value) for key, value in node.items()}
    if isinstance(node, list):
        return [without_credentials(value) for value in node]
    return node
