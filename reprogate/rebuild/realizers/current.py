"""The interpreter reprogate itself runs in, used only when the record says so.

A record that declares `job.environment.realizer: current` says its reference ran in the same
Python environment as reprogate (a quick local check, the tiny example). The claim says so in
words: nothing about the environment was rebuilt, so a lock-file change is not exercised here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reprogate.rebuild.realizers.base import Identity, Isolation, RankProcess, RankStart, RealizeRequest
from reprogate.rebuild.realizers.local import LocalProcess, start_local_ranks

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox

NAME = "current"


WORDS = "reprogate's own Python environment"


@dataclass(frozen=True)
class CurrentIdentity(Identity):
    """Nothing was realized: the interpreter reprogate runs in, by its path."""

    python_executable: str
    description: str = "the Python environment reprogate runs in (nothing was rebuilt)"

    def rebuilt(self) -> bool:
        return False

    def summary(self) -> str:
        return "the Python environment reprogate runs in (nothing rebuilt: the record asks for it)"

    def claim_words(self, which: str) -> str:
        return WORDS

    def claim_limits(self) -> tuple[str, ...]:
        return (
            "the environment was not rebuilt: the record asks to run in the Python environment reprogate is installed in "
            "(job.environment.realizer: current), so a lock-file or image change is not exercised",
        )


class CurrentEnvironment:
    kind = NAME
    command_environment: tuple[str, ...] = ()
    image_reference: str | None = None

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self.python = sys.executable
        self.sandbox = sandbox
        self.identity = CurrentIdentity(sys.executable)

    def spawn(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> LocalProcess:
        return LocalProcess(argv, env, cwd, log, self.sandbox)

    def spawn_ranks(self, starts: Sequence[RankStart], cwd: Path) -> dict[int, RankProcess]:
        return start_local_ranks(starts, cwd, self.sandbox)

    def command(self, argv: list[str], env: Mapping[str, str], cwd: Path, inherit: Sequence[str] = ()) -> list[str]:
        return list(argv)

    def close(self) -> None:
        pass


class CurrentRealizer:
    name = NAME
    isolation = Isolation(local_ranks_sandboxed=True)

    def unrealized(self, which: str) -> str:
        return WORDS

    def realize(self, request: RealizeRequest) -> CurrentEnvironment:
        return CurrentEnvironment(request.sandbox)
