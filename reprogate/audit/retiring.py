"""`reprogate audit --retiring TARGET`: which records lose an input if TARGET goes away.

The runbook says to review records "before retiring a registry or dataset snapshot". TARGET is
what a platform team means to delete: a registry host (`ghcr.io`, `registry:5000`), a namespace
or image repository in it (`ghcr.io/example-org`, `ghcr.io/example-org/decoder-train`), a URI
prefix (`s3://example-datasets/d77/`, `https://artifacts.example.com/traces`), a local folder,
or a dataset snapshot (`D-77`, `D-77@3`: a manifest id, and version).

An input under TARGET is kept when another copy is addressed by the same digest — content
addressing means equal digests are equal bytes, wherever they live: another record (or a
dataset manifest in the repository) addresses that digest somewhere TARGET does not cover, the
repository itself holds the file with that checksum, or a registry named with `--mirror` serves
the image's manifest digest (asked through the registry client, never assumed). Anything else is
lost, and the audit fails (exit 1), naming the record, the field and the digest.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from reprogate.audit.addressed import Input, manifest_inputs, record_inputs
from reprogate.core.config import repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.datasets.manifests import load_manifest
from reprogate.images.registry import ImageError, Reference, RegistryClient, RegistryUnreachable

IMAGE_KINDS = ("image", "base-image")
DATASET_KINDS = ("dataset-manifest", "shard", "dataset-file")


def _under(prefix: str, location: str) -> bool:
    """`location` is `prefix` or lies below it, on a path boundary (`s3://b/d7` does not cover `s3://b/d77/x`)."""
    if not location:
        return False
    if location == prefix or location == prefix.rstrip("/"):
        return True
    return location.startswith(prefix if prefix.endswith("/") else prefix + "/")


@dataclass(frozen=True)
class Target:
    """What is being retired, read the one way its text allows."""

    text: str

    @property
    def uri(self) -> bool:
        return "://" in self.text and not self.text.startswith("docker://")

    @property
    def folder(self) -> str | None:
        """A local folder: an absolute path, or one starting with ./ or ../ (as people write them)."""
        if self.text.startswith(("/", "./", "../")):
            return str(Path(self.text).resolve())
        return None

    def covers(self, item: Input) -> bool:
        if self.uri:
            return item.kind not in IMAGE_KINDS and _under(self.text, item.location)
        if self.folder is not None:
            return item.kind not in IMAGE_KINDS and item.location.startswith("/") and _under(self.folder, item.location)
        name = self.text.removeprefix("docker://")
        if item.kind in IMAGE_KINDS:
            return _under(name, item.location)
        if item.dataset is not None and item.kind in DATASET_KINDS:
            dataset_id, version = item.dataset
            return name in (dataset_id, f"{dataset_id}@{version}")
        return False


@dataclass(frozen=True)
class Retired:
    """One input under the target, and every other place its digest is addressed."""

    input: Input
    copies: tuple[str, ...]

    @property
    def lost(self) -> bool:
        return not self.copies


@dataclass
class RetiringReport:
    target: str
    records: list[str] = field(default_factory=list)  # every record looked at
    retired: list[Retired] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)  # mirrors that did not answer

    def covers(self, image_location: str) -> bool:
        return Target(self.target).covers(Input("", "", "image", image_location, None))

    @property
    def lost(self) -> list[Retired]:
        return [r for r in self.retired if r.lost]

    @property
    def code(self) -> ExitCode:
        if self.lost:
            return ExitCode.FAILED
        return ExitCode.INFRA if self.unreachable else ExitCode.OK


def _mirror_reference(mirror: str, repository: str) -> Reference:
    """A mirror is HOST or HOST/PREFIX; the image keeps its repository path below it."""
    host, _, prefix = mirror.partition("/")
    return Reference(host, f"{prefix.strip('/')}/{repository}" if prefix.strip("/") else repository)


def _repository_of(location: str) -> str:
    return location.split("/", 1)[1] if "/" in location else location


def retiring(records: list[Path], manifests: list[Path], target: Target, mirrors: list[str], client: RegistryClient | None = None) -> RetiringReport:
    """Every input of `records` under `target`, each with its other copies (records, manifests
    in the repository, the repository's own files, `mirrors`)."""
    report = RetiringReport(target.text)
    every: list[Input] = []  # what records address: reported when under the target
    besides: list[Input] = []  # what manifests in the repository list: only ever another copy
    for record in records:
        name = record.as_posix()
        report.records.append(name)
        try:
            doc = load_document(record)
        except DocumentError as exc:
            report.notes.append(f"{name}: {exc.diagnostics[0].message} (not audited)")
            continue
        found = record_inputs(name, doc, repository_root(record.parent))
        every += found.inputs
        report.notes += [f"{name}: {note}" for note in found.notes]
    for path in manifests:  # a manifest in the repository says where else the same shards live
        try:
            data = load_manifest(path, path.as_posix()).data
        except (DocumentError, OSError):
            continue
        if isinstance(data, dict):
            besides += manifest_inputs(path.as_posix(), data, path.parent, 1, "manifest")
    elsewhere: dict[str, set[str]] = defaultdict(set)
    for item in (*every, *besides):
        if item.digest and not target.covers(item):
            elsewhere[item.digest].add(f"{item.location} ({item.record}: {item.field})" if item.location else f"{item.record}: {item.field}")
    client = client or RegistryClient()
    asked: dict[tuple[str, str, str], bool] = {}
    for item in every:
        if not target.covers(item):
            continue
        copies = sorted(elsewhere.get(item.digest or "", ()))
        if item.in_repository:
            copies.insert(0, "the repository (the path the record names holds the same checksum)")
        if item.kind in IMAGE_KINDS and item.digest:
            copies += _on_mirrors(item, mirrors, client, asked, report)
        report.retired.append(Retired(item, tuple(copies)))
    return report


def _on_mirrors(item: Input, mirrors: list[str], client: RegistryClient, asked: dict[tuple[str, str, str], bool], report: RetiringReport) -> list[str]:
    """The mirrors that serve this image's manifest digest, each asked once per repository and digest."""
    found: list[str] = []
    for mirror in mirrors:
        ref = _mirror_reference(mirror, _repository_of(item.location))
        if report.covers(f"{ref.registry}/{ref.repository}"):
            continue  # a mirror under the target goes with it
        key = (ref.registry, ref.repository, str(item.digest))
        if key not in asked:
            try:
                asked[key] = client.exists(ref, str(item.digest))
            except RegistryUnreachable as exc:
                asked[key] = False
                report.unreachable.append(f"--mirror {mirror}: {exc.message}")
            except ImageError as exc:
                asked[key] = False
                report.notes.append(f"--mirror {mirror}: {exc.message}")
        if asked[key]:
            found.append(f"{ref.registry}/{ref.repository}@{item.digest} (--mirror, checked now)")
    return found
