"""A verdict as the Markdown a reviewer reads in a pull request, or as JSON.

Sections: the verdict and diagnosis, the stage table, the bounded claim and what it does not
cover, the statistical tests with α, margin, n and m, the reference and rebuilt loss curves as a
Mermaid xychart-beta (GitHub renders it), the failing run's log tail, and the way forward when the
rebuild failed: a new reference record promoted through the baseline label, never a bypass.
"""

from __future__ import annotations

import json
from typing import Any

ICONS = {"pass": "✅", "fail": "❌", "skipped": "⏭️", "not-run": "⏸️"}
MAX_POINTS = 60


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _downsample(points: list[list[float]] | list[tuple[int, float]], limit: int = MAX_POINTS) -> list[tuple[int, float]]:
    pts = [(int(s), float(v)) for s, v in points]
    if len(pts) <= limit:
        return pts
    stride = len(pts) / limit
    picked = [pts[int(i * stride)] for i in range(limit)]
    return picked[:-1] + [pts[-1]]


def mermaid_chart(reference: list[Any], rebuilt: list[Any]) -> str:
    """xychart-beta with both loss curves on the reference's steps."""
    ref = _downsample(reference)
    if not ref:
        return ""
    steps = [s for s, _ in ref]
    rebuilt_by_step = {int(s): float(v) for s, v in rebuilt}
    new = [rebuilt_by_step.get(s) for s in steps]
    values = [v for _, v in ref] + [v for v in new if v is not None]
    low, high = min(values), max(values)
    pad = (high - low) * 0.05 or 0.01
    lines = [
        "```mermaid",
        "xychart-beta",
        '    title "Training loss: reference (first line) and rebuild (second line)"',
        f"    x-axis \"step\" [{', '.join(str(s) for s in steps)}]",
        f'    y-axis "loss" {low - pad:.4g} --> {high + pad:.4g}',
        f"    line [{', '.join(f'{v:.5g}' for _, v in ref)}]",
    ]
    if any(v is not None for v in new):
        filled, last = [], ref[0][1]
        for value in new:  # xychart has no gaps: a step the rebuild did not reach repeats its last value
            last = value if value is not None else last
            filled.append(last)
        lines.append(f"    line [{', '.join(f'{v:.5g}' for v in filled)}]")
    lines.append("```")
    return "\n".join(lines)


def markdown(verdict: dict[str, Any]) -> str:
    passed = verdict["verdict"] == "pass"
    record = verdict["record"]
    head = f"## {ICONS['pass' if passed else 'fail']} Reproduction {'passed' if passed else 'failed'}: `{record['name']}` ({record['level']} contract)"
    lines = [head, ""]
    if not passed:
        lines += [f"**Diagnosis:** the first difference is at the **{verdict['diagnosis']}** stage.", ""]
    lines += ["| stage | result | time | detail |", "|---|---|---|---|"]
    for stage in verdict["stages"]:
        lines.append(f"| {stage['name']} | {ICONS.get(stage['status'], '')} {stage['status']} | {stage['seconds']:.1f} s | {_cell(stage['detail'])} |")
    claim = verdict["claim"]
    lines += ["", "### Claim", "", claim["text"], ""]
    if claim["not_covered"]:
        lines += ["This claim does not cover:", *[f"- {item}" for item in claim["not_covered"]], ""]
    if verdict["tests"]:
        lines += ["### Tests", "", "| test | result | details |", "|---|---|---|"]
        for test in verdict["tests"]:
            shown = {k: v for k, v in test.items() if k not in ("test", "passed", "values")}
            lines.append(f"| {test['test']} | {'pass' if test['passed'] else 'fail'} | {_cell(', '.join(f'{k}={_short(v)}' for k, v in shown.items()))} |")
        lines.append("")
    curves = verdict.get("curves") or {}  # optional in the verdict schema
    chart = mermaid_chart(curves.get("reference") or [], curves.get("rebuilt") or [])
    if chart:
        lines += ["### Loss", "", chart, ""]
    tail = next((s.get("log_tail") for s in verdict["stages"] if s.get("log_tail")), None)
    if tail:
        lines += ["### Log tail of the failing run", "", "```text", tail, "```", ""]
    if not passed and not verdict.get("infrastructure"):
        lines += [
            "### Way forward",
            "",
            "If this change is intended, record a new reference run (`reprogate capture`, the reference seeds, "
            "`reprogate interval`) and promote it through the baseline label; its own rebuild must pass. "
            "reprogate has no bypass flag: a gate stricter than the measurement is fixed in the record "
            "(declare `contract.metric.resolution`, widen the envelope on purpose), where reviewers see it.",
            "",
        ]
    lines.append(f"<sub>{verdict['tool']} · record digest `{record['digest'][20:36]}…` · {verdict['seconds']:.1f} s · {verdict['started_at']}</sub>")
    return "\n".join(lines) + "\n"


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
    return str(value)


def render(verdict: dict[str, Any], fmt: str) -> str:
    return json.dumps(verdict, indent=2) + "\n" if fmt == "json" else markdown(verdict)
