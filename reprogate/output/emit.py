"""Print a command's result and, in github format, write its step outputs and summary.

This is the only module that writes stdout, stderr, $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY.
Everything that leaves the process passes the one redactor (core/redact.py). In github format
every printed line also passes `workflow.guard`, so a value taken from a pull request can start no
workflow command; in every format control and bidirectional characters are shown escaped.
"""

from __future__ import annotations

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
    the file. A character the stream's encoding cannot carry is written as an escape instead of
    failing the whole report."""

    def __init__(self, stream: TextIO, block: int = 512) -> None:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "") == "strict":
            reconfigure(errors="backslashreplace")
        self.stream, self.block = stream, block
        self.pending: list[str] = []

    def __call__(self, line: str) -> None:
        self.pending.append(line)
        if len(self.pending) >= self.block:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.pending.append("")
            self.stream.write("\n".join(self.pending))
            self.pending.clear()
        self.stream.flush()


def emit_standard(result: CommandResult, fmt: str) -> None:
    """`emit` to this process's stdout and stderr. stderr (few lines: refusals, errors) is
    written line by line and stdout (the findings, any number) in blocks, so in a log that holds
    both the errors still come first, as `emit` writes them."""
    out = LineWriter(sys.stdout)
    emit(result, fmt, out, LineWriter(sys.stderr, block=1))
    out.flush()
