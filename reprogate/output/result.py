"""The one thing every command returns: an exit code, what to print, and what to hand GitHub.

Commands compute; they never print and never write GitHub's files themselves. The command line
(cli/) passes the result to `output.emit`, the only place that writes stdout, stderr and the
workflow files, so `--format github` behaves the same for every command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reprogate.core.diagnostics import ExitCode


@dataclass
class CommandResult:
    code: ExitCode = ExitCode.OK
    stdout: list[str] = field(default_factory=list)  # the result itself: text, JSON or annotations
    stderr: list[str] = field(default_factory=list)  # notes about what was done ("wrote X")
    outputs: dict[str, str] = field(default_factory=dict)  # step outputs ($GITHUB_OUTPUT), github format only
    summary: str = ""  # Markdown for the job's step summary, github format only

    def worst(self, code: ExitCode) -> CommandResult:
        """Raise the exit code to `code` if that is worse (2 beats 3 beats 1 beats 0: a usage
        error makes every other answer meaningless, an unreachable service makes a failure unsure; a
        crash, 4, beats them all)."""
        self.code = worst(self.code, code)
        return self


SEVERITY = {ExitCode.OK: 0, ExitCode.FAILED: 1, ExitCode.INFRA: 2, ExitCode.USAGE: 3, ExitCode.INTERNAL: 4}


def worst(*codes: ExitCode) -> ExitCode:
    return max(codes, key=lambda c: SEVERITY[ExitCode(c)], default=ExitCode.OK)
