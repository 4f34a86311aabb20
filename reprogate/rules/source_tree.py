"""The project folder a record pins by git tree id must still hold the reference's code.

`source.tree` is a reference artifact: training code changed after the reference ran makes the
record's claim untrue, so the record is invalid at once — in a pull request, before any GPU is
asked for — with the changed paths named. Files inside the folder that another check owns are
left to it: the configuration (its hash), the dataset manifest and its shards (the dataset
checks), and the environment pins a pull request may change (lock files, the build recipe:
drift, rebuilt by the gate).

Cheap where git already knows: in a clean work tree the folder's tree id is git's own
(`rev-parse HEAD:<folder>`); only a folder with changes, or outside git, is hashed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.addressed import AddressError, resolve
from reprogate.rules.base import RuleContext, get

WAY_FORWARD = (
    "a changed reference artifact needs a new reference: re-record it (reprogate init, or capture --into and a new "
    "reference run), then promote it with the baseline label; or undo the change"
)


def source_tree_matches(ctx: RuleContext) -> Iterator[Diagnostic]:
    folder, pinned = get(ctx.data, "source", "path"), get(ctx.data, "source", "tree")
    if not isinstance(folder, str) or not isinstance(pinned, str):
        return
    try:
        real = resolve(ctx, folder, folder=True)
    except AddressError as exc:
        yield ctx.finding(("source", "path"), exc.message, exc.code, exc.hint)
        return
    if ctx.source is not None and real in ctx.source.resolve().parents:
        return  # a record inside the folder it pins changes that tree itself: record-is-rebuildable says so
    key = ("source-tree", real)
    if key not in ctx.cache:
        ctx.cache[key] = current_tree(real)
    found = ctx.cache[key]
    if found == pinned:
        return
    from reprogate.core.gittree import changed_paths, folder_files, recorded_files

    before = recorded_files(ctx.root, pinned)
    if before is None:
        yield ctx.finding(
            ("source", "tree"),
            f"the project folder {folder} has git tree {found[:12]}, the record pins {pinned[:12]}, which this repository does not hold",
            "source-tree-changed",
            "fetch the full history (actions/checkout with fetch-depth: 0) to see what changed; " + WAY_FORWARD,
        )
        return
    owners = owned_paths(ctx.data, ctx.root, folder)
    diff = changed_paths(before, folder_files(real))
    code = {kind: [p for p in paths if p not in owners] for kind, paths in diff.items()}
    if any(code.values()):
        listed = "; ".join(f"{kind}: {', '.join(paths[:6])}{' ...' if len(paths) > 6 else ''}" for kind, paths in code.items() if paths)
        yield ctx.finding(
            ("source", "tree"),
            f"the code in {folder} changed since the reference ({listed}); the record pins tree {pinned[:12]}, the folder has {found[:12]}",
            "reference-artifact-changed",
            WAY_FORWARD,
        )


def current_tree(folder: Path) -> str:
    """The git tree id of the folder as it is: git's own when the work tree is clean there."""
    from reprogate.core.gittree import tree_id

    try:
        status = subprocess.run(
            ["git", "-C", str(folder), "status", "--porcelain", "-z", "--untracked-files=all", "--", "."], capture_output=True, timeout=60, check=False
        )
        if status.returncode == 0 and not status.stdout:
            known = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD:./"], capture_output=True, timeout=30, check=False)
            if known.returncode == 0 and known.stdout.strip():
                return known.stdout.decode().strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return tree_id(folder)


def owned_paths(data: Any, root: Path, folder: str) -> dict[str, str]:
    """Paths inside the project folder (relative to it) that another check judges, with which:
    config, dataset, environment."""
    prefix = folder.rstrip("/") + "/"
    owners: dict[str, str] = {}

    def claim(rel: object, owner: str) -> None:
        if isinstance(rel, str) and rel.startswith(prefix):
            owners[rel[len(prefix) :]] = owner

    claim(get(data, "job", "config", "path"), "config")
    claim(get(data, "dataset", "manifest", "path"), "dataset")
    claim(get(data, "source", "build_recipe", "path"), "environment")
    for item in get(data, "source", "lock_files") or []:
        if isinstance(item, dict):
            claim(item.get("path"), "environment")
    manifest = get(data, "dataset", "manifest", "path")
    if isinstance(manifest, str) and manifest.startswith(prefix):
        from reprogate.core.documents import DocumentError
        from reprogate.datasets.manifests import load_manifest

        try:
            loaded = load_manifest(root / manifest).data
        except (DocumentError, OSError):
            loaded = {}
        if isinstance(loaded, dict):
            base = Path(manifest).parent / str(loaded.get("namespace") or ".")
            for entry in [*(loaded.get("shards") or []), *(loaded.get("files") or [])]:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    claim((base / entry["name"]).as_posix(), "dataset")
    return owners


__all__ = ["WAY_FORWARD", "current_tree", "owned_paths", "source_tree_matches"]
