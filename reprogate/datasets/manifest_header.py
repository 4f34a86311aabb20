"""A dataset manifest's header as one frozen typed value, built once after its schema check.

The header is every field but `shards`: what the dataset is (id, version, description), where its
shards live (namespace), how they are hashed (algorithm), the side files, the selection globs,
the retention and the provenance sections. Readers that want these take a `ManifestHeader`
(read_manifest) instead of reading the loaded mapping by string keys. The shards stay where the
loader put them: a list for YAML and JSON, read a line at a time for JSON Lines (ShardLines), so
a manifest of a million shards is never held whole to be typed. The digest still covers the
document as written (datasets.manifest_digest over `Checked.doc.data`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from reprogate.core.diagnostics import Diagnostic, ExitCode
from reprogate.core.documents import DEFAULT_MAX_BYTES, Document, DocumentError
from reprogate.core.frozen import frozen_mapping, thaw
from reprogate.core.schema_check import schema_diagnostics
from reprogate.datasets.manifest_lines import ShardLines
from reprogate.datasets.manifests import LineDocument, load_manifest
from reprogate.datasets.shard_checker import shard_checker

Algorithm = Literal["sha256", "blake3", "md5"]
FileRole = Literal["tokenizer", "vocabulary", "merges", "normalization", "filter", "other"]
# the sections a reader takes as written (the digest pins them; nothing here interprets them)
SECTIONS = ("filtering", "split", "sampling_weights", "preprocessing", "streaming", "source")


@dataclass(frozen=True)
class SideFile:
    """A file that shapes the data (a tokenizer, a vocabulary), by its role."""

    role: FileRole
    name: str
    checksum: str
    bytes: int | None = None


@dataclass(frozen=True)
class Retention:
    """How long the addressed bytes are kept (expires: an ISO date)."""

    policy: str | None = None
    expires: str | None = None


@dataclass(frozen=True)
class ManifestHeader:
    """Every field of a schema-checked manifest but its shards."""

    id: str
    algorithm: Algorithm
    api_version: str | None = None
    kind: str | None = None
    version: str | None = None
    description: str | None = None
    namespace: str | None = None  # None: the manifest's own folder
    created: str | None = None
    digest: str | None = None  # the manifest's own canonical-v1 digest, when it carries one
    include: tuple[str, ...] = ()  # selection.include
    exclude: tuple[str, ...] = ()  # selection.exclude
    selection: bool = False  # the manifest states its selection (even an empty one): verify then reports extra files
    files: tuple[SideFile, ...] = ()
    retention: Retention | None = None
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # SECTIONS present, read-only

    @staticmethod
    def of(data: Mapping[str, Any]) -> ManifestHeader:
        """The header of manifest data that passed the DatasetManifest schema (which is what makes
        these reads total: the required fields are there, each of its type)."""
        selection = data.get("selection") or {}
        retention = data.get("retention")
        return ManifestHeader(
            data["id"],
            data["algorithm"],
            data.get("apiVersion"),
            data.get("kind"),
            data.get("version"),
            data.get("description"),
            data.get("namespace"),
            data.get("created"),
            data.get("digest"),
            tuple(selection.get("include") or ()),
            tuple(selection.get("exclude") or ()),
            "selection" in data,
            tuple(SideFile(f["role"], f["name"], f["checksum"], f.get("bytes")) for f in data.get("files") or ()),
            Retention(retention.get("policy"), retention.get("expires")) if isinstance(retention, Mapping) else None,
            frozen_mapping({name: data[name] for name in SECTIONS if name in data}),
        )

    def to_json(self) -> dict[str, Any]:
        """The header as the manifest wrote it (every field but `shards`)."""
        found: dict[str, Any] = {"apiVersion": self.api_version, "kind": self.kind, "id": self.id, "version": self.version}
        found |= {"description": self.description, "namespace": self.namespace, "algorithm": self.algorithm, "created": self.created}
        found["digest"] = self.digest
        selection = {"include": list(self.include)} if self.include else {}
        found["selection"] = {**selection, **({"exclude": list(self.exclude)} if self.exclude else {})} if self.selection else None
        found["files"] = [
            {"role": f.role, "name": f.name, **({"bytes": f.bytes} if f.bytes is not None else {}), "checksum": f.checksum} for f in self.files
        ] or None
        if self.retention is not None:
            found["retention"] = {k: v for k, v in (("policy", self.retention.policy), ("expires", self.retention.expires)) if v is not None}
        return {**{k: v for k, v in found.items() if v is not None}, **thaw(self.sections)}


@dataclass(frozen=True)
class Shard:
    """One shard as a reader of names and sizes needs it (the rest stays in the line)."""

    name: str
    bytes: int


@dataclass(frozen=True)
class Checked:
    """A loaded manifest whose header passed the schema: the typed header, and the document (its
    data is what the digest covers, its shards are read as they are iterated)."""

    header: ManifestHeader
    doc: Document

    def shards(self) -> Iterator[Shard]:
        """The shards, one at a time. A YAML or JSON manifest's passed the schema with its header;
        a JSON Lines manifest's are read and checked line by line (nothing is held), and a line
        that is not a shard is a DocumentError (exit 1) naming it."""
        raw = self.doc.data.get("shards") or ()
        if not isinstance(raw, ShardLines):
            for shard in raw:
                yield Shard(shard["name"], shard["bytes"])
            return
        checker = shard_checker()
        for index, (line, text, shard) in enumerate(raw.numbered()):
            if not checker.valid(shard):
                raise DocumentError(checker.explain(raw.display, index, line, text, shard), ExitCode.FAILED)
            yield Shard(shard["name"], shard["bytes"])

    @property
    def streamed(self) -> bool:
        return isinstance(self.doc.data.get("shards"), ShardLines)


def header_document(doc: Document) -> Document:
    """What the schema checks of a manifest at load: all of a YAML or JSON one; a JSON Lines one's
    header (its shard lines are each checked as they are read)."""
    data = doc.data
    if isinstance(data, dict) and isinstance(data.get("shards"), ShardLines):
        return LineDocument(doc.path, {**data, "shards": []}, doc.syntax, text=doc.text)
    return doc


def checked(doc: Document) -> Checked:
    """`doc` with its typed header, once it is a DatasetManifest and its header passes the schema;
    else a DocumentError (exit 1) with the findings (their lines and fields)."""
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "DatasetManifest":
        kind = Diagnostic(doc.path, "not a dataset manifest (kind: DatasetManifest)", "not-a-manifest", location=doc.locate(("kind",)))
        raise DocumentError([kind], ExitCode.FAILED)
    problems = schema_diagnostics(header_document(doc), "DatasetManifest")
    if problems:
        raise DocumentError(problems, ExitCode.FAILED)
    return Checked(ManifestHeader.of(doc.data), doc)


def read_manifest(path: Path, display: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Checked:
    """Load a manifest in any form (manifests.load_manifest) and check its header once."""
    return checked(load_manifest(path, display, max_bytes))
