"""`reprogate audit --retiring TARGET`: which records lose an input if TARGET goes away.

The runbook says to review records "before retiring a registry or dataset snapshot". TARGET is
what a platform team means to delete: a registry host (`ghcr.io`, `registry:5000`, or written as a
URL, `https://ghcr.io`; hosts in any case), a namespace or image repository in it
(`ghcr.io/example-org`, `ghcr.io/example-org/decoder-train`), one image by digest
(`ghcr.io/example-org/decoder-train@sha256:…`), a URI prefix (`s3://example-datasets/d77/`,
`https://artifacts.example.com/traces`), a local folder, or a dataset snapshot (`D-77`, `D-77@3`, or
the manifest's `streaming.snapshot_id` / `export_id`). A form that could only ever cover nothing
(a tag, which names no bytes; a bare digest; an upper-case repository path) is refused (exit 2).

An input under TARGET is kept only by a copy that was checked now — content addressing means
equal digests are equal bytes, so a copy is another place the same digest is addressed (another
record, a dataset manifest in the repository, a registry named with `--mirror`), and it counts
when that place holds it: the registry serves the manifest by that digest, the file is there with
the stated size (and checksum, with `--deep`), or the repository holds the file with that
checksum. A copy that could not be asked (a registry that does not answer, s3://) leaves the input
unconfirmed (exit 3); one that does not hold it keeps nothing. Anything else is lost, and the
audit fails (exit 1), naming the record, the field and the digest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from reprogate.audit.addressed import Input, checked_manifest, manifest_inputs, record_inputs
from reprogate.audit.copies import Copy, CopyChecker, image_location, is_image
from reprogate.core.config import repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.core.errors import UsageError
from reprogate.datasets.manifests import load_manifest
from reprogate.datasets.remote import Remote
from reprogate.images.errors import InvalidReference
from reprogate.images.registry import Reference, RegistryClient, parse_reference

DATASET_KINDS = ("dataset-manifest", "shard", "dataset-file")
TargetKind = Literal["name", "uri", "folder", "image-digest"]


def _under(prefix: str, location: str) -> bool:
    """`location` is `prefix` or lies below it, on a path boundary (`s3://b/d7` does not cover `s3://b/d77/x`)."""
    if not location:
        return False
    if location == prefix or location == prefix.rstrip("/"):
        return True
    return location.startswith(prefix if prefix.endswith("/") else prefix + "/")


def _lower_host(name: str) -> str:
    """HOST[/PATH] with the host in lower case (registry hosts are DNS names)."""
    host, sep, rest = name.partition("/")
    return host.lower() + sep + rest


TAG_REFUSED = "a tag names no bytes, so retiring it retires nothing a record addresses by digest"


@dataclass(frozen=True)
class Target:
    """What is being retired, read the one way its text allows (`parse_target` makes one)."""

    text: str  # as given
    kind: TargetKind
    prefix: str  # a registry name prefix (host in lower case), a URI prefix, a folder, or a dataset name
    image_prefix: str | None = None  # the registry name an http(s) URL or a name stands for
    digest: str | None = None  # an image retired by digest

    @property
    def uri(self) -> bool:
        return self.kind == "uri"

    def covers(self, item: Input) -> bool:
        if is_image(item):
            if self.image_prefix is None:
                return False
            location = _lower_host(item.location)
            if self.kind == "image-digest":
                return location == self.image_prefix and item.digest == self.digest
            return _under(self.image_prefix, location)
        if self.kind == "uri":
            return _under(self.prefix, item.location)
        if self.kind == "folder":
            return item.location.startswith("/") and _under(self.prefix, item.location)
        if self.kind == "name" and item.dataset is not None and item.kind in DATASET_KINDS:
            return self.prefix in dataset_names(item)
        return False


def dataset_names(item: Input) -> set[str]:
    """Every name a dataset snapshot goes by: its id, id@version, and its stream's snapshot and export ids."""
    if item.dataset is None:
        return set()
    dataset_id, version = item.dataset
    return {dataset_id, f"{dataset_id}@{version}", *item.snapshots}


def parse_target(text: str) -> Target:
    """TARGET read once; a form that could only cover nothing is refused (UsageError, exit 2)."""
    given = text.strip()
    if not given:
        raise UsageError("--retiring: name what is retired (a registry host, host/namespace, an image repository, a URI prefix or a dataset id)")
    if given.startswith(("/", "./", "../")):
        return Target(given, "folder", str(Path(given).resolve()))
    if "://" in given and not given.startswith("docker://"):
        parts = urlsplit(given)
        if parts.scheme.lower() in ("http", "https") and parts.netloc:
            # https://ghcr.io is how a registry is often written: it covers the images there and any
            # artifact under the URL alike
            host = parts.netloc.lower()
            path = parts.path.strip("/")
            prefix = f"{parts.scheme.lower()}://{host}{parts.path}"
            return Target(given, "uri", prefix, image_prefix=_registry_name(given, f"{host}/{path}" if path else host))
        return Target(given, "uri", given)
    name = given.removeprefix("docker://")
    if name.startswith("sha256:"):
        raise UsageError(
            f"--retiring {given}: a bare digest names bytes wherever they live, so no copy could keep them",
            hint="name where they are retired from: HOST/REPOSITORY@sha256:... (one image), the repository, or the registry",
        )
    if "@sha256:" in name:
        try:
            ref = parse_reference(_lower_host(name))
        except InvalidReference as exc:
            raise UsageError(f"--retiring {given}: {exc.message}") from None
        if ref.tag and ref.tag != "latest" and ":" in name.split("@", 1)[0].rsplit("/", 1)[-1]:
            raise UsageError(f"--retiring {given}: {TAG_REFUSED}", hint=f"retire the image by digest alone: {ref.registry}/{ref.repository}@{ref.digest}")
        return Target(given, "image-digest", image_location(ref.registry, ref.repository), image_location(ref.registry, ref.repository), ref.digest)
    if "/" in name and ":" in name.rsplit("/", 1)[-1]:
        repository = name.rsplit(":", 1)[0]
        raise UsageError(f"--retiring {given}: {TAG_REFUSED}", hint=f"retire the repository ({repository}) or one image by digest ({repository}@sha256:...)")
    if "@" in name:  # D-77@3: a dataset snapshot, never an image
        return Target(given, "name", name)
    return Target(given, "name", name, image_prefix=_registry_name(given, _lower_host(name)))


