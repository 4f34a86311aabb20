"""What the rebuild stages share: the record, the folders, the options, and what earlier stages found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.documents import Document


@dataclass
class RebuildOptions:
    workdir: Path | None = None  # must be empty (or absent); default a fresh temporary folder
    steps: int | None = None  # compare at most this many steps
    seeds: int = 1  # rebuild seeds; 1 = prediction interval, >= 2 = Welch TOST
    world_size: int | None = None  # default the record's; checked against the envelope
    image: str | None = None  # the image this rebuild runs in, REF@sha256:...
    timeout: float = 900.0  # for the run of each seed
    preflight_timeout: float = 60.0
    root: Path | None = None  # repository root; default found from the record


@dataclass
class StageResult:
    name: str
    status: str = "not-run"  # pass, fail, skipped, not-run
    detail: str = ""
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class SeedRun:
    seed: int
    events: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = False
    seconds: float = 0.0
    log_tail: str = ""


@dataclass
class RebuildContext:
    record_path: Path
    doc: Document
    root: Path
    workdir: Path
    options: RebuildOptions
    facts: dict[str, Any] = field(default_factory=dict)  # the rebuild machine, for the envelope and claim
    runs: list[SeedRun] = field(default_factory=list)
    reference_events: list[dict[str, Any]] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)  # statistical tests, stated fully

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
    def step_range(self) -> tuple[int, int | None]:
        """(first, last) step compared: the `count` steps after `start` (0 = initialisation, K =
        a resume from checkpoint K), capped by --steps; last None when the contract sets no count."""
        start = int(self.section("contract", "steps", "start") or 0)
        count = self.section("contract", "steps", "count")
        if self.options.steps is not None:
            count = min(int(count), self.options.steps) if count else self.options.steps
        return start + 1, (start + int(count) if count else None)
