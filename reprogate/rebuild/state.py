"""What the rebuild stages share, typed: the job they were given, and one frozen value per stage
that hands something to the later ones.

A `RebuildJob` is fixed before the first stage: the record (and, under --contract-from, the
contract that judges it), the folders, the options, and the realizer and launcher, chosen once.
Each stage that provides something sets one `RebuildState` field to a frozen value (`Fetched`,
`Environment`, `Ranks`, `Probe`, `Machine`, `Runs`), and a field is set exactly once: a stage
cannot overwrite what an earlier one established, and nothing shares state through a bag of
string keys. Each stage names the fields it needs and the one it provides (stages/__init__.py);
a test holds every stage's code to what it declares.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from reprogate.core.canonical import canonical_digest
from reprogate.core.documents import Document
from reprogate.core.levels import Level
from reprogate.core.record import Job, RunRecord, read_draft_job, read_record
from reprogate.rebuild.code_origin import CodeOrigin, own_code
from reprogate.rebuild.judged_by import CONTRACT_SECTIONS
from reprogate.rebuild.launchers.base import Launcher, Shape
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.ranks import RankHosts
from reprogate.rebuild.realizers.base import Choice, Realized
from reprogate.rebuild.seed_plan import SeedPlan, plan, runs_for
from reprogate.runtime.trace import TraceEvent

Event = TraceEvent  # one typed trace event (runtime/trace.py)


def record_digest(data: Mapping[str, Any]) -> str:
    """The digest a verdict binds to: the record without its baseline section (promoting a
    record must not invalidate the verdict that allowed the promotion)."""
    return canonical_digest({k: v for k, v in data.items() if k != "baseline"})


@dataclass(frozen=True)
class RebuildJob:
    """What the rebuild was asked to do, fixed before the first stage."""

    record_path: Path
    doc: Document  # the record whose contract judges (the base's judging sections under --contract-from)
    root: Path
    workdir: Path
    options: RebuildOptions
    realizer: Choice  # which realizer, and why: chosen once, before anything runs
    launcher: Launcher  # chosen once, and asked to admit the shape before anything runs
    head_data: dict[str, Any] | None = None  # the record as checked out, when another revision's contract judges
    judged_note: str = ""  # where the judging contract came from, when not from the record as checked out
    code: CodeOrigin = field(default_factory=own_code)  # whose project tree runs: the base's, the pull request's, or the record's own
    draft: bool = False  # init's draft, whose configuration written as code has no hash yet (core.record.read_draft_job)

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.doc.data  # a run record: check_before_running refused anything but a mapping
        return data

    @property
    def checked_out(self) -> dict[str, Any]:
        """The record as the checkout holds it (what the verdict's digest names), whichever contract judges."""
        return self.head_data if self.head_data is not None else self.data

    @cached_property
    def record(self) -> RunRecord:
        """The judging record's typed sections (core.record), built once."""
        return read_record(self.data)

    @cached_property
    def job_section(self) -> Job:
        """The record's `job` section, typed: the record's own, or for init's draft the one
        `read_draft_job` builds (its configuration's hash may not exist yet). A rebuild's record
        passed the schema (check_before_running), so it always has one."""
        job = read_draft_job(self.data) if self.draft and self.record.job is None else self.record.job
        if job is None:
            raise ValueError("the record's job section does not pass the schema: the record was not schema-checked")
        return job

    @property
    def name(self) -> str | None:
        return self.record.metadata.name if self.record.metadata is not None else None

    @property
    def level(self) -> Level:
        """The contract's level: the schema admits only the closed set, so anything else is a bug."""
        if self.record.contract is None:
            raise ValueError("the record's contract does not pass the schema: the record was not schema-checked")
        return self.record.contract.level

    @property
    def world_size(self) -> int:
        execution = self.record.execution
        return int(self.options.world_size or (execution.world_size if execution is not None else 1) or 1)

    @property
    def nodes(self) -> int:
        execution = self.record.execution
        return (execution.nodes if execution is not None else None) or 1

    @property
    def step_range(self) -> tuple[int, int | None]:
        """(first, last) step compared: the `count` steps after `start` (0 = initialisation, K =
        a resume from checkpoint K), capped by --steps; last None when the contract sets no count."""
        steps = self.record.contract.steps if self.record.contract is not None else None
        start = (steps.start if steps is not None else None) or 0
        count: int | None = steps.count if steps is not None else None
        if self.options.steps is not None:
            count = min(count, self.options.steps) if count else self.options.steps
        return start + 1, (start + count if count else None)

    @property
    def ranks_cwd(self) -> Path:
        """Where the entrypoint starts: job.workdir, else the project folder, in the work folder."""
        workdir = self.job_section.workdir
        project = self.record.source.path if self.record.source is not None else None
        return self.workdir / (workdir or project or ".")

    @cached_property
    def seed_plan(self) -> SeedPlan:
        """Which seeds run, and which the metric is judged on (seed_plan.py): drawn from the digest
        of the judging sections only (contract, seeds, reference: the base's, under
        --contract-from), so the same contract always draws the same fresh seeds and nothing a
        pull request writes (a description, an environment variable) can choose them."""
        if self.options.reference_seeds:
            return SeedPlan(None, self.options.reference_seeds, "reference")
        return plan(self.record, canonical_digest({k: self.data.get(k) for k in CONTRACT_SECTIONS}), runs_for(self.options.seeds, self.record))


@dataclass(frozen=True)
class Fetched:
    """artifacts: what was copied into the empty work folder, and the reference it is compared with."""

    paths: tuple[str, ...]
    reference_events: tuple[Event, ...]  # the reference trace, read and ordered
    runtime: Path  # the injected reprogate runtime
    deferred: Mapping[str, str] = field(default_factory=dict)  # source-tree changes left to the stage that judges them: path -> owner


@dataclass(frozen=True)
class Environment:
    """digest: the environment realized for the ranks, and how it is boxed."""

    choice: Choice
    realized: Realized
    sandbox: str  # how the ranks are sandboxed, in words (the claim repeats a missing one)


@dataclass(frozen=True)
class Probe:
    """preflight: rank 0's account of the environment it runs in (runtime/probe.py)."""

    facts: Mapping[str, Any]

    @property
    def python(self) -> str | None:
        return self.facts.get("python")

    @property
    def os(self) -> str | None:
        return self.facts.get("os")

    @property
    def machine(self) -> str | None:
        return self.facts.get("machine")

    @property
    def packages(self) -> Mapping[str, str]:
        return self.facts.get("packages") or {}

    @property
    def error(self) -> str | None:
        return self.facts.get("error")

    def inside(self) -> dict[str, Any]:
        """What the verdict shows of it: everything, the packages counted."""
        return {**{k: v for k, v in self.facts.items() if k != "packages"}, "packages": len(self.packages)}


@dataclass(frozen=True)
class Ranks:
    """preflight: the ranks, started where the launcher put them, proved and waiting for orders."""

    launcher: Launcher
    shape: Shape
    hosts: RankHosts  # the first set of rank hosts (the run stage starts fresh ones for later seeds)
    backend: str
    gpus: str  # what the device check found, in words
    nodes_used: tuple[str, ...] = ()
    placement: Mapping[int, str] = field(default_factory=dict)  # rank -> node
    spare_port: int | None = None  # a rendezvous port the ranks found free for the first run
    gpu_models: tuple[str, ...] = ()  # as the ranks named their GPUs

    def facts(self) -> dict[str, Any]:
        """The verdict's words for them (its environment section)."""
        return {
            "gpus": self.gpus,
            "backend": self.backend,
            "launcher": self.launcher.name,
            "nodes_used": list(self.nodes_used),
            "placement": dict(self.placement),
            "rank_gpu_models": list(self.gpu_models),
        }


@dataclass(frozen=True)
class Machine:
    """envelope: the machine and environment the ranks got, as the envelope judged them."""

    nodes: int
    world_size: int
    machine: str = field(default_factory=platform.machine)
    python: str | None = None
    os: str | None = None
    torch: str | None = None
    gpu_models: tuple[str, ...] = ()
    driver: str | None = None
    topology: Mapping[str, Any] | None = None
    cpu: Mapping[str, Any] = field(default_factory=dict)  # cpu_capability, mkl_cbwr, cpu_model (rebuild/cpu.py)

    def facts(self) -> dict[str, Any]:
        """The verdict's words for it, in the order the envelope establishes them."""
        found: dict[str, Any] = {"nodes": self.nodes, "machine": self.machine, "python": self.python, "os": self.os}
        if self.torch is not None:
            found["torch"] = self.torch
        found["gpu_models"] = list(self.gpu_models)
        if self.driver is not None:
            found["driver"] = self.driver
        found["world_size"] = self.world_size
        if self.topology is not None:
            found["topology"] = dict(self.topology)
        return {**found, **self.cpu}


@dataclass(frozen=True)
class SeedRun:
    """One seed's run over every rank: its trace and how it ended."""

    seed: int
    events: tuple[Event, ...] = ()
    ok: bool = False
    seconds: float = 0.0
    log_tail: str = ""
    # each rank's trace as the run stage read and judged it, in rank order: the rebuild record keeps
    # these bytes, never the files again (later seeds' ranks can write there); the first seed's only
    traces: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class Runs:
    """run: every seed that ran, in order (when one fails, those before it and itself)."""

    seeds: tuple[SeedRun, ...]

    @property
    def first(self) -> SeedRun | None:
        return self.seeds[0] if self.seeds else None


PROVIDED = ("fetched", "environment", "probe", "ranks", "machine", "runs")


@dataclass
class RebuildState:
    """The job and what the stages established so far; each stage field is set exactly once."""

    job: RebuildJob
    fetched: Fetched | None = None
    environment: Environment | None = None
    probe: Probe | None = None
    ranks: Ranks | None = None
    machine: Machine | None = None
    runs: Runs | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in PROVIDED and getattr(self, name, None) is not None:
            raise AttributeError(f"{name} was already established by an earlier stage; a stage's value is set once")
        super().__setattr__(name, value)

    def on_close(self, close: Callable[[], None]) -> None:
        """Something started (rank hosts, a container) that must end when the rebuild does, even
        if a later stage raises."""
        self._closers.append(close)

    def close(self) -> None:
        """End whatever is still running, the most recently started first."""
        while self._closers:
            self._closers.pop()()

    @property
    def reference_events(self) -> tuple[Event, ...]:
        return self.fetched.reference_events if self.fetched is not None else ()

    @property
    def packages(self) -> Mapping[str, str]:
        return self.probe.packages if self.probe is not None else {}
