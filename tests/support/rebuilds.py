"""A rebuild job built by hand, for tests that run one stage or one check without the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.documents import Document
from reprogate.rebuild.launchers import local
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.realizers.base import Choice
from reprogate.rebuild.state import RebuildJob, RebuildState


def make_job(record: Path, data: dict[str, Any], root: Path, workdir: Path, options: RebuildOptions | None = None) -> RebuildJob:
    """The job of rebuilding `data` (as if read from `record`) in the current environment, on this machine."""
    return RebuildJob(
        record, Document(str(record), data, "yaml"), root, workdir, options or RebuildOptions(), Choice("current", "a test"), local.LocalLauncher()
    )


def make_state(record: Path, data: dict[str, Any], root: Path, workdir: Path, options: RebuildOptions | None = None) -> RebuildState:
    return RebuildState(make_job(record, data, root, workdir, options))
