"""Whether the job runs in a container, which image (by digest), and what the runtime mounted.

The image digest comes, in this order, from `--image REF@sha256:...`, the REPROGATE_IMAGE
variable, or the Docker engine (docker SDK) when its socket is reachable; a tag alone is never
taken as an identity. The mount inventory lists mount points and sources from
/proc/self/mountinfo, never file contents, so mounted driver libraries, plugins, configuration
and secrets are visible as facts of the run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from reprogate.capture.base import CaptureContext
from reprogate.core.errors import ReprogateError
from reprogate.images.engine import connect

SECTION = "container"
_DIGEST_REF = re.compile(
    r"^(?P<repo>(?:(?P<registry>[A-Za-z0-9.-]+(?::[0-9]+)?)/)?[a-z0-9]+(?:[._/-][a-z0-9]+)*)(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?@(?P<digest>sha256:[0-9a-f]{64})$"
)
# Filesystems that every container has and that say nothing about the run.
_BORING_FS = {
    "proc",
    "sysfs",
    "cgroup",
    "cgroup2",
    "devpts",
    "mqueue",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "hugetlbfs",
    "autofs",
    "binfmt_misc",
    "rpc_pipefs",
    "nsfs",
}


def in_container(root: Path = Path("/")) -> str | None:
    """Why we believe this is a container, or None."""
    if (root / ".dockerenv").exists():
        return "/.dockerenv exists (Docker)"
    if (root / "run/.containerenv").exists():
        return "/run/.containerenv exists (Podman)"
    if os.environ.get("container"):
        return f"container={os.environ['container']} is set"
    try:
        cgroup = (root / "proc/1/cgroup").read_text(errors="replace")
    except OSError:
        cgroup = ""
    for marker in ("docker", "kubepods", "containerd", "libpod", "lxc"):
        if marker in cgroup:
            return f"/proc/1/cgroup mentions {marker}"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "KUBERNETES_SERVICE_HOST is set (Kubernetes pod)"
    return None


def _kind(mount_point: str, source: str, fstype: str) -> str:
    text = f"{mount_point} {source}".lower()
    if "secret" in text or mount_point.startswith(("/run/secrets", "/var/run/secrets")):
        return "secret"
    if mount_point.startswith("/dev"):
        return "device"
    if re.search(r"\.so(\.|$)|/lib(64)?/|/usr/lib", mount_point):
        return "library"
    if "nvidia" in text or "plugin" in text or "hook" in text:
        return "plugin"
    if mount_point.startswith("/etc") or mount_point.endswith((".conf", ".cfg", ".ini", ".yaml", ".json", "resolv.conf", "hosts", "hostname")):
        return "config"
    if fstype in ("nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "fuse", "overlay") or mount_point.startswith(
        ("/data", "/mnt", "/datasets", "/scratch", "/lustre")
    ):
        return "data"
    return "other"


def mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[dict[str, Any]]:
    """Mount points with their source and kind, from mountinfo (proc(5) format)."""
    found = []
    try:
        lines = mountinfo.read_text(errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            continue
        mount_point = fields[4].replace("\\040", " ")
        fstype, device = tail[0], tail[1]
        if fstype in _BORING_FS or mount_point == "/":
            continue
        root_in_source = fields[3]
        source = device if root_in_source == "/" else f"{device}:{root_in_source}"
        found.append({"destination": mount_point, "source": source, "kind": _kind(mount_point, source, fstype), "read_only": "ro" in fields[5].split(",")})
    return found


def _from_docker(ctx: CaptureContext) -> tuple[dict[str, Any], str]:
    """(facts from the Docker engine, reason if none)."""

    try:
        connected = connect(3)
    except ReprogateError as exc:
        return {}, exc.message
    try:
        client = connected.client
        product, _, release = connected.name.rpartition(" ")
        facts: dict[str, Any] = {"runtime": {"name": "podman" if product.startswith("Podman") else "docker", "version": release}}
        hostname = os.uname().nodename
        try:
            image = client.containers.get(hostname).image
            digests = image.attrs.get("RepoDigests") or []
            if digests:
                facts["image"] = digests[0]
        except Exception:  # noqa: BLE001 - not our container, or no permission
            pass
        return facts, ""
    except Exception as exc:  # noqa: BLE001 - no socket, no permission, engine down
        return {}, f"Docker engine not reachable ({type(exc).__name__})"


def capture(ctx: CaptureContext) -> dict[str, Any]:
    why = in_container()
    image = ctx.image or ctx.env.get("REPROGATE_IMAGE")
    docker_facts, docker_reason = ({}, "") if image else _from_docker(ctx)
    image = image or docker_facts.get("image")
    if why is None and not image:
        return {"used": False, "reason": "not running in a container (no /.dockerenv, /run/.containerenv, container cgroup or Kubernetes variables)"}
    section: dict[str, Any] = {}
    match = _DIGEST_REF.match(image or "")
    if match:
        repo = match.group("repo")
        registry = match.group("registry") if match.group("registry") and ("." in match.group("registry") or ":" in match.group("registry")) else "docker.io"
        section["registry"] = registry
        section["repository"] = repo[len(registry) + 1 :] if repo.startswith(registry + "/") else (repo if "/" in repo else f"library/{repo}")
        if match.group("tag"):
            section["tag"] = match.group("tag")
        section["digest"] = match.group("digest")
    else:
        section["digest_unknown"] = (
            f"image reference {image!r} carries no @sha256 digest"
            if image
            else (
                "no image digest: pass --image REF@sha256:..., set REPROGATE_IMAGE, or let "
                f"reprogate reach the Docker engine ({docker_reason or 'engine gave none'})"
            )
        )
    section["detected"] = why or "image given"
    if "runtime" in docker_facts:
        section["runtime"] = docker_facts["runtime"]
    section["inventory"] = {"mounts": mounts()}
    return section
