"""A valid record may still be one no rebuild can replay; say so, and why, at review time.

Each cause here ends a rebuild before any training step, long after the pull request that made
the record merged: a commit pinned without the project folder's tree (the rebuild replays a
folder by tree id), a record kept inside the folder whose tree it pins (writing the record
changes the tree it pins), a reference trace or checkpoint that exists only at a remote URI (the
rebuild reads them from the repository), a dataset not addressed by a manifest file, and no
environment to realize (no container, no lock file, no declared realizer). They are warnings:
the record is still a true statement about its run (`validate --strict` makes them fail).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.rules.base import RuleContext

CODE = "not-rebuildable"


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return folder == path or folder in path.parents


def record_is_rebuildable(ctx: RuleContext) -> Iterator[Diagnostic]:
    def warn(path: tuple[str, ...], message: str, hint: str) -> Diagnostic:
        return ctx.finding(path, f"cannot be rebuilt: {message}", CODE, hint, Severity.WARNING)

    record = ctx.record
    source = record.source
    folder, tree = (source.path, source.tree) if source is not None else (None, None)
    if source is not None and source.commit is not None and not (folder is not None and tree is not None):
        yield warn(
            ("source", "commit"),
            "the record pins a commit but no project folder (source.path + source.tree); a rebuild replays a folder pinned by its git tree id",
            "keep the training code in a folder of its own and pin it: `reprogate init FOLDER` "
            "(or `reprogate capture --root FOLDER --into RECORD`) writes source.path and source.tree",
        )
    if folder is not None and tree is not None and ctx.source is not None and _inside(ctx.source, ctx.root / folder):
        yield warn(
            ("source", "path"),
            f"the record lies inside {folder}, the folder whose tree it pins, so writing the record changes that tree",
            f"keep records outside {folder} (for example records/ at the repository root)",
        )
    trace = record.reference.trace if record.reference is not None else None
    if trace is not None and trace.path is None and trace.uri is not None:
        yield warn(
            ("reference", "trace"),
            f"the reference trace is only at {trace.uri}; a rebuild reads reference traces from the repository",
            "commit the trace (JSON Lines, usually small) and pin it by reference.trace.path and checksum",
        )
    checkpoint = record.state.checkpoint if record.state is not None else None
    if checkpoint is not None and checkpoint.path is None and checkpoint.uri is not None:
        yield warn(
            ("state", "checkpoint"),
            f"checkpoint {checkpoint.id or ''} is only at {checkpoint.uri}; a rebuild copies checkpoints from the repository",
            "keep the checkpoint a resume starts from in the repository (Git LFS, or a DVC-managed path) and pin state.checkpoint.path",
        )
    dataset = record.dataset
    if dataset is not None and dataset.used and (dataset.manifest is None or dataset.manifest.path is None):
        yield warn(
            ("dataset",),
            "the dataset is not addressed by a manifest file in the repository (an inline manifest cannot say where the shards are)",
            "write a manifest beside the data (`reprogate dataset manifest DIR -o DIR.manifest.yaml`) and pin dataset.manifest.path and digest; "
            "or say `dataset: {used: false, reason: ...}`",
        )
    has_container = record.container is not None and record.container.used
    declared = record.job is not None and record.job.environment is not None
    if not has_container and not (source is not None and source.lock_files) and not declared:
        yield warn(
            ("container",),
            "the record names neither a container nor a lock file nor job.environment.realizer, so there is no environment to rebuild",
            "pin a lock file (`uv pip compile --generate-hashes`) in source.lock_files, or a container by digest, or declare job.environment.realizer: current",
        )
