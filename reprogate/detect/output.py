"""detect's outputs: a table a reviewer reads, stable JSON, and a Markdown summary."""

from __future__ import annotations

import json

from reprogate.core.diagnostics import Diagnostic, Location, Severity
from reprogate.detect.base import LAYERS, REBUILD_LAYERS, Change
from reprogate.detect.run import LISTED_PER_FILE, DetectResult
from reprogate.output.markdown import cell, code_span
from reprogate.output.sarif import RuleText


def text(result: DetectResult) -> str:

    def short(rev: str) -> str:
        return rev[:12] if all(c in "0123456789abcdef" for c in rev) else rev

    lines = [f"{result.files} file(s) changed between {short(result.base)} and {short(result.head)}"]
    if not result.changes:
        lines.append("no framework, image, driver, dataset, pinned source or record change")
    for layer in LAYERS:
        changes = [c for c in result.changes if c.layer == layer]
        if changes:
            lines.append(f"{layer}:")
            lines += [f"  {c.path}: {_described(c)}" for c in changes]
            lines += [f"  {more.path}: {more.describe()}" for more in result.beyond.values() if more.layer == layer]
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
        for more in result.beyond.values():
            lines.append(f"| {more.layer} | {code_span(more.path, in_table=True)} | {cell(more.describe())} |")
    return "\n".join(lines) + "\n"


def findings(result: DetectResult) -> list[Diagnostic]:
    """Each change as a finding at its file (for SARIF): a warning where the layer requires a
    rebuild (or the record itself changed), a notice otherwise. The rule is the layer and kind
    (`framework-version`), the message what changed."""
    out = []
    for c in result.changes:
        rebuild = c.layer in REBUILD_LAYERS or c.kind == "reference"
        hint = "a rebuild of the reference must pass before this merges (reprogate gate dispatches it)" if rebuild else ""
        where = Location(c.line, 0)  # column 0: none (SARIF gives the line only); line 0: the file as a whole
        out.append(Diagnostic(c.path, _described(c), f"{c.layer}-{c.kind}", Severity.WARNING if rebuild else Severity.NOTICE, where, hint=hint))
    for more in result.beyond.values():
        out.append(Diagnostic(more.path, more.describe(), f"{more.layer}-not-listed", Severity.NOTICE))
    return out


def rule_texts(result: DetectResult) -> dict[str, RuleText]:
    """What each `layer-kind` rule of `findings` reports, in words."""
    texts = {}
    for c in result.changes:
        rebuild = c.layer in REBUILD_LAYERS or c.kind == "reference"
        texts[f"{c.layer}-{c.kind}"] = RuleText(
            f"A change in the watched {c.layer} layer ({c.kind})",
            "This layer decides what a training run computes: the gate rebuilds the reference record and the check passes only if the rebuild reproduces it."
            if rebuild
            else "Reported for review; this layer alone does not require a rebuild.",
        )
    for more in result.beyond.values():
        texts[f"{more.layer}-not-listed"] = RuleText(
            f"changes of one file in the {more.layer} layer beyond the first {LISTED_PER_FILE:,}, counted by kind",
            "A diff this large is summarised: the listed changes and the counts say what it changes.",
        )
    return texts


def _described(change: Change) -> str:
    """What changed, and which record pins it when a detector found it (a pinned-only change
    already says so)."""
    if change.record and change.kind not in ("pinned", "reference"):
        return f"{change.describe()} (pinned by {change.record})"
    return change.describe()
