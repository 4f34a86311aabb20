"""The reference seeds, run exactly as a rebuild will run them.

The drafted record (everything but its reference) is walked through the rebuild's own stages up
to `run`: `artifacts` copies the pinned project folder, configuration, manifest and lock files
into an empty work folder and checks the tree; `digest` realizes the environment the record
names (a venv from the lock file, the image, or the current interpreter); `preflight` starts the
rank hosts through the launcher, rank 0 probing the environment from inside; `dataset` fetches and verifies
the shards; `config` checks the hash; `run` runs every reference seed on the ranks with
REPROGATE_SEED and REPROGATE_TRACE_DIR. Whatever fails here would fail the first rebuild, so it
fails `init` instead, with the same diagnosis.
"""

from __future__ import annotations

import shlex
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import load_document
from reprogate.core.errors import CheckFailed, InfrastructureError, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.progress import Activity
from reprogate.core.yamlout import dump_yaml
from reprogate.rebuild.inject import make_writable
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.runner import job_for
from reprogate.rebuild.stage_names import StageName
from reprogate.rebuild.stages import DOING, STAGES
from reprogate.rebuild.state import RebuildState
from reprogate.runtime.trace import TraceEvent

STAGES_BEFORE_THE_REFERENCE: tuple[StageName, ...] = ("artifacts", "digest", "preflight", "dataset", "config", "run")


@dataclass
class ReferenceRuns:
    """What the reference runs left: each seed's events, and what the environment said of itself."""

    events: dict[int, list[TraceEvent]] = field(default_factory=dict)
    probe: dict[str, Any] = field(default_factory=dict)
    realized: dict[str, Any] = field(default_factory=dict)
    backend: str = "gloo"
    stages: list[str] = field(default_factory=list)  # one line per stage, for the output
    scratch_bytes: int = 0  # what the work folder held once every seed had run: the local scratch a rebuild needs
    seconds: list[float] = field(default_factory=list)  # each seed's wall-clock run time


def folder_bytes(folder: Path) -> int:
    """Bytes of every regular file under `folder` (links not followed, each hard link once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in folder.rglob("*"):
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_size
    return total


def run_reference(draft: dict[str, Any], root: Path, seeds: list[int], timeout: float, cache: Path | None) -> ReferenceRuns:
    scratch = Path(tempfile.mkdtemp(prefix="reprogate-init-"))
    record = scratch / "draft.yaml"
    atomic_write(record, dump_yaml(draft))
    workdir = scratch / "work"
    workdir.mkdir()
    options = RebuildOptions(workdir=workdir, seeds=len(seeds), reference_seeds=tuple(seeds), timeout=timeout, cache=cache, output=scratch / "out")
    runs = ReferenceRuns()
    state: RebuildState | None = None
    try:
        state = RebuildState(job_for(record, load_document(record), root, workdir, options, draft=True))
        for name in STAGES_BEFORE_THE_REFERENCE:
            doing = f"running {len(seeds)} reference seed(s) on every rank" if name == "run" else DOING[name]
            with Activity(f"init: {name}, {doing}"):
                result = STAGES[name].run(state)
            runs.stages.append(f"  {name:<10} {result.status:<8} {result.detail}")
            if result.status == "fail":
                message = f"the reference run could not be made: {name}: {result.detail}"
                if name == "run":  # what ran, and where: the first thing a user re-runs by hand
                    message += f" (each rank ran: {shlex.join(str(a) for a in draft['job']['entrypoint'])} in {state.job.ranks_cwd.relative_to(workdir)})"
                hint = f"log tail:\n{result.log_tail}" if result.log_tail else ""
                error = {ExitCode.USAGE: UsageError, ExitCode.INFRA: InfrastructureError}.get(ExitCode(result.exit_code), CheckFailed)
                raise error(message, hint=hint)
        runs.events = {run.seed: list(run.events) for run in (state.runs.seeds if state.runs else ())}
        runs.seconds = [run.seconds for run in (state.runs.seeds if state.runs else ()) if run.seconds > 0]
        runs.probe = dict(state.probe.facts) if state.probe is not None else {}
        runs.realized = state.environment.realized.identity.to_json() if state.environment is not None else {}
        runs.backend = state.ranks.backend if state.ranks is not None else "gloo"
        runs.scratch_bytes = folder_bytes(workdir)
    finally:
        if state is not None:
            state.close()
        make_writable(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    return runs
