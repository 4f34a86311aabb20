"""What a realizer is: it turns a record (and the checked-out tree) into a place to run ranks.

A rebuild realizes either the environment the record pins (`reference`) or the one the checked-out
tree declares (`candidate`: the pull request's lock file, its Dockerfile built into an image, a
new image reference). The result, a Realized environment, can start processes inside itself and
says what it is through its `identity`: a frozen value of the realizer's own type, asked by the
digest stage, the preflight, the claim, the verdict, the side-by-side and the rebuild record for
what each says of it, so no code outside this package reads a realizer's keys or compares its
name. What a realizer is before it realizes anything (how its ranks are isolated, what the claim
says when realizing failed) is asked of the Realizer itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from reprogate.core.errors import CheckFailed
from reprogate.core.record import RunRecord

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

    record: RunRecord  # the record, typed (the judging record's: under --contract-from its source and pins are the checkout's)
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


EnvironmentCause = Literal["lock-file", "image"]  # what a defect of the realized environment blames (stages.base.Cause, less the runner)


@dataclass(frozen=True)
class Defect:
    """Why a module the ranks cannot import is the pinned environment's defect (exit 1), not the
    runner's: what it blames and what to do, in words."""

    cause: EnvironmentCause
    words: str


@dataclass(frozen=True)
class LockPin:
    """A lock file a realized environment was installed from: its path in the record and the digest of what was installed."""

    path: str
    digest: str


@dataclass(frozen=True)
class Identity(ABC):
    """What a realizer made, as the rest of the rebuild may know it. Each realizer subclasses this
    (frozen, its own typed fields) and overrides what differs; the defaults are those of an
    environment that is no image and installs no lock. Nothing outside this package reads a
    realizer's fields: it asks these methods, so a new realizer changes no stage. `summary` and
    `claim_words` are abstract: an identity that cannot say what it is cannot be made."""

    def rebuilt(self) -> bool:
        """Whether anything was realized: False (the interpreter reprogate runs in) makes the
        digest stage skip, never pass, since nothing was verified."""
        return True

    @abstractmethod
    def summary(self) -> str:
        """The digest stage's detail: what was realized and how it was verified."""

    @abstractmethod
    def claim_words(self, which: str) -> str:
        """The claim's "replayed ... in <this>": the `which` (reference or candidate) environment, in words."""

    def claim_limits(self) -> tuple[str, ...]:
        """What the claim must add to what it does not cover because of this environment."""
        return ()

    def image_words(self) -> str:
        """The side-by-side's rebuilt "image" cell."""
        return "no container"

    def installed_lock(self) -> LockPin | None:
        """The lock file installed, for the side-by-side's "lock file" row (None: none installed)."""
        return None

    def missing_module(self, module: str) -> Defect | None:
        """Whether a rank's missing `module` is this environment's defect (None: the runner's, exit 3)."""
        return None

    def amend_record(self, data: dict[str, Any]) -> None:
        """Write what was realized into `data`, the rebuild record's copy of the checked-out record
        (by default nothing: the record's own pins stand)."""
        return

    def to_json(self) -> dict[str, Any]:
        """The verdict's account of it (merged into `environment`): every field that is set, by its name."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: list(value) if isinstance(value, tuple) else value for name, value in found.items() if value is not None}


class Realized(Protocol):
    """A place to run the entrypoint's ranks."""

    kind: str  # the realizer's NAME (words only: what differs per realizer is asked of `identity`)
    python: str  # the interpreter inside, as a path valid there
    command_environment: tuple[str, ...]  # host variables `command`'s line needs where it starts (an engine CLI's socket and config)

    @property
    def identity(self) -> Identity:
        """What was realized (image id and digests, lock digest, engine ...), as the realizer's own frozen type."""
        ...

    @property
    def image_reference(self) -> str | None:
        """The image a scheduler's node runs (name@digest; one built here by its ID); None: the environment is no image."""
        ...

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


@dataclass(frozen=True)
class Isolation:
    """How a realizer's ranks and build steps are kept from the runner, known before it realizes
    anything (rebuild/sandbox.py decides with it whether to box ranks, and whether to refuse)."""

    local_ranks_sandboxed: bool  # its ranks are local processes, started in the bubblewrap sandbox under the local launcher
    builds_here: bool = False  # realizing runs code on this machine whatever the launcher (a venv's uv steps and sdists' build backends)
    own: str = ""  # what isolates its ranks instead, as the claim says it (a container's namespaces); "" where nothing does


class Realizer(Protocol):
    @property
    def name(self) -> str: ...  # read-only: each realizer's NAME

    @property
    def isolation(self) -> Isolation: ...

    def realize(self, request: RealizeRequest) -> Realized: ...

    def unrealized(self, which: str) -> str:
        """The claim's words for the `which` environment when realizing it failed (no identity)."""
        ...


@dataclass
class Choice:
    """Which realizer a record asks for, and why (the claim repeats the reason)."""

    name: str
    reason: str
    notes: list[str] = field(default_factory=list)
