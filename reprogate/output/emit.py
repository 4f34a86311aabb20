"""Print a command's result and, in github format, write its step outputs and summary.

This is the only module that writes stdout, stderr, $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY.
Everything that leaves the process passes the one redactor (core/redact.py). In github format
every printed line also passes `workflow.guard`, so a value taken from a pull request can start no
workflow command; in every format control and bidirectional characters are shown escaped.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from reprogate.core.redact import redact
from reprogate.output import workflow
from reprogate.output.result import CommandResult

Echo = Callable[[str], None]


def physical_lines(entries: Iterable[str]) -> Iterator[str]:
    """Each entry redacted and split into the lines a terminal or log will show. Our own workflow
    commands are one line by construction and keep their marker."""
    for entry in entries:
        if isinstance(entry, workflow.WorkflowCommand):
            yield workflow.WorkflowCommand(redact(entry))
        else:
            yield from redact(entry).split("\n")


def emit(result: CommandResult, fmt: str, out: Echo, err: Echo) -> None:
    if fmt == "github":
        for line in workflow.guard(physical_lines(result.stderr)):
            err(line)
        for line in workflow.guard(physical_lines(result.stdout)):
            out(line)
        workflow.set_outputs({name: redact(value) for name, value in result.outputs.items()})
        if result.summary:
            workflow.append_summary(redact(result.summary))
        return
    for line in physical_lines(result.stderr):
        err(workflow.visible(line))
    for line in physical_lines(result.stdout):
        out(workflow.visible(line))


class LineWriter:
    """Lines to a standard stream, `block` lines to a write: a report of 30,000 findings is not
    30,000 writes, even where PYTHONUNBUFFERED (set by many CI runners) makes every write reach
    the file.

    What a stream cannot take does not end the command: a character its encoding cannot carry is
    written as an escape; a closed stream (`>&-`) takes nothing; a reader that left (`| head`)
    is taken at its word, the rest of that stream is dropped, and the command goes on (its step
    outputs, its summary, its exit code are still its own). A stream left non-blocking by
    whoever started us (a pipe a runner shares) is waited on when full, as a blocking one would
    be, instead of losing what did not fit."""

    def __init__(self, stream: TextIO | None, block: int = 512) -> None:
        self.stream, self.block = stream, block
        self.pending: list[str] = []
        if stream is not None and getattr(stream, "errors", "backslashreplace") != "backslashreplace":
            reconfigure = getattr(stream, "reconfigure", None)  # a TextIOWrapper's; a StringIO has none
            with contextlib.suppress(ValueError, OSError):
                if callable(reconfigure):
                    reconfigure(errors="backslashreplace")

    def __call__(self, line: str) -> None:
        if self.stream is None:
            return
        self.pending.append(line)
        if len(self.pending) >= self.block:
            self.flush()

    def flush(self) -> None:
        if self.stream is None:
            return
        try:
            if self.pending:
                self.pending.append("")
                self._write("\n".join(self.pending))
            self._wait_for(self.stream.flush)
        except BrokenPipeError:
            self._reader_left()
        finally:
            self.pending.clear()

    def _write(self, text: str) -> None:
        stream = self.stream
        assert stream is not None
        try:
            fd = stream.fileno()
            blocking = os.get_blocking(fd)
        except (AttributeError, ValueError, OSError):  # not a file (a test's StringIO), or one without a descriptor
            blocking = True
        if blocking:
            stream.write(text)
            return
        self._wait_for(stream.flush)
        data = memoryview(text.encode(stream.encoding or "utf-8", errors="backslashreplace"))
        while data:
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                select.select([], [fd], [])

    def _wait_for(self, step: Callable[[], object]) -> None:
        """Run `step` (a flush) until a full non-blocking stream has taken it all."""
        while True:
            try:
                step()
                return
            except BlockingIOError:
                if self.stream is None:  # the reader left meanwhile: nothing to wait for
                    return
                with contextlib.suppress(AttributeError, ValueError, OSError):
                    select.select([], [self.stream.fileno()], [])

    def _reader_left(self) -> None:
        """Drop the rest; what the stream still buffers goes to /dev/null, so the interpreter's
        own flush at exit finds no broken pipe to complain about."""
        stream, self.stream = self.stream, None
        if stream is None:
            return
        with contextlib.suppress(AttributeError, ValueError, OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)


def emit_standard(result: CommandResult, fmt: str) -> None:
    """`emit` to this process's stdout and stderr. stderr (few lines: refusals, errors) is
    written line by line and stdout (the findings, any number) in blocks, so in a log that holds
    both the errors still come first, as `emit` writes them. The lines printed before a failure
    to write $GITHUB_OUTPUT or the summary still reach the log."""
    out = LineWriter(sys.stdout)
    try:
        emit(result, fmt, out, LineWriter(sys.stderr, block=1))
    finally:
        out.flush()
