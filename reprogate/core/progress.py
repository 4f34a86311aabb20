"""A progress line on stderr for long work: files and bytes done, rate and time left.

Silent when stderr is not a terminal (CI logs, pipes) or when asked to be quiet, so logs never
fill with carriage-return noise. Thread-safe: hashing workers report from several threads.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, label: str, total_files: int | None, total_bytes: int | None, quiet: bool = False, stream: TextIO | None = None) -> None:
        """Totals may be None when the work is streamed and its size unknown until the end."""
        self.stream = stream or sys.stderr
        self.enabled = not quiet and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.label, self.total_files, self.total_bytes = label, total_files, total_bytes
        self.files = self.bytes = 0
        self.start = self.last = time.monotonic()
        self.lock = threading.Lock()

    def advance(self, nbytes: int = 0, files: int = 0) -> None:
        with self.lock:
            self.bytes += nbytes
            self.files += files
            now = time.monotonic()
            if self.enabled and (now - self.last >= 0.1 or self.files == self.total_files):
                self.last = now
                self.stream.write("\r" + self.line(now) + "\033[K")
                self.stream.flush()

    def line(self, now: float | None = None) -> str:
        elapsed = max((now or time.monotonic()) - self.start, 1e-9)
        rate = self.bytes / elapsed
        if self.total_files is None or self.total_bytes is None:
            return f"{self.label}: {self.files:,} files, {_size(self.bytes)} at {_size(rate)}/s"
        left = (self.total_bytes - self.bytes) / rate if rate > 0 else 0.0
        return (
            f"{self.label}: {self.files:,}/{self.total_files:,} files, {_size(self.bytes)}/{_size(self.total_bytes)} at {_size(rate)}/s, {_duration(left)} left"
        )

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + self.line() + "\033[K\n")
            self.stream.flush()