def _registry_name(given: str, name: str) -> str:
    """A registry name prefix, refused when its repository path could match no image (they are lower case)."""
    host, _, path = name.partition("/")
    if path != path.lower():
        raise UsageError(
            f"--retiring {given}: {path!r} has upper-case letters, and image repository names are lower case, so it covers no image",
            hint=f"write it as {host}/{path.lower()}",
        )
    return name.rstrip("/")


@dataclass(frozen=True)
class Retired:
    """One input under the target, and what asking every other copy of its digest found."""

    input: Input
    copies: tuple[Copy, ...]

    @property
    def holding(self) -> tuple[Copy, ...]:
        return tuple(c for c in self.copies if c.status == "holds")

    @property
    def lost(self) -> bool:
        return not self.holding and not self.unconfirmed

    @property
    def unconfirmed(self) -> bool:
        """No copy was seen to hold it, but one could not be asked."""
        return not self.holding and any(c.status == "unconfirmed" for c in self.copies)


@dataclass
class RetiringReport:
    target: str
    records: list[str] = field(default_factory=list)  # every record looked at
    retired: list[Retired] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)  # what did not answer
    unusable: list[str] = field(default_factory=list)  # a record's manifest whose shards could not be listed: the audit cannot say what it loses

    @property
    def lost(self) -> list[Retired]:
        return [r for r in self.retired if r.lost]

    @property
    def unconfirmed(self) -> list[Retired]:
        return [r for r in self.retired if r.unconfirmed]

    @property
    def code(self) -> ExitCode:
        if self.lost:
            return ExitCode.FAILED
        if self.unusable:
            return ExitCode.USAGE
        return ExitCode.INFRA if self.unconfirmed or self.unreachable else ExitCode.OK


def _mirror_reference(mirror: str, repository: str) -> Reference:
    """A mirror is HOST or HOST/PREFIX (a URL's scheme dropped); the image keeps its repository path below it."""
    text = mirror.split("://", 1)[1] if "://" in mirror else mirror
    host, _, prefix = text.strip("/").partition("/")
    return Reference(host.lower(), f"{prefix.strip('/')}/{repository}" if prefix.strip("/") else repository)


def _repository_of(location: str) -> str:
    return location.split("/", 1)[1] if "/" in location else location


def _named(item: Input) -> str:
    return f"{item.location} ({item.record}: {item.field})" if item.location else f"{item.record}: {item.field}"


def retiring(
    records: list[Path],
    manifests: list[Path],
    target: Target,
    mirrors: list[str],
    client: RegistryClient | None = None,
    remote: Remote | None = None,
    deep: bool = False,
) -> RetiringReport:
    """Every input of `records` under `target`, each with what asking its other copies (records,
    manifests in the repository, the repository's own files, `mirrors`) found now."""
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
        report.unusable += [f"{name}: {note}" for note in found.unusable]
    for path in manifests:  # a manifest in the repository says where else the same shards live
        try:
            besides += list(manifest_inputs(path.as_posix(), checked_manifest(load_manifest(path, path.as_posix())), path.parent, 1, "manifest"))
        except (DocumentError, OSError, ValueError) as exc:  # ManifestUnusable, ManifestLineError: it counts as no copy
            report.notes.append(f"{path.as_posix()}: not counted as a copy ({exc})")
    elsewhere: dict[str, dict[str, Input]] = {}
    for item in (*every, *besides):
        if item.digest and item.location and not target.covers(item):
            elsewhere.setdefault(item.digest, {}).setdefault(_lower_host(item.location) if is_image(item) else item.location, item)
    checker = CopyChecker(client or RegistryClient(), remote or Remote(), deep)
    for item in every:
        if not target.covers(item):
            continue
        copies: list[Copy] = []
        if item.in_repository:
            copies.append(Copy("the repository (the path the record names holds the same checksum)", "holds", "checked now"))
        here = _lower_host(item.location) if is_image(item) else item.location
        for where, other in sorted(elsewhere.get(item.digest or "", {}).items()):
            if is_image(item) != is_image(other) or where == here:
                continue  # the same bytes at the same place go with the retirement, whatever else names them
            if is_image(item):
                host, _, repository = other.location.partition("/")
                copies.append(checker.image(Reference(host, repository), str(item.digest), _named(other), f"{other.record}: {other.field}"))
            else:
                copies.append(checker.file(item, other, _named(other), other.root))
        if is_image(item) and item.digest:
            for mirror in mirrors:
                ref = _mirror_reference(mirror, _repository_of(item.location))
                probe = Input("", "", "image", f"{ref.registry}/{ref.repository}", item.digest)
                if target.covers(probe):
                    continue  # a mirror under the target goes with it
                copies.append(checker.image(ref, str(item.digest), f"{ref.registry}/{ref.repository}@{item.digest} (--mirror)", f"--mirror {mirror}"))
        report.retired.append(Retired(item, tuple(copies)))
    report.unreachable += [u for u in dict.fromkeys(checker.unreachable)]
    return report
