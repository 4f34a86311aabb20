"""Fuzz harness: what a registry answers, as the registry client reads it (images/answers.py
behind images/registry.py): a tag's manifest or index with the Content-Type and
Docker-Content-Digest headers the input picks, the platform manifest an index points to, a
bearer challenge and the token service's answer, an error answer's codes (404s), and Docker's
credential file.

Half the inputs (first byte odd) are the distribution spec's answer shapes (an OCI index of two
platforms, an image manifest, a Docker manifest list, a token answer, an error list, a credential
file) mutated structurally; the rest are the bytes as they are. Each goes through the whole
client (`RegistryClient.resolve`, with and without a platform; `exists`), its HTTP layer answered
from the input instead of a socket. Expected: a ReprogateError (ImageError exit 1,
RegistryUnreachable or MalformedAnswer exit 3, InvalidReference exit 2) and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness import fuzz, instrumented, structured

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.core.http import Reply
    from reprogate.images.answers import INDEX_TYPES, MANIFEST_TYPES, read_docker_auths
    from reprogate.images.registry import RegistryClient, parse_reference

PLATFORM_DIGEST = "sha256:" + "e" * 64
INDEX = {
    "schemaVersion": 2,
    "mediaType": INDEX_TYPES[0],
    "manifests": [
        {"mediaType": MANIFEST_TYPES[0], "size": 7143, "digest": PLATFORM_DIGEST, "platform": {"architecture": "ppc64le", "os": "linux"}},
        {"mediaType": MANIFEST_TYPES[0], "size": 7682, "digest": PLATFORM_DIGEST, "platform": {"architecture": "amd64", "os": "linux", "variant": "v2"}},
    ],
    "annotations": {"com.example.key1": "value1"},
}
MANIFEST = {
    "schemaVersion": 2,
    "mediaType": MANIFEST_TYPES[0],
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 7023, "digest": "sha256:" + "b" * 64},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "size": 32654, "digest": "sha256:" + "c" * 64}],
}
LIST = {**INDEX, "mediaType": INDEX_TYPES[1]}
TOKEN = {"token": "abc", "access_token": "abc", "expires_in": 300}
ERRORS = {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown", "detail": {"Tag": "v1"}}]}
AUTHS = {"auths": {"127.0.0.1:5000": {"auth": base64.b64encode(b"user:pass").decode()}, "https://index.docker.io/v1/": {"auth": "eA=="}}}
DOCUMENTS: list[Any] = [INDEX, MANIFEST, LIST, TOKEN, ERRORS, AUTHS]
STATUSES = [200, 200, 200, 401, 404, 500]
TYPES = ["", *INDEX_TYPES, *MANIFEST_TYPES, "application/json; charset=utf-8", "text/html"]
CHALLENGES = ['Bearer realm="http://127.0.0.1:1/token",service="registry"', 'Basic realm="registry"', "Bearer", 'Bearer realm="ftp://x"']
CONFIG = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-registry-"))
os.environ["DOCKER_CONFIG"] = str(CONFIG)
REF = parse_reference("127.0.0.1:5000/demo/app:v1")


def seeds() -> list[tuple[str, bytes]]:
    raw = [(f"raw-{i}", b"\x00\x00" + json.dumps(d).encode()) for i, d in enumerate(DOCUMENTS)]
    return raw + [(f"structured-{i}", bytes([1, i]) + b"\x00" * 16) for i in range(len(DOCUMENTS))]


class Answers:
    """The HTTP layer, answered from the input: the first request gets the input's body with the
    status and headers its last bytes pick; later ones (the token, the platform manifest, the tag
    listing) get the same body, so what one answer holds reaches every reader."""

    def __init__(self, body: bytes, pick: int) -> None:
        self.body, self.pick, self.calls = body, pick, 0

    def request(self, method: str, url: str, **_: Any) -> Reply:
        self.calls += 1
        if self.calls > 8:
            raise AssertionError("the client asked more than eight times for one resolution")
        status = STATUSES[self.pick % len(STATUSES)] if self.calls == 1 else 200
        headers = {"Content-Type": TYPES[(self.pick >> 3) % len(TYPES)]}
        if status == 401:
            headers["WWW-Authenticate"] = CHALLENGES[(self.pick >> 6) % len(CHALLENGES)]
        if self.pick & 0x100:
            headers["Docker-Content-Digest"] = "sha256:" + hashlib.sha256(self.body).hexdigest()
        return Reply(status, headers, b"" if method == "HEAD" else self.body, url)


def one(data: bytes) -> None:
    if len(data) < 4:
        return
    document = structured(data, DOCUMENTS)
    try:
        body = data[2:] if document is None else json.dumps(document).encode()
    except (TypeError, ValueError):
        return
    pick = int.from_bytes(data[-2:], "little")
    (CONFIG / "config.json").write_bytes(body)
    read_docker_auths(body.decode("utf-8", "replace"))
    for platform in (None, "linux/amd64"):
        client = RegistryClient(retries=0, insecure={"127.0.0.1:5000"})
        client.http = Answers(body, pick)  # type: ignore[assignment]  # the socket replaced by the input's answers
        try:
            client.resolve(REF, platform)
        except ReprogateError:
            pass
    client = RegistryClient(retries=0)
    client.http = Answers(body, pick)  # type: ignore[assignment]  # as above
    try:
        client.exists(REF, PLATFORM_DIGEST)
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds())
