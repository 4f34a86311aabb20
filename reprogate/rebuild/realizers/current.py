"""The interpreter reprogate itself runs in, used only when the record says so.

A record that declares `job.environment.realizer: current` says its reference ran in the same
Python environment as reprogate (a quick local check, the tiny example). The claim says so in
words: nothing about the environment was rebuilt, so a lock-file change is not exercised here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprogate.rebuild.realizers.base import RankProcess, RankStart, RealizeRequest
from reprogate.rebuild.realizers.local import LocalProcess, start_local_ranks

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox

NAME = "current"


class CurrentEnvironment:
    kind = NAME
    command_environment: tuple[str, ...] = ()

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self.python = sys.executable
        self.sandbox = sandbox
        self.facts: dict[str, Any] = {
            "realizer": NAME,
            "python_executable": sys.executable,
            "description": "the Python environment reprogate runs in (nothing was rebuilt)",
        }

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

    def realize(self, request: RealizeRequest) -> CurrentEnvironment:
        return CurrentEnvironment(request.sandbox)
