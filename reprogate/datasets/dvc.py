"""`reprogate dataset from-dvc`: a manifest from what DVC already recorded, without re-hashing.

DVC writes each tracked output's md5, size and (for folders) file count into `FILE.dvc` or
`dvc.lock`. Those become md5 shards (folders as `dvc-directory` shards, verified with DVC's own
directory hash), named by their path relative to the DVC file's folder. DVC 3 marks its hashes
`hash: md5`; DVC 2 files lack it and hashed text files after converting CRLF to LF, which plain
md5 cannot reproduce, so such outputs are reported as a warning.

What is data: a `.dvc` file's outputs are (`dvc add`, `dvc import`). A `dvc.lock` describes a
pipeline, whose stage outputs are mostly not data — a trained `model.pkl`, metrics, plots — so
they never become shards by themselves. The data of a pipeline is what DVC manages among the
inputs: with `--stage NAME`, that stage's dependencies that DVC tracks (another stage's outputs,
or a `.dvc` file's); without, the pipeline's own inputs that a `.dvc` file tracks. Dependencies
DVC does not track are code and parameters, kept in git, and left out.

An import (`dvc import URL PATH`, `dvc import-url URL`) keeps where it came from: the source
repository, the revision asked for and the exact commit DVC locked (`rev_lock`), or the URL. They
go into the manifest's `source.imports` (credentials stripped from URLs), so the digest pins the
provenance as well as the bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from reprogate.core.documents import DocumentError, load_document
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.redact import strip_credentials
from reprogate.core.yamlout import FlowMap
from reprogate.datasets import manifest_digest


class DvcError(CheckFailed):
    """The DVC file has no outputs reprogate can describe."""


@dataclass
class DvcImport:
    manifest: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left out, and why


def _entries(body: Any, key: str) -> list[dict[str, Any]]:
    found = body.get(key) if isinstance(body, dict) else None
    return [e for e in found if isinstance(e, dict) and isinstance(e.get("path"), str)] if isinstance(found, list) else []


def _tracked_by_dvc_files(folder: Path) -> set[str]:
    """Paths (relative to `folder`) that a .dvc file under it tracks: data added or imported."""
    tracked: set[str] = set()
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in (".dvc", ".git"))
        for name in sorted(files):
            if not name.endswith(".dvc"):
                continue
            try:
                data = load_document(Path(base) / name).data
            except DocumentError:
                continue
            rel_base = PurePosixPath(Path(os.path.relpath(base, folder)).as_posix())
            tracked.update(PurePosixPath(os.path.normpath(rel_base / out["path"])).as_posix() for out in _entries(data, "outs"))
    return tracked


def _pipeline_data(data: dict[str, Any], folder: Path, stage: str | None, result: DvcImport) -> list[tuple[str, dict[str, Any]]]:
    """(label, entry) pairs for the data a dvc.lock's pipeline reads (see the module docstring)."""
    stages = {name: body for name, body in data["stages"].items() if isinstance(body, dict)}
    produced = {PurePosixPath(out["path"]).as_posix(): name for name, body in stages.items() for out in _entries(body, "outs")}
    tracked = _tracked_by_dvc_files(folder)
    if stage is not None:
        if stage not in stages:
            raise DvcError(f"dvc.lock has no stage {stage!r}; its stages: {', '.join(stages) or 'none'}")
        candidates = [(stage, dep) for dep in _entries(stages[stage], "deps")]
    else:
        candidates = [(name, dep) for name, body in stages.items() for dep in _entries(body, "deps") if PurePosixPath(dep["path"]).as_posix() not in produced]
    taken: dict[str, tuple[str, dict[str, Any]]] = {}
    code: list[str] = []
    for name, dep in candidates:
        path = PurePosixPath(dep["path"]).as_posix()
        if path in produced or path in tracked:
            taken.setdefault(path, (f"{name}: {path}", dep))
        elif path not in code:
            code.append(path)
    outputs = [f"{name}: {path}" for path, name in produced.items() if path not in taken]
    if code:
        result.notes.append(f"not DVC-managed, so code or parameters kept in git, not data: {', '.join(code)}")
    if outputs:
        result.notes.append(f"stage outputs, not data: {', '.join(outputs)}" + ("" if stage else " (--stage NAME takes the data a stage reads)"))
    if not taken:
        where = f"stage {stage!r} reads" if stage else "the pipeline's inputs include"
        advice = "" if stage else f"; name the stage whose inputs are the training data with --stage NAME (its stages: {', '.join(stages)})"
        raise DvcError(f"dvc.lock: {where} no data DVC manages (a .dvc file's or another stage's outputs){advice}")
    return list(taken.values())


