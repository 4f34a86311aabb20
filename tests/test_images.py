"""Images by digest against a real registry (docker-registry + skopeo on 127.0.0.1)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from support import edit_record, require_tool
from support.registry import Registry, start_registry

from reprogate.images.errors import ImageError, RegistryUnreachable
from reprogate.images.registry import RegistryClient, parse_reference

Cli = Callable[..., Result]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    require_tool("docker-registry")
    require_tool("skopeo")
    reg = start_registry(tmp_path / "registry")
    yield reg
    reg.stop()


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Registry]:
    require_tool("docker-registry")
    require_tool("skopeo")
    require_tool("htpasswd")
    reg = start_registry(tmp_path / "secured", user="ci", password="s3cret-pass")
    yield reg
    reg.stop()


@pytest.mark.parametrize(
    "ref, expected",
    [
        ("python", ("docker.io", "library/python", "latest", None)),
        ("python:3.11-slim", ("docker.io", "library/python", "3.11-slim", None)),
        ("org/app:v1", ("docker.io", "org/app", "v1", None)),
        ("ghcr.io/org/app", ("ghcr.io", "org/app", "latest", None)),
        ("localhost:5000/app:v2", ("localhost:5000", "app", "v2", None)),
        ("registry.example.com:5000/team/app:v3@sha256:" + "a" * 64, ("registry.example.com:5000", "team/app", "v3", "sha256:" + "a" * 64)),
        ("nvcr.io/nvidia/cuda@sha256:" + "b" * 64, ("nvcr.io", "nvidia/cuda", None, "sha256:" + "b" * 64)),
    ],
)
def test_references_parse_like_docker(ref: str, expected: tuple[str, str, str | None, str | None]) -> None:
    parsed = parse_reference(ref)
    assert (parsed.registry, parsed.repository, parsed.tag, parsed.digest) == expected


def test_resolve_equals_what_skopeo_reports(cli: Cli, registry: Registry) -> None:
    registry.push("demo/app", "v1", "payload A")
    result = cli("image", "resolve", f"{registry.host}/demo/app:v1")
    assert result.exit_code == 0, result.output
    assert result.output.split()[0] == f"{registry.host}/demo/app@{registry.inspect_digest('demo/app:v1')}"


def test_a_moved_tag_keeps_the_old_digest_resolvable_until_deleted(cli: Cli, registry: Registry, project: Path) -> None:
    registry.push("demo/app", "v1", "payload A")
    old = registry.inspect_digest("demo/app:v1")
    registry.push("demo/app", "v1", "payload B")
    new = registry.inspect_digest("demo/app:v1")
    client = RegistryClient()
    assert old != new and client.resolve(f"{registry.host}/demo/app:v1").digest == new
    assert client.resolve(f"{registry.host}/demo/app@{old}").digest == old
    record = project / "records" / "behavioral.yaml"
    edit_record(record, lambda r: r["container"].update(registry=registry.host, repository="demo/app", tag="v1", digest=old))
    moved = cli("image", "verify", str(record))
    assert moved.exit_code == 0 and "present" in moved.output and f"has moved to {new}" in moved.output
    registry.delete("demo/app", old)
    missing = cli("image", "verify", str(record))
    assert missing.exit_code == 1 and "MISSING" in missing.output


def test_multi_platform_index(cli: Cli, registry: Registry) -> None:
    registry.push("demo/multi", "v1", "payload", platforms=("amd64", "arm64"))
    found = RegistryClient().resolve(f"{registry.host}/demo/multi:v1", platform="linux/arm64")
    assert found.digest == registry.inspect_digest("demo/multi:v1")
    assert found.platforms == ("linux/amd64", "linux/arm64") and found.platform_digest and found.platform_digest != found.digest
    result = cli("image", "resolve", "--platform", "linux/riscv64", f"{registry.host}/demo/multi:v1")
    assert result.exit_code == 1 and "no manifest for platform linux/riscv64" in result.output


def test_plain_messages_for_missing_repository_and_tag(registry: Registry) -> None:
    registry.push("demo/app", "v1", "payload A")
    client = RegistryClient()
    with pytest.raises(ImageError, match="no such repository"):
        client.resolve(f"{registry.host}/demo/nothing:v1")
    with pytest.raises(ImageError, match="no such tag"):
        client.resolve(f"{registry.host}/demo/app:v9")


def test_basic_auth_with_credentials_and_a_wrong_password(registry: Registry, secured: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    secured.push("demo/private", "v1", "secret payload")
    expected = secured.inspect_digest("demo/private:v1")
    monkeypatch.setenv("REPROGATE_REGISTRY_USERNAME", "ci")
    monkeypatch.setenv("REPROGATE_REGISTRY_PASSWORD", "s3cret-pass")
    assert RegistryClient().resolve(f"{secured.host}/demo/private:v1").digest == expected
    monkeypatch.setenv("REPROGATE_REGISTRY_PASSWORD", "wrong")
    with pytest.raises(ImageError, match="no access"):
        RegistryClient().resolve(f"{secured.host}/demo/private:v1")


def test_stopped_registry_is_exit_3_within_the_timeout(registry: Registry) -> None:
    registry.push("demo/app", "v1", "payload A")
    registry.stop()
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "image", "resolve", "--timeout", "1", "--retries", "1", f"{registry.host}/demo/app:v1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 3 and "unreachable" in done.stdout
    with pytest.raises(RegistryUnreachable):
        RegistryClient(timeout=1, retries=0).resolve(f"{registry.host}/demo/app:v1")


def test_dockerfile_pins_rewrites_literal_references_and_keeps_comments(cli: Cli, registry: Registry, tmp_path: Path) -> None:
    registry.push("demo/base", "3.11", "base image")
    digest = registry.inspect_digest("demo/base:3.11")
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"# the build image\nFROM {registry.host}/demo/base:3.11 AS build\nRUN echo hi  # keep me\nFROM build\n")
    listed = cli("dockerfile", "pins", str(dockerfile))
    assert listed.exit_code == 0 and f"-> {digest} (not pinned)" in listed.output
    assert cli("dockerfile", "pins", "--write", str(dockerfile)).exit_code == 0
    assert dockerfile.read_text() == f"# the build image\nFROM {registry.host}/demo/base:3.11@{digest} AS build\nRUN echo hi  # keep me\nFROM build\n"
    assert f"-> {digest} (pinned)" in cli("dockerfile", "pins", str(dockerfile)).output


def test_capture_fills_the_digest_from_a_tag(cli: Cli, registry: Registry, tmp_path: Path) -> None:
    registry.push("demo/train", "v3", "training image")
    digest = registry.inspect_digest("demo/train:v3")
    out = tmp_path / "capture.yaml"
    result = cli("capture", "--no-framework", "--image", f"{registry.host}/demo/train:v3", "-o", str(out), "--root", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    from reprogate.core.documents import load_document

    container = load_document(out).data["container"]
    assert container["digest"] == digest and container["tag"] == "v3" and container["registry"] == registry.host


def test_verify_pull_says_when_there_is_no_docker_engine(cli: Cli, project: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    registry.push("demo/app", "v1", "payload A")
    record = project / "records" / "behavioral.yaml"
    edit_record(record, lambda r: r["container"].update(registry=registry.host, repository="demo/app", tag="v1", digest=registry.inspect_digest("demo/app:v1")))
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = cli("image", "verify", "--pull", str(record))
    assert result.exit_code == 3 and "nothing was pulled" in result.output


def test_audit_reports_a_vanished_image_and_expired_dates(cli: Cli, registry: Registry, project: Path) -> None:
    registry.push("demo/app", "v1", "payload A")
    digest = registry.inspect_digest("demo/app:v1")
    record = project / "records" / "behavioral.yaml"
    edit_record(
        record,
        lambda r: (
            r["container"].update(registry=registry.host, repository="demo/app", tag="v1", digest=digest),
            r["contract"].update(lifetime={"expires": "2027-01-01"}),
        ),
    )
    fine = cli("audit", str(record))  # s3:// checkpoint and trace: listed, not counted
    assert fine.exit_code == 0, fine.output
    assert "present" in fine.output and "not checked" in fine.output and "days left" in fine.output
    registry.delete("demo/app", digest)
    edit_record(record, lambda r: r["contract"].update(lifetime={"expires": "2020-01-01"}))
    gone = cli("audit", str(record))
    assert gone.exit_code == 1 and "MISSING" in gone.output and "contract lifetime expired on 2020-01-01" in gone.output


@pytest.mark.parametrize(
    ("server", "libpod", "expected"),
    [
        ("Libpod/4.3.1 (linux)", "4.3.1", "Podman Engine 4.3.1"),
        ("Docker/27.3.1 (linux)", None, "Docker Engine 27.3.1"),
        ("Libpod/", "5.2.0", "Podman Engine 5.2.0"),
        ("containerd-shim/2.0", None, "containerd-shim 2.0"),
        ("", None, "container engine (API 1.41)"),
    ],
)
def test_an_engine_is_named_from_its_ping_headers(server: str, libpod: str | None, expected: str) -> None:
    from reprogate.images.engine import engine_name

    assert engine_name(server, libpod, "1.41") == expected


@pytest.mark.parametrize(
    ("ours", "theirs", "spoken"),
    [("1.45", "1.41", "1.41"), ("1.45", "1.47", "1.45"), ("1.45", "", "1.45"), ("1.45", "v2", "1.45"), ("1.45", "1.9", "1.9")],
)
def test_the_client_speaks_the_older_api_version(ours: str, theirs: str, spoken: str) -> None:
    from reprogate.images.engine import older

    assert older(ours, theirs) == spoken
