"""Container images by digest, over the OCI distribution API (no Docker engine needed).

- References are parsed the way Docker does: a first component with a dot, a colon or
  `localhost` is a registry; otherwise Docker Hub, with `library/` for one-word names.
- A tag is resolved by fetching its manifest with the Accept types for OCI index, OCI manifest,
  Docker manifest list and Docker manifest, and hashing the exact bytes received: the digest is
  computed, not trusted from a header (the OCI spec says clients SHOULD NOT depend on
  Docker-Content-Digest). For an index, the platform manifest's digest is resolved too.
- Authentication follows the registry's challenge: Bearer (token from the realm, anonymous or
  with credentials, cached per scope) or Basic; credentials come from REPROGATE_REGISTRY_USERNAME /
  REPROGATE_REGISTRY_PASSWORD or ~/.docker/config.json.
  Credentials (Basic, or for the token service) go only to their registry or token service, and
  only over https or to a loopback address.
- One HTTP client per registry client (core/http.py: retries, deadline, manifests read up to the
  4 MiB the distribution spec lets registries refuse beyond), so connections and tokens are reused.
- 401/403/404 become plain messages; a registry that cannot be reached raises RegistryUnreachable (exit 3).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprogate.core.errors import InfrastructureError
from reprogate.core.fileio import read_input
from reprogate.core.http import HttpClient, HttpPolicy, MiB, Reply, require_secure_transport
from reprogate.images.answers import INDEX_TYPES, MANIFEST_TYPES, read_docker_auths, read_error_codes, read_manifest, read_token
from reprogate.images.errors import ImageError, InvalidReference, RegistryUnreachable

ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)
MANIFEST_LIMIT = 4 * MiB
DOCKER_CONFIG_LIMIT = 4 * MiB  # a credential file with thousands of registries is smaller
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_HOST = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?$")
MAX_NAME = 255  # the distribution spec's limit on a repository name, registry included


@dataclass(frozen=True)
class Reference:
    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def api_host(self) -> str:
        return "registry-1.docker.io" if self.registry == "docker.io" else self.registry

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}" + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


def parse_reference(ref: str) -> Reference:
    """Parse `[registry/]repository[:tag][@digest]` with Docker's defaults."""
    text = ref.strip()
    if text.startswith("docker://"):
        text = text[len("docker://") :]
    shown = repr(text[:80] + ("..." if len(text) > 80 else ""))
    name, _, digest = text.partition("@")
    if len(name) > MAX_NAME + 129:
        raise InvalidReference(f"{shown}: longer than an image reference can be ({MAX_NAME} characters of name, 128 of tag)")
    if digest and not _DIGEST.match(digest):
        raise InvalidReference(f"{shown}: digest must be sha256:<64 hex>")
    tag = None
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name.rsplit(":", 1)
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, rest
    else:
        registry, repository = "docker.io", name
    if registry == "docker.io" and "/" not in repository:
        repository = f"library/{repository}"
    component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
    if not re.match(rf"^{component}(?:/{component})*$", repository) or len(f"{registry}/{repository}") > MAX_NAME:
        raise InvalidReference(f"{shown}: {repository[:80]!r} is not a valid repository name")
    if tag is not None and not _TAG.match(tag):
        raise InvalidReference(f"{shown}: {tag[:40]!r} is not a valid tag")
    if not _HOST.match(registry):
        raise InvalidReference(f"{shown}: {registry[:80]!r} is not a registry host")
    if not tag and not digest:
        tag = "latest"
    return Reference(registry, repository, tag, digest or None)


@dataclass(frozen=True)
class Resolution:
    reference: Reference
    digest: str  # of what the tag points to: an index for multi-platform images
    media_type: str
    platform: str | None = None
    platform_digest: str | None = None
    platforms: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": str(self.reference),
            "digest": self.digest,
            "media_type": self.media_type,
            "platform": self.platform,
            "platform_digest": self.platform_digest,
            "platforms": list(self.platforms),
        }


def _docker_config_auth(registry: str) -> tuple[str, str] | None:
    path = Path(os.environ.get("DOCKER_CONFIG", Path.home() / ".docker")) / "config.json"
    try:
        raw = read_input(path, DOCKER_CONFIG_LIMIT)
    except OSError:
        return None
    if raw is None:  # larger than any credential file: not one
        return None
    auths = read_docker_auths(raw.decode("utf-8", "replace"))
    for key in (registry, f"https://{registry}", f"http://{registry}", "https://index.docker.io/v1/" if registry == "docker.io" else ""):
        if key in auths:
            return auths[key]
    return None


