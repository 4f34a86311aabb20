"""What a realizer is: it turns a record (and the checked-out tree) into a place to run ranks.

A rebuild realizes either the environment the record pins (`reference`) or the one the checked-out
tree declares (`candidate`: the pull request's lock file, its Dockerfile built into an image, a
new image reference). The result, a Realized environment, can start processes inside itself and
says what it is (facts for the envelope, the claim and the rebuild record).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reprogate.core.errors import CheckFailed

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox

ENVIRONMENTS = ("reference", "candidate")


class RealizeFailed(CheckFailed):
    """The environment could not be built or fetched (a build error, a missing image); the
    digest stage fails with this message and, where there is one, a log tail."""

    def __init__(self, message: str, log_tail: str = "", hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.log_tail = log_tail


@dataclass
class RealizeRequest:
    """What a realizer gets: the record, where the repository is, and which environment."""

    data: dict[str, Any]  # the record
    root: Path  # the checked-out repository
    workdir: Path  # the rebuild's empty work folder (shared with the ranks)
    environment: str  # reference or candidate
    cache: Path  # where realizers keep what they may reuse (venvs by lock digest)
    runtime: Path  # the injected reprogate runtime (mounted read-only where the realizer can)
    image: str | None = None  # --image: run this image instead of the record's
    sandbox: Sandbox | None = None  # local ranks (venv, current) start inside it; None: unsandboxed (the claim says so)
    source_builds: bool = False  # a candidate venv may build sdists (the workflow's --allow-source-builds); never the record's say
    masked: tuple[Path, ...] = ()  # the reference's expected outputs: never shown to code under test, even where a shown folder holds them
    # the lock, recipe and image are the base's (or the record's own, with no base): False when the
    # head's record pins others, whose sdists' build backends are the pull request's code
    pins_reviewed: bool = True


@dataclass(frozen=True)
class RankStart:
    """One rank to start: its command line and exact environment, and the log its output goes to."""

    rank: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    log: Path


class RankProcess(Protocol):
    """One started rank: enough to wait for it and to end it."""

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...


class Realized(Protocol):
    """A place to run the entrypoint's ranks."""

    kind: str  # container, venv or current
    python: str  # the interpreter inside, as a path valid there
    facts: dict[str, Any]  # identity: image id and digests, lock digest, python, engine ...
    command_environment: tuple[str, ...]  # host variables `command`'s line needs where it starts (an engine CLI's socket and config)

    def spawn(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> RankProcess:
        """Start argv inside the environment with exactly `env`, output to `log`."""
        ...

    def spawn_ranks(self, starts: Sequence[RankStart], cwd: Path) -> dict[int, RankProcess]:
        """Start every rank of one node (the local launcher's) inside the environment: in one
        sandbox where the realizer has one, so the ranks share its loopback network."""
        ...

    def command(self, argv: list[str], env: Mapping[str, str], cwd: Path, inherit: Sequence[str] = ()) -> list[str]:
        """argv as a command line a scheduler can run on a node that shares the work folder.

        The scheduler starts the line in `cwd` with `env` plus the variables named in `inherit`,
        which the node sets per task (RANK from SLURM_PROCID...); what the environment adds on
        top of that (a venv's PATH, a container's -e/-w/mounts) the line carries itself."""
        ...

    def close(self) -> None: ...


class Realizer(Protocol):
    @property
    def name(self) -> str: ...  # read-only: each realizer's NAME

    def realize(self, request: RealizeRequest) -> Realized: ...


@dataclass
class Choice:
    """Which realizer a record asks for, and why (the claim repeats the reason)."""

    name: str
    reason: str
    notes: list[str] = field(default_factory=list)
