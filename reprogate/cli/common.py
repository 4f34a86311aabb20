"""What every command shares: the format option, and the one place results are emitted and
errors caught.

A command function returns a CommandResult or raises a ReprogateError; `finish` prints either
through output/emit.py and exits with the code, so no command decides twice how to fail. Reading
or writing a file can still fail underneath any command (a FIFO, a full disk): those OSErrors
end here too, as exit 2 (the input) or 3 (the machine), never as a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import NoReturn

import click

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import ReprogateError
from reprogate.core.redact import register_environment
from reprogate.output.emit import emit_standard
from reprogate.output.result import CommandResult

FORMATS = click.Choice(["text", "json", "github"])
MACHINE_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EROFS, errno.ENOMEM, errno.EFBIG}


def format_option(default: str = "text", sarif: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """`--format`; `sarif` adds SARIF 2.1.0 (for code scanning) to the commands whose findings have a file and line."""
    if sarif:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice([*FORMATS.choices, "sarif"]),
            default=default,
            show_default=True,
            help="Output format: text for people, json for tools, github for workflow logs, sarif for code scanning (SARIF 2.1.0).",
        )
    return click.option(
        "--format", "fmt", type=FORMATS, default=default, show_default=True, help="Output format: text for people, json for tools, github for workflow logs."
    )


def finish(work: Callable[[], CommandResult], fmt: str = "text", command: str = "") -> NoReturn:
    """Run a command function, print its result (or its refusal) and exit with its code."""
    register_environment(os.environ)  # the runner's own secrets are redacted from every output
    prefix = f"reprogate {command}: " if command else "reprogate: "
    try:
        result = work()
    except ReprogateError as exc:
        lines = exc.lines()
        result = CommandResult(exc.exit_code, stderr=[lines[0] if exc.diagnostics else prefix + lines[0], *lines[1:]])
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        code = ExitCode.INFRA if exc.errno in MACHINE_ERRNOS else ExitCode.USAGE
        result = CommandResult(code, stderr=[f"{prefix}{where}{exc.strerror or exc}"])
    except KeyboardInterrupt:
        click.echo(f"{prefix}interrupted", err=True)
        sys.exit(130)
    try:
        emit_standard(result, fmt)
    except OSError as exc:  # $GITHUB_OUTPUT or the step summary on a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        with contextlib.suppress(AttributeError, OSError):  # stderr closed or gone too: the exit code still tells
            sys.stderr.write(f"{prefix}could not write the results: {where}{exc.strerror or exc}\n")
        sys.exit(int(ExitCode.INFRA if exc.errno in MACHINE_ERRNOS else ExitCode.USAGE))
    sys.exit(int(result.code))
