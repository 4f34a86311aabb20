"""`reprogate dataset from-dvc`: a manifest from what DVC already recorded, without re-hashing.

DVC writes each tracked output's md5, size and (for folders) file count into `FILE.dvc` or
`dvc.lock`. Those become md5 shards (folders as `dvc-directory` shards, verified with DVC's own
directory hash), named by their path relative to the DVC file's folder. DVC 3 marks its hashes
`hash: md5`; DVC 2 files lack it and hashed text files after converting CRLF to LF, which plain
md5 cannot reproduce, so such outputs are reported as a warning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from reprogate.datasets import manifest_digest
from reprogate.core.documents import load_document
from reprogate.core.yamlout import FlowMap
from reprogate.core.errors import CheckFailed


class DvcError(CheckFailed):
    """The DVC file has no outputs reprogate can describe."""


@dataclass
class DvcImport:
    manifest: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _outs(data: Any, name: str) -> list[tuple[str, dict[str, Any]]]:
    """(stage, out) pairs from a dvc.lock (stages) or a .dvc file (outs)."""
    if not isinstance(data, dict):
        raise DvcError(f"{name} is not a DVC file (expected a mapping)")
    if isinstance(data.get("stages"), dict):
        return [(stage, out) for stage, body in data["stages"].items() if isinstance(body, dict) for out in body.get("outs") or []]
    if isinstance(data.get("outs"), list):
        return [("", out) for out in data["outs"]]
    raise DvcError(f"{name} has neither `outs` (a .dvc file) nor `stages` (dvc.lock)")


def from_dvc(dvc_file: Path, output: Path, manifest_id: str | None = None) -> DvcImport:
    doc = load_document(dvc_file)
    result = DvcImport({})
    shards = []
    for stage, out in _outs(doc.data, dvc_file.name):
        path, md5 = out.get("path"), str(out.get("md5") or "")
        label = f"{stage}: {path}" if stage else str(path)
        if not isinstance(path, str) or not md5:
            result.warnings.append(f"{label}: no md5 recorded (not yet computed, or a cloud-versioned output); skipped")
            continue
        if out.get("hash") != "md5":
            result.warnings.append(f"{label}: recorded by DVC 2 (no `hash: md5`); text files were hashed after CRLF->LF conversion and may verify as corrupt")
        shard = FlowMap(name=PurePosixPath(path).as_posix(), bytes=int(out.get("size", 0)))
        if md5.endswith(".dir"):
            shard.update(checksum="md5:" + md5[: -len(".dir")], kind="dvc-directory")
            if "nfiles" in out:
                shard["files"] = int(out["nfiles"])
        else:
            shard["checksum"] = "md5:" + md5
        shards.append(shard)
    if not shards:
        raise DvcError(f"{dvc_file.name} records no output with an md5")
    shards.sort(key=lambda s: s["name"])
    namespace = os.path.relpath(dvc_file.resolve().parent, output.resolve().parent)
    manifest: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "kind": "DatasetManifest",
        "id": manifest_id or (dvc_file.stem if dvc_file.suffix == ".dvc" else dvc_file.resolve().parent.name),
        "namespace": PurePosixPath(Path(namespace)).as_posix(),
        "algorithm": "md5",
        "source": {"tool": "dvc", "file": dvc_file.name},
        "shards": shards,
    }
    manifest["digest"] = manifest_digest(manifest)
    result.manifest = manifest
    return result
