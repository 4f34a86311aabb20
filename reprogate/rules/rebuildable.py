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
from reprogate.rules.base import RuleContext, get

CODE = "not-rebuildable"


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return folder == path or folder in path.parents


def record_is_rebuildable(ctx: RuleContext) -> Iterator[Diagnostic]:
    def warn(path: tuple[str, ...], message: str, hint: str) -> Diagnostic:
        return ctx.finding(path, f"cannot be rebuilt: {message}", CODE, hint, Severity.WARNING)

    source = get(ctx.data, "source")
    folder, tree = get(source, "path"), get(source, "tree")
    if isinstance(get(source, "commit"), str) and not (isinstance(folder, str) and isinstance(tree, str)):
        yield warn(
            ("source", "commit"),
            "the record pins a commit but no project folder (source.path + source.tree); a rebuild replays a folder pinned by its git tree id",
            "keep the training code in a folder of its own and pin it: `reprogate init FOLDER` "
            "(or `reprogate capture --root FOLDER --into RECORD`) writes source.path and source.tree",
        )
    if isinstance(folder, str) and isinstance(tree, str) and ctx.source is not None and _inside(ctx.source, ctx.root / folder):
        yield warn(
            ("source", "path"),
            f"the record lies inside {folder}, the folder whose tree it pins, so writing the record changes that tree",
            f"keep records outside {folder} (for example records/ at the repository root)",
        )
    trace = get(ctx.data, "reference", "trace")
    if isinstance(trace, dict) and "path" not in trace and isinstance(trace.get("uri"), str):
        yield warn(
            ("reference", "trace"),
            f"the reference trace is only at {trace['uri']}; a rebuild reads reference traces from the repository",
            "commit the trace (JSON Lines, usually small) and pin it by reference.trace.path and checksum",
        )
    checkpoint = get(ctx.data, "state", "checkpoint")
    if isinstance(checkpoint, dict) and "path" not in checkpoint and isinstance(checkpoint.get("uri"), str):
        yield warn(
            ("state", "checkpoint"),
            f"checkpoint {checkpoint.get('id', '')} is only at {checkpoint['uri']}; a rebuild copies checkpoints from the repository",
            "keep the checkpoint a resume starts from in the repository (Git LFS, or a DVC-managed path) and pin state.checkpoint.path",
        )
    dataset = get(ctx.data, "dataset")
    if isinstance(dataset, dict) and dataset.get("used") is not False and not isinstance(get(dataset, "manifest", "path"), str):
        yield warn(
            ("dataset",),
            "the dataset is not addressed by a manifest file in the repository (an inline manifest cannot say where the shards are)",
            "write a manifest beside the data (`reprogate dataset manifest DIR -o DIR.manifest.yaml`) and pin dataset.manifest.path and digest; "
            "or say `dataset: {used: false, reason: ...}`",
        )
    box = get(ctx.data, "container")
    has_container = isinstance(box, dict) and box.get("used") is not False
    if not has_container and not get(source, "lock_files") and not isinstance(get(ctx.data, "job", "environment", "realizer"), str):
        yield warn(
            ("container",),
            "the record names neither a container nor a lock file nor job.environment.realizer, so there is no environment to rebuild",
            "pin a lock file (`uv pip compile --generate-hashes`) in source.lock_files, or a container by digest, or declare job.environment.realizer: current",
        )