def _imports(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Where a .dvc file's outputs were imported from (`dvc import`, `dvc import-url`)."""

    outs = [PurePosixPath(o["path"]).as_posix() for o in _entries(data, "outs")]
    found = []
    for dep in _entries(data, "deps"):
        entry: dict[str, Any] = {"out": outs[0] if len(outs) == 1 else ", ".join(outs)}
        repo = dep.get("repo")
        if isinstance(repo, dict) and isinstance(repo.get("url"), str):
            entry["repository"] = strip_credentials(repo["url"])
            entry["path"] = dep["path"]
            for key in ("rev", "rev_lock"):
                if isinstance(repo.get(key), str):
                    entry[key] = repo[key]
        elif "://" in dep["path"]:
            entry["url"] = strip_credentials(dep["path"])
            for key in ("etag", "checksum", "md5"):
                if isinstance(dep.get(key), str):
                    entry[key] = dep[key]
        else:
            continue
        found.append(entry)
    return found


def from_dvc(dvc_file: Path, output: Path, manifest_id: str | None = None, stage: str | None = None) -> DvcImport:
    doc = load_document(dvc_file)
    result = DvcImport({})
    data = doc.data
    if not isinstance(data, dict):
        raise UsageError(f"{dvc_file.name} is not a DVC file (expected a mapping)")
    if isinstance(data.get("stages"), dict):
        entries = _pipeline_data(data, dvc_file.resolve().parent, stage, result)
        imports: list[dict[str, Any]] = []
    elif isinstance(data.get("outs"), list):
        if stage is not None:
            raise DvcError(f"--stage names a stage of a dvc.lock; {dvc_file.name} is a .dvc file, whose outputs are all data")
        entries = [(str(out.get("path")), out) for out in data["outs"] if isinstance(out, dict)]
        imports = _imports(data)
    else:
        raise UsageError(f"{dvc_file.name} has neither `outs` (a .dvc file) nor `stages` (dvc.lock) as DVC writes them")
    shards = []
    for label, out in entries:
        path, md5 = out.get("path"), str(out.get("md5") or "")
        if not isinstance(path, str) or not md5:
            result.warnings.append(f"{label}: no md5 recorded (not yet computed, or a cloud-versioned output); skipped")
            continue
        if out.get("hash") != "md5":
            result.warnings.append(f"{label}: recorded by DVC 2 (no `hash: md5`); text files were hashed after CRLF->LF conversion and may verify as corrupt")
        size = out.get("size", 0)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise UsageError(f"{dvc_file.name}: {label}: size {str(size)[:40]!r} is not a byte count")
        shard = FlowMap(name=PurePosixPath(path).as_posix(), bytes=size)
        if md5.endswith(".dir"):
            shard.update(checksum="md5:" + md5[: -len(".dir")], kind="dvc-directory")
            if isinstance(out.get("nfiles"), int) and not isinstance(out["nfiles"], bool):
                shard["files"] = out["nfiles"]
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
        "source": {"tool": "dvc", "file": dvc_file.name, **({"stage": stage} if stage else {}), **({"imports": imports} if imports else {})},
        "shards": shards,
    }
    manifest["digest"] = manifest_digest(manifest)
    result.manifest = manifest
    return result
