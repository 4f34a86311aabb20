"""Every repository path a run record pins, with the layer a change of it belongs to.

File-name patterns find lock files, Dockerfiles and manifests by their usual names; a record can
pin anything under any name (`pins.lock`, a project folder, in-repo shards, a reference trace).
Reading the record is the only way to watch all of it, so `detect` and the gate both take the
watched set from here: a change to a pinned path is that layer's change, naming the record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from reprogate.core.config import Config
from reprogate.core.documents import DocumentError, load_text
from reprogate.core.globs import glob_to_regex


@dataclass(frozen=True)
class RecordAtRevision:
    path: str  # relative to the repository top
    data: dict[str, Any] | None  # None where the file is missing or unreadable at that revision


@dataclass(frozen=True)
class Pin:
    path: str  # repository-top path of a file or folder
    layer: str  # framework, base-image, dataset, source or records
    field: str  # where the record names it, e.g. source.lock_files[0].path


# The section of the record a path is named in decides its layer; a path named anywhere else
# (a working folder, an extra input) is source.
_LAYER_OF = (
    ("source.lock_files", "framework"),
    ("source.build_recipe", "base-image"),
    ("container", "base-image"),
    ("dataset", "dataset"),
    ("reference", "records"),
)


def layer_of(field: str) -> str:
    return next((layer for start, layer in _LAYER_OF if field == start or field.startswith((start + ".", start + "["))), "source")


def prefixed(prefix: str, rel: str) -> str:
    """A config-relative path as a repository-top path (records and their inputs are written
    relative to the folder that holds .reprogate.yaml); `..` never climbs above the top."""
    joined = PurePosixPath(prefix, rel) if prefix not in ("", ".") else PurePosixPath(rel)
    parts: list[str] = []
    for part in joined.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def record_paths(config: Config, prefix: str, files: list[str]) -> list[str]:
    """Records the configuration names, as repository-top paths: its `reference`, then its
    `records:` globs matched against the files of a revision."""
    found: list[str] = []
    patterns = [glob_to_regex(prefixed(prefix, g)) for g in config.records]
    for path in files:
        if path.endswith((".yaml", ".yml", ".json")) and any(p.match(path) for p in patterns):
            found.append(path)
    if config.reference:  # the reference first: what is said of it leads
        reference = prefixed(prefix, config.reference)
        found = [reference, *(p for p in found if p != reference)]
    return found


def parse_record(path: str, blob: bytes | None) -> RecordAtRevision:
    if blob is None:
        return RecordAtRevision(path, None)
    try:
        data = load_text(blob.decode("utf-8"), path, "json" if path.endswith(".json") else "yaml").data
    except (DocumentError, UnicodeDecodeError):
        return RecordAtRevision(path, None)
    if not isinstance(data, dict) or data.get("kind") != "RunRecord":
        return RecordAtRevision(path, None)
    return RecordAtRevision(path, data)


def _named_paths(node: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{where}.{key}" if where else str(key)
            if key in ("path", "workdir") and isinstance(value, str):
                yield here, value
            else:
                yield from _named_paths(value, here)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _named_paths(value, f"{where}[{index}]")


def pins_of(data: dict[str, Any] | None, prefix: str) -> list[Pin]:
    """The paths a record names (every `path` and `workdir` value), as repository-top paths."""
    if data is None:
        return []
    pins = []
    for field, value in _named_paths(data, ""):
        if value and "\0" not in value:
            pins.append(Pin(prefixed(prefix, value), layer_of(field), field))
    return pins


def shard_pins(manifest: Pin, manifest_data: Any) -> list[Pin]:
    """In-repository shards and side files an in-repository manifest lists (a flipped bit in a
    shard leaves the manifest, and so its digest, unchanged)."""
    if not isinstance(manifest_data, dict):
        return []
    namespace = manifest_data.get("namespace")
    if isinstance(namespace, str) and "://" in namespace:
        return []
    folder = PurePosixPath(manifest.path).parent
    base = prefixed(folder.as_posix(), str(namespace or "."))
    pins = []
    for kind in ("shards", "files"):
        for index, entry in enumerate(manifest_data.get(kind) or []):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and "\0" not in entry["name"]:
                pins.append(Pin(prefixed(base, entry["name"]), "dataset", f"{manifest.field} -> {kind}[{index}]"))
    return pins


__all__ = ["Pin", "RecordAtRevision", "layer_of", "parse_record", "pins_of", "prefixed", "record_paths", "shard_pins"]
