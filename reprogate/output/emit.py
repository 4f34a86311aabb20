"""Print a command's result and, in github format, write its step outputs and summary.

This is the only module that writes stdout, stderr, $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY.
Everything that leaves the process passes the one redactor (core/redact.py). In github format
every printed line also passes `workflow.guard`, so a value taken from a pull request can start no
workflow command; in every format control and bidirectional characters are shown escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

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
