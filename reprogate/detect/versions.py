"""A watched file at both revisions, parsed at most once however many detectors look at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

_UNSET = object()


@dataclass
class Versions:
    path: str
    old: bytes | None  # None: the file does not exist at base
    new: bytes | None  # None: the file does not exist at head
    _data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

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
                from reprogate.core.documents import DocumentError, load_text

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
        for which in ("new", "old"):
            try:
                data = self.data(which)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("kind"), str) and str(data.get("apiVersion", "")).startswith("reprogate"):
                return data["kind"]
        return None
