"""The repository's `.reprogate.yaml`: where records live and how the gate behaves.

Every setting has a default, so a repository with no configuration still works; a configuration
that exists but is broken is an error, never silently replaced by defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, display_path, load_document
from reprogate.core.schema_check import schema_diagnostics

CONFIG_NAME = ".reprogate.yaml"


DEFAULT_STATUS_CONTEXT = "reprogate/reproduction"
DEFAULT_STATUS_CREATOR = "github-actions[bot]"  # who the gate and the status job post as with a workflow's GITHUB_TOKEN


@dataclass(frozen=True)
class Config:
    """Settings with their defaults, read once (load_config: bounded read, schema check) into
    this frozen value; `folder` is where relative globs and paths start."""

    folder: Path
    path: Path | None = None
    records: tuple[str, ...] = ()
    reference: str | None = None
    watch: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    ignore_dependency_groups: tuple[str, ...] = ("docs", "doc", "lint", "test", "tests", "dev", "develop")
    rebuild_label: str = "reprogate/rebuild"
    baseline_label: str = "reprogate/baseline"
    status_context: str = DEFAULT_STATUS_CONTEXT
    baseline_context: str = "reprogate/baseline"
    status_creator: str = DEFAULT_STATUS_CREATOR  # the only creator whose statuses (and whose app's check runs) the gate reads
    rebuild_workflow: str = "reprogate-rebuild.yml"
    rebuild_ref: str | None = None


def repository_root(start: Path) -> Path:
    """The folder repository paths are relative to: the nearest ancestor holding .reprogate.yaml
    or .git, else `start` itself."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG_NAME).is_file() or (folder / ".git").exists():
            return folder
    return start


def find_config(start: Path) -> Path | None:
    """The nearest `.reprogate.yaml` in `start` or above it, stopping at a repository root."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def load_config(start: Path) -> Config:
    """The configuration that governs `start` (a folder: found from there upward; a file: that
    file), always checked against its schema. No file means every default."""
    path = start if start.exists() and not start.is_dir() else find_config(start)  # a FIFO given as --config is read (and refused), not searched above
    if path is None:
        return Config(folder=start.resolve())
    doc = load_document(path, display_path(path))

    problems = schema_diagnostics(doc, "Config")
    if problems:
        raise DocumentError(problems, ExitCode.FAILED)
    return from_data(doc.data, path)


def from_data(data: dict[str, Any], path: Path) -> Config:
    labels, status, rebuild = data.get("labels", {}), data.get("status", {}), data.get("rebuild", {})
    defaults = Config(folder=path.parent)
    return Config(
        folder=path.parent,
        path=path,
        records=tuple(data.get("records", [])),
        reference=data.get("reference"),
        watch=MappingProxyType({k: tuple(v) for k, v in data.get("watch", {}).items()}),
        ignore_dependency_groups=tuple(data.get("ignore_dependency_groups", defaults.ignore_dependency_groups)),
        rebuild_label=labels.get("rebuild", defaults.rebuild_label),
        baseline_label=labels.get("baseline", defaults.baseline_label),
        status_context=status.get("context", defaults.status_context),
        baseline_context=status.get("baseline_context", defaults.baseline_context),
        status_creator=status.get("creator", defaults.status_creator),
        rebuild_workflow=rebuild.get("workflow", defaults.rebuild_workflow),
        rebuild_ref=rebuild.get("ref"),
    )


def with_overrides(config: Config, env: dict[str, str]) -> Config:
    """Settings the composite action passes as inputs (REPROGATE_* variables) win over the file."""

    mapping = {
        "REPROGATE_REBUILD_WORKFLOW": "rebuild_workflow",
        "REPROGATE_STATUS_CONTEXT": "status_context",
        "REPROGATE_STATUS_CREATOR": "status_creator",
        "REPROGATE_REBUILD_LABEL": "rebuild_label",
        "REPROGATE_BASELINE_LABEL": "baseline_label",
    }
    changes: dict[str, Any] = {field: env[name] for name, field in mapping.items() if env.get(name)}
    return dataclasses.replace(config, **changes) if changes else config
