"""What the bot posts, rendered as GitHub renders it (cmark-gfm, with GitHub's extensions:
tables, strikethrough, autolinks, task lists, the tag filter), and what in it is live markup
that text from a pull request must never produce."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from reprogate.output.markdown import MENTION


def render(markdown: str) -> str:
    """HTML as GitHub's renderer makes it from `markdown` (raw HTML kept, as GitHub keeps the
    tags its sanitizer allows: an injected tag must not be there to sanitize)."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


class _Live(HTMLParser):
    """The elements and text of rendered HTML, with whether each text run is inside <code>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[tuple[bool, str, tuple[str, ...]]] = []
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("img", "br", "hr", "input"):
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            while self._open and self._open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.texts.append(("code" in self._open or "pre" in self._open, data, tuple(self._open)))


def live_markup(markdown: str, payload_words: tuple[str, ...]) -> list[str]:
    """What in the rendered `markdown` a pull request's text made live: a link or image to the
    payload's host (`evil.example`), any <img>, <script>, <iframe> or <style>, emphasis around one
    of `payload_words`, an @mention outside code. Empty when the text stayed text."""
    page = _Live()
    page.feed(render(markdown))
    found = []
    for tag, attrs in page.tags:
        if tag in ("img", "script", "iframe", "style", "object", "embed", "form"):
            found.append(f"<{tag} {attrs}>")
        if any("evil.example" in str(value) for key, value in attrs.items() if key in ("href", "src", "action")):
            found.append(f"<{tag}> to {attrs}")
    for in_code, text, open_tags in page.texts:
        if in_code:
            continue
        if MENTION.search(text) and re.search(r"(?<![\w.])@(octocat|maintainers|org/team)\b", text):
            found.append(f"mention in {text!r}")
        if set(open_tags) & {"strong", "em", "del", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"} and any(w in text for w in payload_words):
            found.append(f"{sorted(set(open_tags) & {'strong', 'em', 'del', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'blockquote'})} around {text!r}")
    return found
