"""`reprogate dataset manifest`: walk a dataset, hash every shard, write the manifest atomically.

The same bytes always give the same manifest text and digest: shards are sorted by name, no
timestamp is written, and fields a person added to a previous manifest (`--base`) are carried
over, so rebuilding an unchanged dataset changes nothing a record pins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.datasets import manifest_digest
from reprogate.datasets.hashing import hash_files
from reprogate.datasets.names import UnsafeName, local_path
from reprogate.datasets.select import select
from reprogate.core.fileio import atomic_write
from reprogate.core.progress import Progress
from reprogate.core.yamlout import FlowMap, dump_yaml
from reprogate.core.errors import CheckFailed

# Fields a build computes; everything else in a --base manifest is a person's and is kept.
COMPUTED = {"apiVersion", "kind", "algorithm", "selection", "shards", "files", "digest"}
ROLES = ("tokenizer", "vocabulary", "merges", "normalization", "filter", "other")


class BuildError(CheckFailed):
    """The dataset cannot be described safely (links out of the root, unreadable files)."""


@dataclass
class BuildOptions:
    root: Path
    output: Path
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    algorithm: str = "sha256"
    jobs: int | None = None
    quiet: bool = False
    id: str | None = None
    version: str | None = None
    namespace: str | None = None
    side_files: list[tuple[str, str]] = field(default_factory=list)  # (role, name under root)
    base: dict[str, Any] = field(default_factory=dict)


def build_manifest(options: BuildOptions) -> dict[str, Any]:
    """Hash the dataset and return the manifest (not yet written)."""
    root = options.root
    side_names = {name for _, name in options.side_files}
    chosen = select(root, options.include, options.exclude, skip={options.output})
    if chosen.outside:
        shown = ", ".join(chosen.outside[:5]) + (" ..." if len(chosen.outside) > 5 else "")
        raise BuildError(f"{len(chosen.outside)} symlink(s) lead outside the dataset root: {shown}; exclude them or copy the data in")
    shard_names = [n for n in chosen.files if n not in side_names]
    shard_sizes = [s for n, s in zip(chosen.files, chosen.sizes) if n not in side_names]
    side_paths = []
    for role, name in options.side_files:
        if role not in ROLES:
            raise BuildError(f"unknown side-file role {role!r}; choose one of {', '.join(ROLES)}")
        try:
            side_paths.append(local_path(root, name))
        except UnsafeName as exc:
            raise BuildError(str(exc)) from None
        if not side_paths[-1].is_file():
            raise BuildError(f"side file {name!r} does not exist under {root}")
    paths = [root / n for n in shard_names] + side_paths
    sizes = shard_sizes + [p.stat().st_size for p in side_paths]
    progress = Progress("hashing", len(paths), sum(sizes), options.quiet)
    try:
        digests = hash_files(paths, options.algorithm, options.jobs, sizes, progress.advance)
    finally:
        progress.close()
    unreadable = [d for d in digests if d.error]
    if unreadable:
        raise BuildError(f"cannot read {unreadable[0].path}: {unreadable[0].error}")

    manifest: dict[str, Any] = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest"}
    manifest["id"] = options.id or options.base.get("id") or root.resolve().name
    for key, value in options.base.items():
        if key not in COMPUTED and key != "id":
            manifest[key] = value
    if options.version:
        manifest["version"] = options.version
    if options.namespace:
        manifest["namespace"] = options.namespace
    manifest["algorithm"] = options.algorithm
    selection = {k: v for k, v in (("include", options.include), ("exclude", options.exclude)) if v}
    manifest["selection"] = selection
    count = len(shard_names)
    manifest["shards"] = [FlowMap(name=n, bytes=d.size, checksum=d.checksum) for n, d in zip(shard_names, digests[:count])]
    if options.side_files:
        manifest["files"] = [
            FlowMap(role=role, name=name, bytes=d.size, checksum=d.checksum) for (role, name), d in zip(options.side_files, digests[count:])
        ]
    manifest["digest"] = manifest_digest(manifest)
    return manifest


def manifest_json(manifest: dict[str, Any]) -> str:
    """JSON text with one shard per line: loads ~15x faster than YAML for large datasets (libyaml
    builds a node per scalar), and a changed shard is still a one-line diff."""
    lines = []
    for key, value in manifest.items():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            inner = ",\n".join("    " + json.dumps(item, ensure_ascii=False) for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{inner}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_manifest(manifest: dict[str, Any], output: Path, written_by: str = "reprogate dataset manifest") -> None:
    """Write atomically, as JSON when the file name ends in .json, else as YAML."""
    if output.suffix.lower() == ".json":
        atomic_write(output, manifest_json(manifest))
        return
    header = (
        f"Dataset manifest {manifest['id']}, written by `{written_by}`.\n"
        "A record pins this manifest by its digest (the last field): reprogate digest --manifest FILE"
    )
    atomic_write(output, dump_yaml(manifest, header))
