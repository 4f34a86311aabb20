"""Everything a record addresses outside itself, each with where it lives and the digest that names it.

`audit --retiring` asks which of these a retirement takes away, and whether the same digest is
addressed anywhere else. An input is one addressed thing: the image (registry/repository and its
manifest digest), each base image, the dataset manifest when it lives remotely, each shard and
file the manifest lists (at its namespace), and every file reference with a URI (trace,
checkpoint, generator states, remote artifacts). A file the repository holds with the checksum
the record pins is a copy the retirement cannot touch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.canonical import file_digest
from reprogate.core.documents import Document, DocumentError
from reprogate.core.schema_check import schema_diagnostics
from reprogate.core.shapes import table
from reprogate.datasets.manifest_lines import ManifestLineError, ShardLines
from reprogate.datasets.manifests import LineDocument, load_manifest
from reprogate.images.errors import InvalidReference
from reprogate.images.registry import parse_reference


@dataclass(frozen=True)
class Input:
    """One addressed thing: what kind, where it lives (`location`: an image's registry/repository,
    a URI, or an absolute local path), the digest naming its bytes, and which dataset it belongs to."""

    record: str
    field: str
    kind: str  # image, base-image, dataset-manifest, shard, dataset-file, checkpoint, trace, artifact
    location: str
    digest: str | None
    line: int = 1
    dataset: tuple[str, str] | None = None  # (id, version) of the manifest a shard or file is in
    bytes: int | None = None
    in_repository: bool = False  # the repository holds these bytes too (path with a matching checksum)
    snapshots: tuple[str, ...] = ()  # the manifest's streaming.snapshot_id and export_id: names of the same snapshot
    root: str | None = None  # the folder or URI a shard's name is resolved under (its manifest's namespace)


@dataclass(frozen=True)
class Addressed:
    """A record's inputs, and what could not be listed (a manifest that is only remote)."""

    inputs: tuple[Input, ...]
    notes: tuple[str, ...] = ()
    unusable: tuple[str, ...] = ()  # manifests whose shards could not be listed: what they hold is not known (exit 2)


def _kind(where: str) -> str:
    if where.endswith("checkpoint"):
        return "checkpoint"
    if where.endswith("trace"):
        return "trace"
    return "artifact"


Located = tuple[tuple[Any, ...], dict[str, Any]]  # (path in the record, the object there)


def objects_with(data: Any, wanted: Callable[[tuple[Any, ...], dict[str, Any]], bool], path: tuple[Any, ...] = ()) -> Iterator[Located]:
    """Every object in a record (with its path) that `wanted` picks: the one walk both audits use."""
    if isinstance(data, dict):
        if wanted(path, data):
            yield path, data
        for key, value in data.items():
            yield from objects_with(value, wanted, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from objects_with(value, wanted, (*path, i))


def _file_refs(data: Any) -> Iterator[Located]:
    """Every object with a remote `uri` and a `checksum` (fileRef, checkpoint), outside the dataset section."""
    return objects_with(data, lambda path, ref: isinstance(ref.get("uri"), str) and isinstance(ref.get("checksum"), str) and path[:1] != ("dataset",))


def dotted(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path))


def _repository_copy(root: Path, ref: dict[str, Any]) -> bool:
    """The repository holds the bytes the reference pins: a path that is a file with that checksum."""
    rel = ref.get("path")
    if not isinstance(rel, str):
        return False
    target = (root / rel).resolve()
    if root.resolve() not in target.parents or not target.is_file():
        return False
    return file_digest(target) == ref.get("checksum")


def shard_root(namespace: Any, manifest_folder: Path | None) -> str | None:
    """Where a manifest's shard names are resolved, as `dataset verify` resolves them: under its
    namespace (a URI, or a folder relative to the manifest's folder, made absolute), else beside
    the manifest; None when neither is known (an inline manifest without a namespace)."""
    if isinstance(namespace, str) and namespace:
        if "://" in namespace:
            return namespace.rstrip("/")
        if manifest_folder is not None:
            return str((manifest_folder / namespace).resolve())
        return None
    return str(manifest_folder.resolve()) if manifest_folder is not None else None


def shard_location(namespace: Any, name: str, manifest_folder: Path | None) -> str:
    """Where a shard lives: a URL name as it is, else under the manifest's root; '' when the manifest does not say."""
    if "://" in name:
        return name
    root = shard_root(namespace, manifest_folder)
    if root is None:
        return ""
    return root + "/" + name if "://" in root else str(Path(root, name).resolve())


def manifest_inputs(record: str, manifest: dict[str, Any], folder: Path | None, line: int, prefix: str) -> Iterator[Input]:
    """Every shard and file of a manifest as an input of `record`."""
    key = (str(manifest.get("id", "")), str(manifest.get("version", "")))
    namespace = manifest.get("namespace")
    streaming = table(manifest, "streaming")
    snapshots = tuple(str(streaming[k]) for k in ("snapshot_id", "export_id") if isinstance(streaming.get(k), str) and streaming[k])
    root = shard_root(namespace, folder)
    for section, kind in (("shards", "shard"), ("files", "dataset-file")):
        entries = manifest.get(section)
        if entries is None:
            continue
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            size = entry.get("bytes")
            yield Input(
                record,
                f"{prefix}.{section}[{i}]",
                kind,
                shard_location(namespace, _located(entry["name"], f"{prefix}.{section}[{i}]", line), folder),
                entry.get("checksum") if isinstance(entry.get("checksum"), str) else None,
                line,
                key,
                size if isinstance(size, int) and not isinstance(size, bool) else None,
                snapshots=snapshots,
                root=root,
            )


