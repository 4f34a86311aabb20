"""A record's `execution.env` may not hold a variable that runs code in a program other than
the code under test (the sandbox launcher, sbatch, a shell): the list and why are in
core/hijack.py, so validate and the rebuild refuse the same names."""

from __future__ import annotations

from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.core.hijack import hijacks
from reprogate.rules.base import RuleContext

_HINT = (
    "remove it from execution.env; a loader, shell or interpreter start-up variable would run a file in the programs that start the ranks "
    "(bwrap, sbatch, srun) with the runner's rights; a training script that needs one sets it for its own child processes"
)


def rank_environment_is_inert(ctx: RuleContext) -> Iterator[Diagnostic]:
    env = ctx.record.execution.env if ctx.record.execution is not None else None
    for name in env or ():
        if hijacks(name):
            yield ctx.finding(
                ("execution", "env", name),
                f"environment variable {name} makes the programs that start the ranks load or run a file; a record may not set it",
                "hijacking-variable",
                _HINT,
            )
