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
            lines.append(f"| {c.layer} | {_code(c.path)} | {_cell(c.describe())} |")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """A path from a pull request as inline code it cannot break out of (the table ends up in a
    PR comment: a backtick in a file name must not turn the rest into links or mentions)."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {_cell(text)} {fence}"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ").replace("\r", " ").replace("<", "&lt;")  # no HTML tags from a pull request
