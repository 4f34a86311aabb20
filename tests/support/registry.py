"""A real registry for tests: Debian's docker-registry on 127.0.0.1, images pushed with skopeo.

Images are built here as OCI layouts (deterministic: one tar layer with mtime 0, gzip mtime 0),
so a digest is reproducible and the same content always pushes to the same manifest.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


def _blob(layout: Path, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def _image(layout: Path, payload: str, arch: str) -> dict[str, object]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("payload.txt")
        data = payload.encode()
        info.size, info.mtime = len(data), 0
        tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    layer = _blob(layout, gzip.compress(tar_bytes, mtime=0))
    config = _blob(
        layout,
        json.dumps(
            {"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(tar_bytes).hexdigest()}"]}}, sort_keys=True
        ).encode(),
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}],
    }
    return {
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        **_blob(layout, json.dumps(manifest, sort_keys=True).encode()),
        "platform": {"os": "linux", "architecture": arch},
    }


def oci_layout(layout: Path, tag: str, payload: str, platforms: tuple[str, ...] = ("amd64",)) -> None:
    """An OCI image layout with one image, or an index over several architectures."""
    shutil.rmtree(layout, ignore_errors=True)
    layout.mkdir(parents=True)
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    manifests = [_image(layout, f"{payload} {arch}", arch) for arch in platforms]
    if len(platforms) > 1:
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}
        top = {"mediaType": "application/vnd.oci.image.index.v1+json", **_blob(layout, json.dumps(index, sort_keys=True).encode())}
    else:
        top = {k: v for k, v in manifests[0].items() if k != "platform"}
    top["annotations"] = {"org.opencontainers.image.ref.name": tag}
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [top]}))


@dataclass
class Registry:
    host: str
    process: subprocess.Popen[bytes]
    folder: Path
    user: str | None = None
    password: str | None = None

    def push(self, name: str, tag: str, payload: str, platforms: tuple[str, ...] = ("amd64",)) -> None:
        layout = self.folder / f"layout-{name.replace('/', '_')}-{tag}"
        oci_layout(layout, tag, payload, platforms)
        argv = ["skopeo", "copy", "-q", "--dest-tls-verify=false"]
        if len(platforms) > 1:
            argv.append("--all")
        if self.user:
            argv.append(f"--dest-creds={self.user}:{self.password}")
        subprocess.run([*argv, f"oci:{layout}:{tag}", f"docker://{self.host}/{name}:{tag}"], check=True, capture_output=True)

    def inspect_digest(self, ref: str) -> str:
        argv = ["skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}"]
        if self.user:
            argv.append(f"--creds={self.user}:{self.password}")
        return subprocess.run([*argv, f"docker://{self.host}/{ref}"], check=True, capture_output=True, text=True).stdout.strip()

    def delete(self, name: str, digest: str) -> None:
        request = urllib.request.Request(f"http://{self.host}/v2/{name}/manifests/{digest}", method="DELETE")
        urllib.request.urlopen(request, timeout=5).close()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def start_registry(folder: Path, user: str | None = None, password: str | None = None) -> Registry:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        "version: 0.1",
        "log: {level: error}",
        f"storage: {{filesystem: {{rootdirectory: {folder / 'storage'}}}, delete: {{enabled: true}}}}",
        f"http: {{addr: 127.0.0.1:{port}, secret: test-only-secret}}",
    ]
    if user:
        hashed = subprocess.run(["htpasswd", "-Bbn", user, password or ""], check=True, capture_output=True, text=True).stdout.strip()
        (folder / "htpasswd").write_text(hashed + "\n")
        lines.append(f"auth: {{htpasswd: {{realm: test-registry, path: {folder / 'htpasswd'}}}}}")
    (folder / "config.yml").write_text("\n".join(lines) + "\n")
    log = open(folder / "registry.log", "wb")
    process = subprocess.Popen(
        ["docker-registry", "serve", str(folder / "config.yml")], stdout=log, stderr=log, env={**os.environ, "REGISTRY_STORAGE_DELETE_ENABLED": "true"}
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1).close()
            break
        except urllib.error.HTTPError:
            break  # 401 from an authenticated registry: it is up
        except OSError:
            time.sleep(0.05)
    else:
        process.kill()
        raise RuntimeError(f"docker-registry did not start: {(folder / 'registry.log').read_text()}")
    return Registry(f"127.0.0.1:{port}", process, folder, user, password)
