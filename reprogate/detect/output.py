"""detect's outputs: a table a reviewer reads, stable JSON, and a Markdown summary."""

from __future__ import annotations

import json

from reprogate.detect.base import LAYERS, Change
from reprogate.detect.run import DetectResult
from reprogate.output.markdown import cell, code_span


def text(result: DetectResult) -> str:
    short = lambda rev: rev[:12] if all(c in "0123456789abcdef" for c in rev) else rev
    lines = [f"{result.files} file(s) changed between {short(result.base)} and {short(result.head)}"]
    if not result.changes:
        lines.append("no framework, image, driver, dataset, pinned source or record change")
    for layer in LAYERS:
        changes = [c for c in result.changes if c.layer == layer]
        if changes:
            lines.append(f"{layer}:")
            lines += [f"  {c.path}: {_described(c)}" for c in changes]
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
            lines.append(f"| {c.layer} | {code_span(c.path, in_table=True)} | {cell(_described(c))} |")
    return "\n".join(lines) + "\n"


def _described(change: Change) -> str:
    """What changed, and which record pins it when a detector found it (a pinned-only change
    already says so)."""
    if change.record and change.kind not in ("pinned", "reference"):
        return f"{change.describe()} (pinned by {change.record})"
    return change.describe()
