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


_switched_off = False  # a command's --quiet or --format github turns every activity line off


def switch_off(off: bool = True) -> None:
    """Called once by a command that was asked for no progress (--quiet, --format github/json)."""
    global _switched_off
    _switched_off = off


def shown(stream: TextIO | None = None) -> bool:
    """Whether progress lines go to `stream` (stderr): only at a terminal, and not switched off."""
    target = stream or sys.stderr
    return not _switched_off and hasattr(target, "isatty") and target.isatty()


class Activity:
    """One line on stderr saying what long work is under way and for how long (`rebuild: run
    (the entrypoint on 2 ranks) 0:41`), redrawn twice a second by a thread and cleared when the
    work ends, so what a command prints afterwards is unchanged. Nested activities show the
    innermost label (the venv build inside the `digest` stage). Nothing at all when not shown()."""

    _lock = threading.Lock()
    _labels: list[tuple[str, float]] = []  # (label, when it began), innermost last
    _thread: threading.Thread | None = None
    _stop = threading.Event()

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = shown(self.stream)

    def __enter__(self) -> Activity:
        if not self.enabled:
            return self
        with Activity._lock:
            self.entry = (self.label, time.monotonic())
            Activity._labels.append(self.entry)
            if Activity._thread is None:
                Activity._stop.clear()
                Activity._thread = threading.Thread(target=self._draw, name="reprogate-progress", daemon=True)
                Activity._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if not self.enabled:
            return
        thread = None
        with Activity._lock:
            if self.entry in Activity._labels:
                Activity._labels.remove(self.entry)
            if not Activity._labels and Activity._thread is not None:
                thread, Activity._thread = Activity._thread, None
                Activity._stop.set()
        if thread is not None:
            thread.join()
            self.stream.write("\r\033[K")
            self.stream.flush()

    def _draw(self) -> None:
        while not Activity._stop.wait(0.5):
            with Activity._lock:
                label, began = Activity._labels[-1] if Activity._labels else ("", time.monotonic())
            try:
                self.stream.write(f"\r{label} {_duration(time.monotonic() - began)}\033[K")
                self.stream.flush()
            except (OSError, ValueError):
                return
