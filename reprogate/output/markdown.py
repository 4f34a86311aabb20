"""Markdown built from text a pull request or a record controls: one line, and code spans it
cannot break out of (comments, the step summary, reports)."""

from __future__ import annotations

import re

from reprogate.output import workflow


def one_line(text: str) -> str:
    """Text on one line (CommonMark ends a line at \\r too), control and bidirectional characters
    shown escaped, as in the log."""
    return workflow.visible(text.replace("\r", " ").replace("\n", " "))


_ACTIVE = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~&])")


def plain(text: str) -> str:
    """Text shown as itself in Markdown: one line, every character Markdown would act on escaped
    (no heading, list, link, image or HTML can start from a name a pull request chose)."""
    return _ACTIVE.sub(r"\\\1", one_line(text))


def cell(text: str) -> str:
    """Text for a table cell: one line, no column break."""
    return one_line(text).replace("|", "\\|")


def _fence(text: str, shortest: int) -> str:
    """Backticks one more than the longest run in `text` (at least `shortest`): text inside
    cannot close what they open."""
    return "`" * max(shortest, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))


def code_span(text: str, in_table: bool = False) -> str:
    """A code span for `text`: fenced with one backtick more than its longest run of backticks, so
    a name holding backticks cannot end the span early (nor start a heading, a link or an image)."""
    body = cell(text) if in_table else one_line(text)
    fence = _fence(body, 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def code_block(text: str, info: str = "") -> list[str]:
    """Lines of a fenced code block holding `text` as it is (a log tail): the fence is longer
    than any run of backticks in it, so the text cannot close the block and write Markdown of its own."""
    fence = _fence(text, 3)
    return [f"{fence}{info}", text, fence]


__all__ = ["cell", "code_block", "code_span", "one_line", "plain"]