class ManifestUnusable(ValueError):
    """A dataset manifest whose shards cannot be listed as they are (the wrong shape, a NUL in a
    name or its namespace): the message names the file, line and field."""


def checked_manifest(doc: Document) -> dict[str, Any]:
    """A manifest's data once it is of the shape manifest_inputs reads: its schema (the header
    alone for JSON Lines, whose lines are each checked as they are read) and no NUL in its
    namespace or a name, which no path or URI can hold. ManifestUnusable otherwise."""
    data = doc.data
    header = doc
    if isinstance(data, dict) and isinstance(data.get("shards"), ShardLines):
        header = LineDocument(doc.path, {**data, "shards": []}, doc.syntax, text=doc.text)
    problems = schema_diagnostics(header, "DatasetManifest") if isinstance(data, dict) else []
    if not isinstance(data, dict) or data.get("kind") != "DatasetManifest":
        raise ManifestUnusable(f"{doc.path}: not a dataset manifest (kind: DatasetManifest)")
    if problems:
        first = problems[0]
        raise ManifestUnusable(f"{doc.path}:{first.location.line}: {first.field or '-'}: {first.message}")
    if "\0" in data.get("namespace", ""):
        raise ManifestUnusable(f"{doc.path}:{doc.locate(('namespace',)).line}: namespace: holds a NUL character, which no folder or URI can")
    return data


def _located(entry_name: str, where: str, line: int) -> str:
    if "\0" in entry_name:
        raise ManifestUnusable(f"{where}: line {line}: name holds a NUL character, which no path or URI can")
    return entry_name


def record_inputs(name: str, doc: Document, root: Path) -> Addressed:
    """Every input of one record (`name` is how reports call it)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    found: list[Input] = []
    notes: list[str] = []
    container = table(data, "container")
    if container.get("used", True) and isinstance(container.get("registry"), str) and isinstance(container.get("repository"), str):
        if isinstance(container.get("digest"), str):
            where = f"{container['registry']}/{container['repository']}"
            found.append(Input(name, "container.digest", "image", where, container["digest"], doc.locate(("container", "digest")).line))
        for i, base in enumerate(container.get("base_images") or []):
            if not isinstance(base, dict) or not isinstance(base.get("ref"), str) or not isinstance(base.get("digest"), str):
                continue
            try:
                ref = parse_reference(base["ref"])
            except InvalidReference:
                notes.append(f"container.base_images[{i}].ref {base['ref']!r} is no image reference; not listed")
                continue
            line = doc.locate(("container", "base_images", i, "digest")).line
            found.append(Input(name, f"container.base_images[{i}]", "base-image", f"{ref.registry}/{ref.repository}", base["digest"], line))
    unusable: list[str] = []
    found += _dataset_inputs(name, doc, data, root, notes, unusable)
    for path, entry in _file_refs(data):  # a file reference's dict (the `ref` above is a parsed image reference)
        where = dotted(path)
        line = doc.locate((*path, "uri")).line
        found.append(Input(name, where, _kind(where), entry["uri"], entry["checksum"], line, in_repository=_repository_copy(root, entry)))
    return Addressed(tuple(found), tuple(notes), tuple(unusable))


def _dataset_inputs(name: str, doc: Document, data: dict[str, Any], root: Path, notes: list[str], unusable: list[str]) -> list[Input]:
    dataset = table(data, "dataset")
    if isinstance(dataset.get("inline"), dict):
        try:
            return list(manifest_inputs(name, dataset["inline"], None, doc.locate(("dataset", "inline")).line, "dataset.inline"))
        except ManifestUnusable as exc:
            unusable.append(f"dataset.inline cannot be used ({exc}); its shards are not listed")
            return []
    pinned = dataset.get("manifest") if isinstance(dataset.get("manifest"), dict) else None
    if pinned is None:
        return []
    line = doc.locate(("dataset", "manifest")).line
    found: list[Input] = []
    rel = pinned.get("path")
    if isinstance(pinned.get("uri"), str):
        key = (str(pinned.get("id", "")), str(pinned.get("version", "")))
        found.append(Input(name, "dataset.manifest", "dataset-manifest", pinned["uri"], pinned.get("digest"), line, key, in_repository=isinstance(rel, str)))
    if not isinstance(rel, str):
        notes.append(f"dataset.manifest lives only at {pinned.get('uri')}: its shards are not listed (the audit reads manifests in the repository)")
        return found
    path = root / rel
    try:
        loaded = load_manifest(path, rel)
    except (DocumentError, OSError, ValueError) as exc:
        notes.append(f"dataset.manifest {rel}: cannot be read ({exc}); its shards are not listed")
        return found
    try:
        found += list(manifest_inputs(name, checked_manifest(loaded), path.parent, line, f"dataset.manifest({rel})"))
    except (ManifestUnusable, ManifestLineError) as exc:
        unusable.append(f"dataset.manifest {rel}: cannot be used ({exc}); its shards are not listed")
    return found
