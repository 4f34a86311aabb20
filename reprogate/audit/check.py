"""`reprogate audit`: do the artifacts a record addresses still resolve, and have its dates passed?

A record is only as good as what it points to. For every record (or a reproducible sample of
them: the runbook's monthly sample) this checks: the pinned image and base images still exist in
their registry; in-repository artifacts (trace, checkpoint, lock files, preflight output) exist
and match their checksums; http(s) artifacts still answer a HEAD; the dataset's retention and the
contract's lifetime have not expired. Schemes reprogate cannot reach (s3://,
gs://, hf://) are listed as not checked, never counted as present.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.audit.addressed import dotted, objects_with
from reprogate.core.canonical import file_digest
from reprogate.core.config import repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.datasets.manifest_header import read_manifest
from reprogate.datasets.remote import Missing, Remote, RemoteUnreachable
from reprogate.images.command import verify_record
from reprogate.images.registry import RegistryClient

STATUSES = ("present", "missing", "expired", "unreachable", "unchecked", "notice", "within")


@dataclass(frozen=True)
class Entry:
    """One thing the audit looked at: in which record, which field (and its line), what it found."""

    record: str
    field: str
    status: str  # one of STATUSES
    message: str
    line: int = 1


@dataclass
class AuditResult:
    lines: list[str] = field(default_factory=list)
    missing: int = 0
    expired: int = 0
    unreachable: int = 0
    unchecked: int = 0
    entries: list[Entry] = field(default_factory=list)

    def add(self, entry: Entry) -> None:
        """One entry, as a line of the text report too (`record: message`)."""
        self.entries.append(entry)
        self.lines.append(f"{entry.record}: {entry.message}")

    @property
    def code(self) -> ExitCode:
        if self.missing or self.expired:
            return ExitCode.FAILED
        return ExitCode.INFRA if self.unreachable else ExitCode.OK


def _file_refs(data: Any) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every object pairing an in-repository path with a checksum: traces, checkpoints, lock
    files, preflight output, generator states."""
    return objects_with(data, lambda _path, ref: isinstance(ref.get("path"), str) and isinstance(ref.get("checksum"), str))


def sample(records: list[Path], size: int | None, seed: int) -> list[Path]:
    """A reproducible sample: the same records, seed and size always pick the same records."""

    ordered = sorted(records, key=lambda p: p.as_posix())
    if size is None or size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size), key=lambda p: p.as_posix())


def _uris(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(data, dict):
        if isinstance(data.get("uri"), str):
            yield path, data["uri"]
        for key, value in data.items():
            yield from _uris(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _uris(value, (*path, i))


def _image_status(line: str) -> str:
    """What one line of `image verify` says (its own wording, read back here only)."""
    if line.endswith(": present"):
        return "present"
    if "registry unreachable" in line:
        return "unreachable"
    if "has moved to" in line or "nothing to verify" in line:
        return "notice"
    return "missing"


def audit_record(record: Path, today: datetime.date, timeout: float = 10.0, retries: int = 2) -> AuditResult:

    result = AuditResult()
    doc = load_document(record)
    data = doc.data
    name = f"{record}"
    images = verify_record(record, False, RegistryClient(timeout=timeout, retries=retries))
    image_line = doc.locate(("container", "digest")).line
    for said in images.stdout:
        result.add(Entry(name, "container", _image_status(said), f"image {said}", image_line))
    if images.code == ExitCode.INFRA:
        result.unreachable += 1
    elif images.code == ExitCode.FAILED:
        result.missing += 1
    remote = Remote(timeout=timeout, retries=retries)
    for path, uri in _uris(data):
        where, line = dotted(path), doc.locate((*path, "uri")).line
        if not uri.lower().startswith(("http://", "https://")):
            result.unchecked += 1
            result.add(Entry(name, where, "unchecked", f"{where} {uri}: not checked (reprogate reaches http(s) only)", line))
            continue
        try:
            remote.size(uri)
            result.add(Entry(name, where, "present", f"{where} {uri}: present", line))
        except Missing as exc:
            result.missing += 1
            result.add(Entry(name, where, "missing", f"{where} {uri}: MISSING ({exc})", line))
        except RemoteUnreachable as exc:
            result.unreachable += 1
            result.add(Entry(name, where, "unreachable", f"{where} {uri}: unreachable ({exc})", line))
    root = repository_root(record.parent)
    for path, ref in _file_refs(data):
        where, line = dotted(path), doc.locate((*path, "path")).line
        target = (root / ref["path"]).resolve()
        if root.resolve() not in target.parents or not target.is_file():
            result.missing += 1
            result.add(Entry(name, where, "missing", f"{where} {ref['path']}: MISSING from the repository", line))
            continue
        if file_digest(target) != ref["checksum"]:
            result.missing += 1
            result.add(Entry(name, where, "missing", f"{where} {ref['path']}: present, but it no longer matches its checksum", line))
        else:
            result.add(Entry(name, where, "present", f"{where} {ref['path']}: present, checksum matches", line))
    retention = _retention(data, root)
    lifetime = ((data.get("contract") or {}).get("lifetime") or {}).get("expires")
    for label, value, at in (("dataset retention", retention, ("dataset",)), ("contract lifetime", lifetime, ("contract", "lifetime", "expires"))):
        if isinstance(value, str):
            try:
                when = datetime.date.fromisoformat(value)
            except ValueError:
                continue
            line = doc.locate(at).line
            if when < today:
                result.expired += 1
                result.add(Entry(name, label, "expired", f"{label} expired on {value}: exact reproduction is no longer promised", line))
            else:
                result.add(Entry(name, label, "within", f"{label} until {value} ({(when - today).days} days left)", line))
    return result


def _retention(data: dict[str, Any], root: Path) -> str | None:

    dataset = data.get("dataset") or {}
    if isinstance(dataset.get("inline"), dict):
        return (dataset["inline"].get("retention") or {}).get("expires")
    path = (dataset.get("manifest") or {}).get("path")
    if isinstance(path, str):
        try:
            retention = read_manifest(root / path).header.retention
        except (DocumentError, OSError):  # unreadable, or not of the manifest's shape: validate says which
            return None
        return retention.expires if retention is not None else None
    return None


def audit(records: list[Path], today: datetime.date | None = None, timeout: float = 10.0, retries: int = 2) -> AuditResult:
    total = AuditResult()
    for record in records:
        one = audit_record(record, today or datetime.date.today(), timeout, retries)
        total.lines += one.lines
        total.entries += one.entries
        total.missing += one.missing
        total.expired += one.expired
        total.unreachable += one.unreachable
        total.unchecked += one.unchecked
    total.lines.append(
        f"{len(records)} record(s) audited: {total.missing} missing, {total.expired} "
        f"expired, {total.unreachable} unreachable, {total.unchecked} not checkable here"
    )
    return total
