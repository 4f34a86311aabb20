"""The options of one rebuild, as the command line (or `init`) gives them: frozen, so no stage or
command can change what was asked after the rebuild has started."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RebuildOptions:
    """What `reprogate rebuild` (or `init`, making a reference) asks of a rebuild; fixed once given."""

    workdir: Path | None = None  # must be empty (or absent); default a fresh temporary folder
    steps: int | None = None  # compare at most this many steps
    seeds: int | None = None  # runs (None: the contract's metric.rebuild_seeds, else 1); which seeds: seed_plan.py
    reference_seeds: tuple[int, ...] = ()  # init: run exactly these seeds (the reference being made), no plan
    world_size: int | None = None  # default the record's; checked against the envelope
    image: str | None = None  # run this image instead of the record's (container realizer)
    dataset_root: str | None = None  # read the manifest's shards here instead of at its namespace (a folder or URL holding a copy)
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
