"""A watched file at both revisions, parsed at most once however many detectors look at it."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from reprogate.core.documents import DocumentError, load_text

T = TypeVar("T")


@functools.lru_cache(maxsize=64)
def _pattern(words: tuple[bytes, ...]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(w) for w in words), re.IGNORECASE)


@dataclass
class Versions:
    path: str
    old: bytes | None  # None: the file does not exist at base
    new: bytes | None  # None: the file does not exist at head
    _data: dict[str, Any] = field(default_factory=dict)
    name: str = field(init=False)  # the file name, computed once: detectors ask for it many times per file

    def __post_init__(self) -> None:
        self.name = self.path.rsplit("/", 1)[-1]

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A value computed from this file once however many detectors ask (a parse, say);
        an exception is remembered and raised again."""
        if key not in self._data:
            try:
                self._data[key] = (True, compute())
            except Exception as exc:  # noqa: BLE001 - remembered, not swallowed: raised again to every caller
                self._data[key] = (False, exc)
        ok, value = self._data[key]
        if not ok:
            raise value
        return cast(T, value)  # stored by this method from compute() under this key

    def mentions(self, *words: bytes) -> bool:
        """Whether either side contains one of these words, case-insensitively: a YAML file that
        never says `image` holds no image reference, and is not parsed to find out."""
        pattern = _pattern(words)
        return any(side is not None and pattern.search(side) is not None for side in (self.old, self.new))

    def text(self, which: str) -> str | None:
        raw = self.old if which == "old" else self.new
        return None if raw is None else raw.decode("utf-8", "replace")

    def data(self, which: str) -> Any:
        """Parsed YAML/JSON of one side; raises ValueError with the reason if it cannot be read."""
        if which not in self._data:
            text = self.text(which)
            if text is None:
                self._data[which] = None
            else:
                try:
                    self._data[which] = load_text(text, self.path, "json" if self.path.endswith(".json") else "yaml").data
                except DocumentError as exc:
                    self._data[which] = ValueError(f"{'base' if which == 'old' else 'head'}: {exc.diagnostics[0].message}")
        value = self._data[which]
        if isinstance(value, ValueError):
            raise value
        return value

    def kind(self) -> str | None:
        """The reprogate kind of the file at head (or base if deleted), when it parses as one."""
        if not self.mentions(b"reprogate"):
            return None
        for which in ("new", "old"):
            try:
                data = self.data(which)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("kind"), str) and str(data.get("apiVersion", "")).startswith("reprogate"):
                return str(data["kind"])
        return None
