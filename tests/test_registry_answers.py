"""A registry's answers and Docker's credential file are read once, into typed values, before any
code uses them: answers that are not the distribution spec's shape are a clear exit 3, a
credential entry that does not decode is skipped. Each case is the minimised input of a crash the
fuzz harness (tests/fuzz/fuzz_registry.py) found in the reader before it was typed, served by a
real HTTP server on loopback and read through the whole client and the `image resolve` command."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import Result

from reprogate.images.answers import INDEX_TYPES, Platform, read_docker_auths, read_manifest
from reprogate.images.errors import MalformedAnswer, RegistryUnreachable
from reprogate.images.registry import RegistryClient, _docker_config_auth

Cli = Callable[..., Result]
DIGEST = "sha256:" + "a" * 64


class Served:
    """One manifest answer, served to every request."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.content_type = INDEX_TYPES[0]
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", served.content_type)
                self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                self.wfile.write(served.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def served() -> Iterator[Served]:
    answer = Served()
    yield answer
    answer.server.shutdown()
    answer.server.server_close()


def index(*entries: object, media_type: object = INDEX_TYPES[0]) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": media_type, "manifests": list(entries)}).encode()


@pytest.mark.parametrize(
    "body, content_type, named",
    [
        (index({"digest": DIGEST, "platform": {"os": 1, "architecture": "amd64"}}), INDEX_TYPES[0], "manifests[0].platform.os of type int"),
        (index({"platform": {"os": ["linux"]}}, media_type=["a"]), "application/json", "mediaType of type list"),
        (json.dumps({"mediaType": INDEX_TYPES[0], "manifests": "x"}).encode(), INDEX_TYPES[0], "manifests of type str"),
        (index({"digest": 5, "platform": {"os": "linux", "architecture": "amd64"}}), INDEX_TYPES[0], "manifests[0].digest of type int"),
        (index({"digest": DIGEST, "platform": "linux/amd64"}), INDEX_TYPES[0], "manifests[0].platform of type str"),
        (index(7), INDEX_TYPES[0], "manifests[0] of type int"),
        (b"[1, 2]", INDEX_TYPES[0], "not a JSON object"),
        (b"\xff\xfe not json", INDEX_TYPES[0], "not JSON it can read"),
    ],
)
def test_an_answer_not_of_the_specs_shape_is_exit_3_naming_the_field(cli: Cli, served: Served, body: bytes, content_type: str, named: str) -> None:
    served.body, served.content_type = body, content_type
    with pytest.raises(MalformedAnswer, match=named.replace("[", r"\[").replace("]", r"\]")):
        RegistryClient(retries=0).resolve(f"{served.host}/demo/app:v1", platform="linux/amd64")
    result = cli("image", "resolve", "--platform", "linux/amd64", f"{served.host}/demo/app:v1")
    assert result.exit_code == 3 and named in result.output and "Traceback" not in result.output
    assert issubclass(MalformedAnswer, RegistryUnreachable)  # what audit and capture treat as "did not answer"


def test_an_index_entry_whose_digest_is_no_sha256_digest_is_named_not_listed_as_missing(served: Served) -> None:
    served.body = index({"digest": "md5:abc", "platform": {"os": "linux", "architecture": "amd64"}})
    with pytest.raises(Exception, match="the index's manifest for linux/amd64 has digest 'md5:abc'"):
        RegistryClient(retries=0).resolve(f"{served.host}/demo/app:v1", platform="linux/amd64")


def test_platforms_match_with_and_without_a_variant() -> None:
    found = read_manifest(index({"digest": DIGEST, "platform": {"os": "linux", "architecture": "amd64", "variant": "v2"}}), "ref")
    platform = found.entries[0].platform
    assert platform == Platform("linux", "amd64", "v2") and found.platforms == ("linux/amd64/v2",)
    assert platform.matches("linux/amd64") and platform.matches("linux/amd64/v2") and not platform.matches("linux/amd")
    assert read_manifest(json.dumps({"mediaType": "application/vnd.oci.image.manifest.v1+json", "layers": []}).encode(), "ref").entries == ()


@pytest.mark.parametrize(
    "text",
    [
        "[1]",
        '{"auths": [1]}',
        '{"auths": {"127.0.0.1:1": {"auth": "!!!"}}}',  # not base64: was decoded leniently into ("", "")
        '{"auths": {"127.0.0.1:1": {"auth": "/w=="}}}',  # base64 of a byte that is no UTF-8
        '{"auths": {"127.0.0.1:1": {"auth": "' + base64.b64encode(b"no-colon").decode() + '"}}}',
        '{"auths": {"127.0.0.1:1": {"auth": 5}}}',
        "{" * 100_000,
    ],
)
def test_a_credential_file_docker_would_not_use_gives_no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    (tmp_path / "config.json").write_text(text)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert _docker_config_auth("127.0.0.1:1") is None


def test_a_credential_file_entry_that_decodes_is_used_and_the_others_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = base64.b64encode(b"ci:pa:ss").decode()
    text = json.dumps({"auths": {"127.0.0.1:1": {"auth": good}, "other:2": {"auth": "!!!"}, "third": [1]}})
    assert dict(read_docker_auths(text)) == {"127.0.0.1:1": ("ci", "pa:ss")}
    (tmp_path / "config.json").write_text(text)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path))
    assert _docker_config_auth("127.0.0.1:1") == ("ci", "pa:ss")