class RegistryClient:
    def __init__(
        self, timeout: float = 10.0, retries: int = 3, backoff: float = 0.5, insecure: set[str] | None = None, credentials: tuple[str, str] | None = None
    ) -> None:
        policy = HttpPolicy(
            connect_timeout=min(timeout, 5.0),
            read_timeout=timeout,
            deadline=max(30.0, timeout * (retries + 2)),
            retries=retries,
            backoff=backoff,
            max_body=MANIFEST_LIMIT,
        )
        self.http = HttpClient(policy)
        # plain http for loopback registries (and ones named in REPROGATE_INSECURE_REGISTRIES)
        self.insecure = insecure if insecure is not None else set(filter(None, os.environ.get("REPROGATE_INSECURE_REGISTRIES", "").split(",")))
        self.credentials = credentials
        self.tokens: dict[tuple[str, str], str] = {}

    def _creds(self, registry: str) -> tuple[str, str] | None:
        if self.credentials:
            return self.credentials
        user, password = os.environ.get("REPROGATE_REGISTRY_USERNAME"), os.environ.get("REPROGATE_REGISTRY_PASSWORD")
        if user and password:
            return user, password
        return _docker_config_auth(registry)

    def _base(self, ref: Reference) -> str:
        host = ref.api_host
        plain = host in self.insecure or host.split(":")[0] in ("127.0.0.1", "localhost", "::1")
        return f"{'http' if plain else 'https'}://{host}/v2/{ref.repository}"

    def _send(self, method: str, url: str, headers: dict[str, str]) -> Reply:
        try:
            return self.http.request(method, url, headers=headers)
        except InfrastructureError as exc:
            raise RegistryUnreachable(exc.message) from None

    def _request(self, method: str, ref: Reference, path: str, accept: str = ACCEPT) -> Reply:
        url = f"{self._base(ref)}/{path}"
        scope = f"repository:{ref.repository}:pull"
        headers = {"Accept": accept}
        token = self.tokens.get((ref.registry, scope))
        if token:
            headers["Authorization"] = f"Bearer {token}"
        reply = self._send(method, url, headers)
        if reply.status == 401:
            challenge = reply.headers.get("WWW-Authenticate", "")
            creds = self._creds(ref.registry)
            if challenge.lower().startswith("bearer"):
                self.tokens[(ref.registry, scope)] = token = self._token(challenge, scope, creds)
                headers["Authorization"] = f"Bearer {token}"
                reply = self._send(method, url, headers)
            elif challenge.lower().startswith("basic") and creds:
                require_secure_transport(url)
                headers["Authorization"] = _basic(creds)
                reply = self._send(method, url, headers)
        return reply

    def _token(self, challenge: str, scope: str, creds: tuple[str, str] | None) -> str:
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.pop("realm", "")
        if not realm.lower().startswith(("https://", "http://")):
            raise ImageError(f"the registry asked for a token without a usable realm: {challenge[:200]}")
        params.setdefault("scope", scope)
        headers = {}
        if creds:
            require_secure_transport(realm)  # never Basic credentials in clear text to a token service
            headers["Authorization"] = _basic(creds)
        try:
            reply = self.http.request("GET", realm, params=params, headers=headers, max_body=MiB)
        except InfrastructureError as exc:
            raise RegistryUnreachable(f"token service: {exc.message}") from None
        if reply.status in (401, 403):
            raise ImageError("no access: the token service refused the credentials (check REPROGATE_REGISTRY_USERNAME/PASSWORD or docker login)")
        token = read_token(reply.body) if reply.ok else None
        if token is None:
            raise ImageError(f"the token service gave no token (HTTP {reply.status})")
        return token

    def _explain(self, ref: Reference, response: Reply, what: str) -> ImageError:
        code = response.status
        errors = list(read_error_codes(response.body))
        if code in (401, 403):
            return ImageError(f"{ref}: no access (HTTP {code}); check the credentials for {ref.registry}")
        if code == 404 and "NAME_UNKNOWN" not in errors:
            listing = self._request("GET", ref, "tags/list", "application/json")
            if listing.status == 404:  # registry 2.x says MANIFEST_UNKNOWN for both cases
                errors.append("NAME_UNKNOWN")
        if code == 404 and "NAME_UNKNOWN" in errors:
            return ImageError(f"{ref}: no such repository {ref.repository} on {ref.registry}")
        if code == 404:
            return ImageError(f"{ref}: no such {what}")
        return ImageError(f"{ref}: HTTP {code} from {ref.registry}")

    def manifest(self, ref: Reference, reference: str) -> tuple[bytes, str, str]:
        """(raw bytes, media type, sha256 digest computed from the bytes)."""
        response = self._request("GET", ref, f"manifests/{reference}")
        if response.status != 200:
            raise self._explain(ref, response, "tag" if not reference.startswith("sha256:") else "manifest")
        body = response.body
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        header = response.headers.get("Docker-Content-Digest")
        if reference.startswith("sha256:") and digest != reference:
            raise ImageError(f"{ref}: the registry returned bytes whose digest is {digest}, not {reference}")
        if header and header != digest:
            raise ImageError(f"{ref}: Docker-Content-Digest {header} does not match the bytes received ({digest})")
        media = response.headers.get("Content-Type", "").split(";")[0] or read_manifest(body, str(ref)).media_type
        return body, media, digest

    def resolve(self, ref: Reference | str, platform: str | None = None) -> Resolution:
        ref = parse_reference(ref) if isinstance(ref, str) else ref
        body, media, digest = self.manifest(ref, ref.digest or str(ref.tag))
        document = read_manifest(body, str(ref))
        if not document.is_index(media):
            return Resolution(ref, digest, media)
        if not platform:
            return Resolution(ref, digest, media, platforms=document.platforms)
        chosen = next((entry for entry in document.entries if entry.platform is not None and entry.platform.matches(platform)), None)
        if chosen is None:
            raise ImageError(f"{ref}: no manifest for platform {platform} (the index has {', '.join(document.platforms) or 'none'})")
        if not _DIGEST.match(chosen.digest):
            raise ImageError(f"{ref}: the index's manifest for {platform} has digest {chosen.digest[:80]!r}, not sha256:<64 hex>")
        _, _, platform_digest = self.manifest(ref, chosen.digest)
        return Resolution(ref, digest, media, platform, platform_digest, document.platforms)

    def exists(self, ref: Reference, digest: str) -> bool:
        response = self._request("HEAD", ref, f"manifests/{digest}")
        if response.status == 200:
            return True
        if response.status == 404:
            return False
        raise self._explain(ref, response, "manifest")


def _basic(creds: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
