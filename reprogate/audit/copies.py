"""Whether another copy of an input really holds its bytes, asked now.

`audit --retiring` may count a copy only when it was checked: a registry copy when the registry
serves the manifest by that digest, a file when it is there with the size the record states (and,
with `--deep`, the checksum), at a local path or an http(s) URL. A copy reprogate cannot reach
(s3://, gs://, a registry that does not answer) is `unconfirmed`: it keeps nothing, and the audit
says it could not tell (exit 3) rather than "kept".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from reprogate.audit.addressed import Input
from reprogate.datasets.hashing import AlgorithmUnavailable, hash_file
from reprogate.datasets.remote import Missing, Remote, RemoteUnreachable
from reprogate.images.errors import ImageError, RegistryUnreachable
from reprogate.images.registry import Reference, RegistryClient

IMAGE_KINDS = ("image", "base-image")

CopyStatus = Literal["holds", "absent", "unconfirmed"]


@dataclass(frozen=True)
class Copy:
    """One other place an input's digest is addressed, and what asking it now found."""

    where: str  # as the report names it
    status: CopyStatus
    why: str = ""  # what was found (absent) or why it could not be told (unconfirmed)
    registry: str | None = None  # for an image copy: HOST/REPOSITORY, so the report can say how to re-point the record
    folder: str | None = None  # for a dataset copy: the namespace it lives under, for `rebuild --dataset-root`


def image_location(host: str, repository: str) -> str:
    """HOST/REPOSITORY with the host in lower case: registry hosts are DNS names, case does not matter."""
    return f"{host.lower()}/{repository}"


@dataclass
class CopyChecker:
    """Asks each copy once (a registry per repository and digest, a file per location)."""

    client: RegistryClient
    remote: Remote
    deep: bool = False
    unreachable: list[str] = field(default_factory=list)  # what did not answer, as the report's notes say it
    _asked: dict[tuple[str, ...], tuple[CopyStatus, str]] = field(default_factory=dict)

    def image(self, ref: Reference, digest: str, where: str, named: str) -> Copy:
        """Does the registry serve `digest` for `ref`? `named` is how the report calls the source of the copy."""
        key = ("image", ref.registry.lower(), ref.repository, digest)
        if key not in self._asked:
            try:
                found = self.client.exists(ref, digest)
                self._asked[key] = ("holds", "checked now") if found else ("absent", f"{ref.registry} does not hold it (checked now)")
            except RegistryUnreachable as exc:
                self._asked[key] = ("unconfirmed", f"the registry did not answer: {exc.message}")
                self.unreachable.append(f"{named}: {exc.message}")
            except ImageError as exc:
                self._asked[key] = ("unconfirmed", exc.message)
        status, why = self._asked[key]
        return Copy(where, status, why, registry=image_location(ref.registry, ref.repository))

    def file(self, item: Input, copy: Input, where: str, folder: str | None) -> Copy:
        """Is `copy` (a file at a local path or URL) there with `item`'s size and, with --deep, its checksum?"""
        size = item.bytes if item.bytes is not None else copy.bytes
        key = ("file", copy.location, str(size), str(item.digest), str(self.deep))
        if key not in self._asked:
            self._asked[key] = self._ask_file(copy.location, size, item.digest)
            if self._asked[key][0] == "unconfirmed" and copy.location.lower().startswith(("http://", "https://")):
                self.unreachable.append(f"{copy.location}: {self._asked[key][1]}")
        status, why = self._asked[key]
        return Copy(where, status, why, folder=folder)

    def _ask_file(self, location: str, size: int | None, digest: str | None) -> tuple[CopyStatus, str]:
        algorithm = digest.split(":", 1)[0] if digest and ":" in digest else "sha256"
        if location.startswith("/"):
            return self._ask_local(Path(location), size, digest, algorithm)
        if location.lower().startswith(("http://", "https://")):
            found_size: int | None  # --deep reads the bytes and knows; a HEAD may state no size
            try:
                if self.deep:
                    found_size, found = self.remote.digest(location, algorithm, None, size)
                    if found != digest:
                        return "absent", f"its bytes are {found}, not {digest}"
                else:
                    found_size = self.remote.size(location)
                    if found_size is None and size is not None:
                        return "unconfirmed", "the server states no size (--deep reads the bytes)"
            except Missing as exc:
                return "absent", f"not there ({exc.message})"
            except RemoteUnreachable as exc:
                return "unconfirmed", f"did not answer: {exc.message}"
            except AlgorithmUnavailable as exc:
                return "unconfirmed", exc.message
            if size is not None and found_size is not None and found_size != size:
                return "absent", f"{found_size} bytes there, the record states {size}"
            return "holds", "checksum matches (checked now)" if self.deep else "size matches (checked now; --deep compares checksums)"
        scheme = location.split("://", 1)[0] if "://" in location else "this kind of location"
        return "unconfirmed", f"not checked: reprogate reaches local folders and http(s), not {scheme}://"

    def _ask_local(self, path: Path, size: int | None, digest: str | None, algorithm: str) -> tuple[CopyStatus, str]:
        try:
            if not path.is_file():
                return "absent", "no such file"
            found_size = path.stat().st_size
        except OSError as exc:
            return "absent", f"cannot be read ({exc.strerror or exc})"
        if size is not None and found_size != size:
            return "absent", f"{found_size} bytes there, the record states {size}"
        if not self.deep:
            return "holds", "size matches (checked now; --deep compares checksums)"
        try:
            found = hash_file(path, algorithm)
        except AlgorithmUnavailable as exc:
            return "unconfirmed", exc.message
        if found.error:
            return "absent", f"cannot be read ({found.error})"
        if found.checksum != digest:
            return "absent", f"its bytes are {found.checksum}, not {digest}"
        return "holds", "checksum matches (checked now)"


def is_image(item: Input) -> bool:
    return item.kind in IMAGE_KINDS
