"""Markdown built from text a pull request or a record controls (comments, the step summary, the
check run, reports): the one escaper for it.

- `plain`: text shown as itself; no Markdown of its own (no heading, list, emphasis, link, image,
  HTML, autolink or @mention that notifies someone).
- `inline`: text that may hold code spans its producer meant (a stage detail: "`lr` differs"):
  the spans are found as CommonMark finds them (a run of backticks closed by the next run of the
  same length; an unmatched run is a literal backtick) and re-fenced so nothing can end them
  early, and everything outside them is `plain`. A name holding an odd backtick therefore cannot
  turn the rest of the text into "inside a span" for one reader and into live Markdown for GitHub.
- `cell`: `inline` for a table cell (no column break, inside a code span either).
- `code_span`, `code_block`: literal text, fenced with more backticks than it holds.

tests/github/test_markdown_payloads.py renders what the bot posts with GitHub's own renderer
(cmark-gfm) and holds it to that.
"""

from __future__ import annotations

import re

from reprogate.output import workflow


def one_line(text: str) -> str:
    """Text on one line (CommonMark ends a line at \\r too), control and bidirectional characters
    shown escaped, as in the log."""
    return workflow.visible(text.replace("\r", " ").replace("\n", " "))


# What Markdown (and GFM's extensions) act on anywhere in a line: backslash escapes, code spans,
# emphasis, strikethrough, links and images, HTML and angle autolinks (`<`), entities, table columns and math. CommonMark
# renders a backslash before any ASCII punctuation as the character itself.
# An underscore inside a word (`val_loss`) starts no emphasis in GFM and is left as it is.
_ACTIVE = re.compile(r"([\\`*\[\]<|~&$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# What acts only where a block starts (a heading, a list item, a quote, a setext underline).
_BLOCK_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d{1,9})([.)]))")
# GFM's autolinks: a scheme before `://`, and `www.`; an escaped `:` or `.` ends them.
_AUTOLINK = re.compile(r"(?<=[A-Za-z])(:)(?=//)|(?<![\w.])(www)(\.)", re.IGNORECASE)
# @name notifies name; repo@sha256:… (a letter before it) does not. A word joiner after the `@`
# keeps the text as it reads and takes the mention away (a backslash does not: GitHub links
# mentions after rendering).
MENTION = re.compile(r"(?<![\w.])@(?=[A-Za-z0-9])")
WORD_JOINER = "\u2060"


def _escaped(text: str, block_start: bool) -> str:
    text = _ACTIVE.sub(r"\\\1", text)
    text = _AUTOLINK.sub(lambda m: "\\:" if m.group(1) else f"{m.group(2)}\\.", text)
    text = MENTION.sub("@" + WORD_JOINER, text)
    return _BLOCK_START.sub(_block_marker, text) if block_start else text


def _block_marker(match: re.Match[str]) -> str:
    """The marker that would start a block, escaped (`\\#`, `1\\.`: a digit takes no backslash)."""
    if match.group(2):
        return f"{match.group(1)}\\{match.group(2)}"
    return f"{match.group(1)}{match.group(3)}\\{match.group(4)}"


def plain(text: str) -> str:
    """Text shown as itself in Markdown, wherever it is put (a list item, a paragraph, a table
    cell): one line, every character Markdown would act on escaped — no heading, list, emphasis,
    link, image, HTML or autolink can start from a name a pull request chose — and @mentions
    made inert."""
    return _escaped(one_line(text), block_start=True)


def _spans(text: str) -> list[tuple[bool, str]]:
    """`text` as (is_code, part) pieces, code spans found as CommonMark finds them: a backtick run
    opens a span closed by the next run of exactly its length; a run nothing closes is text."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    pieces: list[tuple[bool, str]] = []
    at = i = 0
    while i < len(runs):
        start, end = runs[i]
        size = end - start
        closing = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == size), None)
        if closing is None:
            i += 1  # a literal backtick run: it stays in the text around it
            continue
        if start > at:
            pieces.append((False, text[at:start]))
        pieces.append((True, text[end : runs[closing][0]]))
        at = runs[closing][1]
        i = closing + 1
    if at < len(text):
        pieces.append((False, text[at:]))
    return pieces


def _span_content(body: str) -> str:
    """What CommonMark shows of a span's content: line ends as spaces, and one space stripped from
    each side when both sides have one (and it is not all spaces)."""
    if len(body) >= 2 and body[0] == " " and body[-1] == " " and body.strip(" "):
        return body[1:-1]
    return body


def inline(text: str, in_table: bool = False) -> str:
    """Text whose code spans are kept as code and whose rest is `plain`: for producers that write
    "`field` differs" on purpose about names they do not control."""
    parts = []
    for i, (is_code, part) in enumerate(_spans(one_line(text))):
        parts.append(code_span(_span_content(part), in_table) if is_code else _escaped(part, block_start=i == 0 and not in_table))
    return "".join(parts)


def cell(text: str) -> str:
    """Text for a table cell: `inline`, and no column break anywhere (plain escapes `|`; a code
    span's `|` is written `\\|`, which GFM reads inside a table's code span as `|`)."""
    return inline(text, in_table=True)


def _fence(text: str, shortest: int) -> str:
    """Backticks one more than the longest run in `text` (at least `shortest`): text inside
    cannot close what they open."""
    return "`" * max(shortest, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))


def code_span(text: str, in_table: bool = False) -> str:
    """A code span for `text`: fenced with one backtick more than its longest run of backticks, so
    a name holding backticks cannot end the span early (nor start a heading, a link or an image)."""
    body = one_line(text)
    if in_table:
        body = body.replace("|", "\\|")
    fence = _fence(body, 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() or (body.startswith(" ") and body.endswith(" ")) else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def code_block(text: str, info: str = "") -> list[str]:
    """Lines of a fenced code block holding `text` as it is (a log tail): the fence is longer
    than any run of backticks in it, so the text cannot close the block and write Markdown of its own."""
    fence = _fence(text, 3)
    return [f"{fence}{info}", text, fence]


__all__ = ["MENTION", "cell", "code_block", "code_span", "inline", "one_line", "plain"]
