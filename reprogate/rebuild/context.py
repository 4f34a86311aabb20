"""What the rebuild stages share, typed: the record, the folders, the options, and what each
stage hands to the later ones.

Each stage declares the context fields it needs and the ones it provides (stages/__init__.py),
and a test checks that every field a stage needs is provided by an earlier one, so the order of
the runbook cannot silently break a later stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprogate.core.canonical import canonical_digest
from reprogate.core.documents import Document

if TYPE_CHECKING:
    from reprogate.rebuild.launchers.base import Launcher, Shape
    from reprogate.rebuild.ranks import RankHosts
    from reprogate.rebuild.realizers.base import Choice, Realized
    from reprogate.rebuild.seed_plan import SeedPlan


@dataclass
class RebuildOptions:
    workdir: Path | None = None  # must be empty (or absent); default a fresh temporary folder
    steps: int | None = None  # compare at most this many steps
    seeds: int | None = None  # runs (None: the contract's metric.rebuild_seeds, else 1); which seeds: seed_plan.py
    reference_seeds: tuple[int, ...] = ()  # init: run exactly these seeds (the reference being made), no plan
    world_size: int | None = None  # default the record's; checked against the envelope
    image: str | None = None  # run this image instead of the record's (container realizer)
    timeout: float = 900.0  # for the run of each seed
    preflight_timeout: float = 60.0  # per preflight stage
    root: Path | None = None  # repository root; default found from the record
    environment: str = "reference"  # reference (what the record pins) or candidate (the tree)
    realizer: str | None = None  # default chosen from the record
    launcher: str | None = None  # default chosen from the record
    cache: Path | None = None  # realizers' cache (venvs); default ~/.cache/reprogate
    output: Path = Path("reprogate-rebuild")  # verdict, report, rebuild record and its trace (run_binding.fresh_output)
    nonce: str | None = None  # the gate's dispatch nonce, written into the verdict
    allow_unsandboxed: bool = False  # a candidate rebuild may run its ranks without a sandbox (the claim says so)
    allow_source_builds: bool = False  # a candidate venv may build sdists its lock names (inside the build sandbox)
    contract_from: str | None = None  # judge by the record's contract at this revision (the pull request's base)
    dry_run: bool = False  # write what the launcher would submit (Kubernetes manifests) and run nothing


@dataclass
class StageResult:
    status: str = "not-run"  # pass, fail, skipped, not-run
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    name: str = ""  # filled in by the runner
    seconds: float = 0.0
    log_tail: str = ""
    exit_code: int = 1  # when it fails: 1 not reproduced, 2 unusable input, 3 infrastructure


def passed(detail: str, **data: Any) -> StageResult:
    return StageResult("pass", detail, data)


def failed(detail: str, log_tail: str = "", exit_code: int = 1, **data: Any) -> StageResult:
    return StageResult("fail", detail, data, log_tail=log_tail, exit_code=exit_code)


def skipped(detail: str) -> StageResult:
    return StageResult("skipped", detail)


@dataclass
class SeedRun:
    seed: int
    events: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = False
    seconds: float = 0.0
    log_tail: str = ""
    trace_files: list[Path] = field(default_factory=list)


@dataclass
class RebuildContext:
    record_path: Path
    doc: Document
    root: Path
    workdir: Path
    options: RebuildOptions
    # provided by the stages, in order (see stages/__init__.py for who provides what):
    fetched: list[str] = field(default_factory=list)  # artifacts
    reference_events: list[dict[str, Any]] = field(default_factory=list)  # artifacts
    runtime: Path | None = None  # artifacts: the injected reprogate runtime
    choice: Choice | None = None  # digest: which realizer, and why
    realized: Realized | None = None  # digest
    probe: dict[str, Any] = field(default_factory=dict)  # preflight: facts told from inside, by rank 0
    launcher: Launcher | None = None  # preflight
    shape: Shape | None = None  # preflight
    hosts: RankHosts | None = None  # preflight: rank hosts waiting for their orders
    facts: dict[str, Any] = field(default_factory=dict)  # the rebuild machine, for the envelope and claim
    runs: list[SeedRun] = field(default_factory=list)  # run
    tests: list[dict[str, Any]] = field(default_factory=list)  # steps, metric: statistical tests, stated fully
    rebuild_record: dict[str, Any] = field(default_factory=dict)  # written by the runner at the end
    escaped: int = 0  # processes the code under test left running, ended by the runner before any verdict was written
    head_data: dict[str, Any] | None = None  # the record as checked out, when another revision's contract judges (its digest is the verdict's)
    judged_note: str = ""  # where the judging contract came from, when not from the record as checked out

    @property
    def seed_plan(self) -> SeedPlan:
        """Which seeds run, and which the metric is judged on (seed_plan.py): drawn from the digest
        of the judging sections only (contract, seeds, reference: the base's, under
        --contract-from), so the same contract always draws the same fresh seeds and nothing a
        pull request writes (a description, an environment variable) can choose them."""
        from reprogate.rebuild.seed_plan import SeedPlan, plan, runs_for

        if self.options.reference_seeds:
            return SeedPlan(None, self.options.reference_seeds, "reference")
        from reprogate.rebuild.judged_by import JUDGING

        return plan(self.data, canonical_digest({k: self.data.get(k) for k in JUDGING}), runs_for(self.options.seeds, self.data))

    @property
    def checked_out(self) -> dict[str, Any]:
        """The record as the checkout holds it (what the verdict's digest names), whichever contract judges."""
        return self.head_data if self.head_data is not None else self.data

    @property
    def data(self) -> dict[str, Any]:
        return self.doc.data

    def section(self, *path: str) -> Any:
        node: Any = self.data
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    @property
    def level(self) -> str:
        return str(self.section("contract", "level"))

    @property
    def world_size(self) -> int:
        return int(self.options.world_size or self.section("execution", "world_size") or 1)

    @property
    def nodes(self) -> int:
        return int(self.section("execution", "nodes") or 1)

    @property
    def step_range(self) -> tuple[int, int | None]:
        """(first, last) step compared: the `count` steps after `start` (0 = initialisation, K =
        a resume from checkpoint K), capped by --steps; last None when the contract sets no count."""
        start = int(self.section("contract", "steps", "start") or 0)
        count = self.section("contract", "steps", "count")
        if self.options.steps is not None:
            count = min(int(count), self.options.steps) if count else self.options.steps
        return start + 1, (start + int(count) if count else None)

    def close(self) -> None:
        """End whatever is still running: rank hosts, containers."""
        if self.hosts is not None:
            self.hosts.stop()
            self.hosts = None
        if self.realized is not None:
            self.realized.close()
