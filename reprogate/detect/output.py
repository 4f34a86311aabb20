"""detect's outputs: a table a reviewer reads, stable JSON, and a Markdown summary."""

from __future__ import annotations

import json

from reprogate.detect.base import LAYERS
from reprogate.detect.run import DetectResult


def text(result: DetectResult) -> str:
    lines = [f"{result.files} file(s) changed between {result.base[:12]} and {result.head[:12]}"]
    if not result.changes:
        lines.append("no framework, driver, image, dataset or record change")
    for layer in LAYERS:
        changes = [c for c in result.changes if c.layer == layer]
        if changes:
            lines.append(f"{layer}:")
            lines += [f"  {c.path}: {c.describe()}" for c in changes]
    lines += [f"note: {n}" for n in result.notes]
    lines.append(f"rebuild required: {'yes' if result.rebuild_required else 'no'}")
    return "\n".join(lines) + "\n"


def as_json(result: DetectResult) -> str:
    return json.dumps(result.as_json(), indent=2) + "\n"


def markdown(result: DetectResult) -> str:
    head = "### reprogate detect: " + ("rebuild required" if result.rebuild_required else "no rebuild needed")
    lines = [head, "", f"{result.files} file(s) changed; watched layers changed: {', '.join(result.layers) or 'none'}.", ""]
    if result.changes:
        lines += ["| layer | file | change |", "|---|---|---|"]
        for c in result.changes:
            lines.append(f"| {c.layer} | `{c.path}` | {c.describe().replace('|', '/')} |")
    return "\n".join(lines) + "\n"
