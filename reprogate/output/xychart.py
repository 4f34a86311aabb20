"""A Mermaid `xychart-beta` as a fenced Markdown block: what GitHub renders in a comment.

The chart has a numeric x-axis (`x-axis "step" 1 --> 80`), so Mermaid draws its own ~10 ticks
instead of one overlapping label per point; every series must then have one value per point, spaced
evenly over that range. Colours are set in the chart's own init directive, in series order, so the
legend a caller writes under the chart (xychart draws none) can name them. Titles are the
caller's own words; quotes and anything that would end the directive or the fence are dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

UNSAFE = re.compile(r'["`\[\]{}%\n\r;]')


@dataclass(frozen=True)
class Series:
    """One series: a line or bars (bars rise from the bottom of the y-axis), one value per point."""

    kind: str  # "line" or "bar"
    values: tuple[float, ...]
    color: str  # #rrggbb, named by the legend under the chart


@dataclass(frozen=True)
class XYChart:
    title: str
    x_title: str
    x_range: tuple[float, float]
    y_title: str
    y_range: tuple[float, float]
    series: tuple[Series, ...]


def _words(text: str) -> str:
    return UNSAFE.sub("", text).strip()


def _number(value: float) -> str:
    return f"{value:.6g}"


def _values(values: Sequence[float]) -> str:
    return ", ".join(_number(v) for v in values)


def mermaid(chart: XYChart) -> str:
    """The chart as a ```mermaid block; empty when it has no series or a series of another length."""
    lengths = {len(s.values) for s in chart.series}
    if not chart.series or len(lengths) != 1 or 0 in lengths:
        return ""
    palette = ", ".join(s.color for s in chart.series)
    init = {"themeVariables": {"xyChart": {"plotColorPalette": palette}}}
    lines = [
        "```mermaid",
        f"%%{{init: {json.dumps(init)}}}%%",
        "xychart-beta",
        f'    title "{_words(chart.title)}"',
        f'    x-axis "{_words(chart.x_title)}" {_number(chart.x_range[0])} --> {_number(chart.x_range[1])}',
        f'    y-axis "{_words(chart.y_title)}" {_number(chart.y_range[0])} --> {_number(chart.y_range[1])}',
    ]
    lines += [f"    {s.kind} [{_values(s.values)}]" for s in chart.series]
    lines.append("```")
    return "\n".join(lines)
