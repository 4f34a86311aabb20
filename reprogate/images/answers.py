"""What a registry and Docker's credential file say, read once into frozen values.

A registry is a server reprogate does not control, and the credential file is whatever
`docker login` or a person left there; code past these readers sees only the typed values below,
never the JSON. An answer that is not the shape the distribution spec gives it is an
infrastructure fault (`MalformedAnswer`, exit 3: something other than a registry answered, or a
broken one did), worded with where it came from; a credential entry that cannot be decoded is
skipped, as Docker skips it, so a stale entry for another registry never stops a resolution.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from reprogate.images.errors import MalformedAnswer

INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json")
MAX_INDEX_ENTRIES = 10_000  # an index lists platforms: thousands already means it is not one


@dataclass(frozen=True)
class Platform:
    """An index entry's platform: `os/architecture[/variant]` is how people and records name it."""

    os: str
    architecture: str
    variant: str = ""

    def __str__(self) -> str:
        return "/".join(part for part in (self.os, self.architecture, self.variant) if part)

    def matches(self, wanted: str) -> bool:
        """`linux/amd64` matches `linux/amd64` and `linux/amd64/v2`; `linux/arm64/v8` only itself."""
        name = str(self)
        return name == wanted or name.startswith(wanted + "/")


@dataclass(frozen=True)
class IndexEntry:
    """One manifest an index points to."""

    digest: str
    platform: Platform | None


@dataclass(frozen=True)
class Manifest:
    """A manifest or an index, as far as resolving a reference reads it."""

    media_type: str  # the body's own mediaType ("" where it states none)
    entries: tuple[IndexEntry, ...]  # an index's manifests; () for an image manifest

    def is_index(self, content_type: str) -> bool:
        return content_type in INDEX_TYPES or self.media_type in INDEX_TYPES or bool(self.entries)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(str(entry.platform) for entry in self.entries if entry.platform is not None)


def _json(body: bytes, where: str, what: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep to read
        raise MalformedAnswer(f"{where}: the registry answered with {what} that is not JSON it can read") from None


def _text(value: object, where: str, field: str) -> str:
    if not isinstance(value, str):
        raise MalformedAnswer(f"{where}: the registry's manifest has {field} of type {type(value).__name__}, not a string")
    return value


def _platform(value: object, where: str, field: str) -> Platform | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{where}: the registry's manifest has {field} of type {type(value).__name__}, not an object")
    return Platform(
        _text(value.get("os", ""), where, f"{field}.os"),
        _text(value.get("architecture", ""), where, f"{field}.architecture"),
        _text(value.get("variant", ""), where, f"{field}.variant"),
    )


def read_manifest(body: bytes, where: str) -> Manifest:
    """The manifest or index in `body`; `where` names the reference in messages."""
    data = _json(body, where, "a manifest")
    if not isinstance(data, dict):
        raise MalformedAnswer(f"{where}: the registry answered with a manifest that is not a JSON object")
    media_type = _text(data.get("mediaType", ""), where, "mediaType")
    listed = data.get("manifests", [])
    if not isinstance(listed, list):
        raise MalformedAnswer(f"{where}: the registry's manifest has manifests of type {type(listed).__name__}, not a list")
    if len(listed) > MAX_INDEX_ENTRIES:
        raise MalformedAnswer(f"{where}: the registry's index lists {len(listed):,} manifests (at most {MAX_INDEX_ENTRIES:,} are read)")
    entries = []
    for number, entry in enumerate(listed):
        field = f"manifests[{number}]"
        if not isinstance(entry, dict):
            raise MalformedAnswer(f"{where}: the registry's manifest has {field} of type {type(entry).__name__}, not an object")
        entries.append(IndexEntry(_text(entry.get("digest"), where, f"{field}.digest"), _platform(entry.get("platform"), where, f"{field}.platform")))
    return Manifest(media_type, tuple(entries))


def read_token(body: bytes) -> str | None:
    """The bearer token a token service answered with (`token`, or OAuth's `access_token`)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    token = data.get("token") or data.get("access_token")
    return token if isinstance(token, str) and token else None


def read_error_codes(body: bytes) -> tuple[str, ...]:
    """The codes of a registry's error answer (`{"errors": [{"code": "NAME_UNKNOWN"}, ...]}`)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return ()
    listed = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(entry["code"] for entry in listed if isinstance(entry, dict) and isinstance(entry.get("code"), str))


def _credentials(entry: object) -> tuple[str, str] | None:
    encoded = entry.get("auth") if isinstance(entry, dict) else None
    if not isinstance(encoded, str) or not encoded:
        return None
    try:
        user, colon, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
    except (binascii.Error, ValueError):  # not base64, or not UTF-8 under it
        return None
    return (user, password) if colon and user else None


def read_docker_auths(text: str) -> Mapping[str, tuple[str, str]]:
    """Docker's `config.json` `auths`: registry key -> (user, password), for the entries that hold
    a decodable `user:password`; a file that is not that shape holds none."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return MappingProxyType({})
    auths = data.get("auths") if isinstance(data, dict) else None
    if not isinstance(auths, dict):
        return MappingProxyType({})
    found = {key: creds for key, entry in auths.items() if (creds := _credentials(entry)) is not None}
    return MappingProxyType(found)
