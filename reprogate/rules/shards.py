"""Dataset shards kept in the repository must still be the bytes the manifest pins.

The manifest's digest pins the manifest, not the data: a pull request that flips a bit of an
in-repo shard and leaves the manifest alone passes every other check, and only the rebuild's
dataset stage would notice, on a GPU. This rule makes it a failing record at once:

- every in-repo shard and side file: present, and of the size the manifest says (one stat each);
- checksums of those a pull request's diff changed (the gate passes the diff), or, where no
  diff is known, of all of them when they add up to at most HASH_BUDGET bytes (a larger dataset
  is hashed by `dataset verify` and the rebuild's dataset stage, not on every `validate`).

Manifests that name a remote namespace, and JSON Lines manifests (streamed, for large datasets),
are left to `dataset verify`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.core.git import ignored_paths
from reprogate.datasets.hashing import AlgorithmUnavailable, hash_file
from reprogate.rules.base import RuleContext
from reprogate.rules.files import AddressError, load_addressed, resolve

HASH_BUDGET = 256 * 1024 * 1024
WAY_FORWARD = "a changed shard is a new dataset: write a new manifest (reprogate dataset manifest) and a new reference, then promote it; or undo the change"


def dataset_shards_match(ctx: RuleContext) -> Iterator[Diagnostic]:
    dataset = ctx.record.dataset
    rel = dataset.manifest.path if dataset is not None and dataset.manifest is not None else None
    if rel is None:
        return
    try:
        manifest_path = resolve(ctx, rel)
        manifest = load_addressed(ctx, manifest_path).data
    except AddressError:
        return  # dataset-manifest-matches reports it
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards"), list):
        return  # a streamed (JSON Lines) manifest, or one of another shape: dataset verify's
    namespace = manifest.get("namespace")
    if isinstance(namespace, str) and "://" in namespace:
        return
    folder = manifest_path.parent / (namespace or ".")
    entries = [e for e in [*manifest.get("shards", []), *(manifest.get("files") or [])] if isinstance(e, dict) and isinstance(e.get("name"), str)]
    present: list[tuple[dict[str, Any], Path]] = []
    for entry in entries:
        path = (folder / entry["name"]).resolve()
        if ctx.root.resolve() not in path.parents:
            continue  # not in the repository: the dataset stage fetches it
        try:
            size = path.stat().st_size
        except OSError:
            yield _missing(ctx, rel, entry["name"], path)
            continue
        if isinstance(entry.get("bytes"), int) and size != entry["bytes"]:
            yield _finding(ctx, rel, entry["name"], f"is {size:,} bytes, the manifest says {entry['bytes']:,}")
            continue
        present.append((entry, path))
    if ctx.changed is not None:
        to_hash = [(e, p) for e, p in present if p in ctx.changed]
    else:
        to_hash = present if sum(p.stat().st_size for _, p in present) <= HASH_BUDGET else []
    for entry, path in to_hash:
        yield from _checksum(ctx, rel, entry, path, str(manifest.get("algorithm") or "sha256"))


def _checksum(ctx: RuleContext, rel: str, entry: dict[str, Any], path: Path, algorithm: str) -> Iterator[Diagnostic]:

    pinned = entry.get("checksum")
    if not isinstance(pinned, str):
        return
    key = ("shard", str(path), path.stat().st_mtime_ns, pinned)
    if key not in ctx.cache:
        try:
            ctx.cache[key] = hash_file(path, pinned.split(":", 1)[0] if ":" in pinned else algorithm)
        except AlgorithmUnavailable:
            ctx.cache[key] = None
    found = ctx.cache[key]
    if found is not None and not found.error and found.checksum != pinned:
        yield _finding(ctx, rel, entry["name"], f"is {found.checksum[:23]}..., the manifest pins {pinned[:23]}...")


def _missing(ctx: RuleContext, rel: str, name: str, path: Path) -> Diagnostic:
    """A missing shard: when a .gitignore rule is why the checkout lacks it, the data did not change."""
    where = path.relative_to(ctx.root.resolve()).as_posix()
    rule = ignored_paths(ctx.root, [where]).get(where)
    if rule is None:
        return _finding(ctx, rel, name, "is missing")
    return ctx.finding(
        ("dataset", "manifest"),
        f"shard {name} of {rel} is missing: it is ignored by .gitignore ({rule}), so it was never committed and a clone does not have it",
        "dataset-shard-ignored",
        f"commit it where the reference was made: git add -f {shlex.quote(where)} (or keep the shards outside git: a manifest namespace)",
    )


def _finding(ctx: RuleContext, rel: str, name: str, what: str) -> Diagnostic:
    return ctx.finding(("dataset", "manifest"), f"shard {name} of {rel} {what}: the data the reference ran on changed", "dataset-shard-changed", WAY_FORWARD)


__all__ = ["HASH_BUDGET", "dataset_shards_match"]
