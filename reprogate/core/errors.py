"""One error base for everything a command can refuse, with the exit code it maps to.

A command either returns a result (output/result.py) or raises a ReprogateError; the command line
catches it in one place, prints its message (and its findings, when it carries some) and exits
with its code. Subclasses say *which* exit code, so no caller has to decide again:

  UsageError           2  bad usage, or input that cannot be read or parsed
  CheckFailed          1  a readable input broke a rule
  InfrastructureError  3  a registry, API, engine, scheduler or device that could not be reached

Module-specific errors derive from these (an image that does not resolve is a CheckFailed, a
registry that does not answer an InfrastructureError), so `except ReprogateError` is the only
catch a command needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reprogate.core.diagnostics import ExitCode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from reprogate.core.diagnostics import Diagnostic


class ReprogateError(Exception):
    """Base of every refusal; `exit_code` says how the process ends."""

    exit_code: ExitCode = ExitCode.FAILED

    def __init__(self, message: str, *, hint: str = "", exit_code: ExitCode | None = None, diagnostics: Iterable[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.diagnostics: list[Diagnostic] = list(diagnostics)  # file, line and field, where known
        if exit_code is not None:
            self.exit_code = exit_code

    def lines(self) -> list[str]:
        """What the user reads: the message, or one line per finding, then the hint."""
        found = self.diagnostics
        out = [f"{d.path}:{d.location.line}:{d.location.col}: {d.field + ': ' if d.field else ''}{d.message}" for d in found] or [self.message]
        if self.hint:
            out.append(f"hint: {self.hint}")
        return out


class UsageError(ReprogateError):
    """Bad usage, or an input that cannot be read or parsed (exit 2)."""

    exit_code = ExitCode.USAGE


class CheckFailed(ReprogateError):
    """A readable input broke a rule, or a check did not pass (exit 1)."""

    exit_code = ExitCode.FAILED


class InfrastructureError(ReprogateError):
    """Something outside reprogate could not be reached or did not answer in time (exit 3)."""

    exit_code = ExitCode.INFRA
