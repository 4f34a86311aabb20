"""The machine: OS from os-release, kernel, CPU model, and the hostname only as a hash."""

from __future__ import annotations

import hashlib
import platform
import socket
from pathlib import Path
from typing import Any

from reprogate.capture.base import CaptureContext

SECTION = "host"


def os_release(path: Path = Path("/etc/os-release")) -> dict[str, str]:
    values: dict[str, str] = {}
    try:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip():
                values[key.strip()] = value.strip().strip('"').strip("'")
    except OSError:
        pass
    return values


def cpu_model(path: Path = Path("/proc/cpuinfo")) -> str | None:
    try:
        for line in path.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def capture(ctx: CaptureContext) -> dict[str, Any]:
    section: dict[str, Any] = {"present": True}
    release = os_release()
    if release:
        section["os"] = {
            k: v for k, v in (("id", release.get("ID")), ("version_id", release.get("VERSION_ID")), ("pretty_name", release.get("PRETTY_NAME"))) if v
        }
    section["kernel"] = platform.release()
    section["hostname_sha256"] = "sha256:" + hashlib.sha256(socket.gethostname().encode()).hexdigest()
    model = cpu_model()
    if model:
        section["cpu_model"] = model
    return section
