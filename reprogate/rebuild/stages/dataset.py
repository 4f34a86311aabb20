"""dataset: fetch the shards (after the preflight proved the workers) and check them against the
manifest the record pins, by size first and then by checksum."""

from __future__ import annotations

import tempfile
from pathlib import Path

from reprogate.core.documents import DocumentError
from reprogate.core.fileio import copy_for_code, read_written_by_code
from reprogate.datasets import manifest_digest
from reprogate.datasets.manifest_header import Checked, checked
from reprogate.datasets.manifests import load_manifest
from reprogate.datasets.verify import MANIFEST_MAX_BYTES, VerifyOptions, verify
from reprogate.rebuild.stages.artifacts import copy_in
from reprogate.rebuild.stages.base import StageResult, failed, passed, skipped
from reprogate.rebuild.state import RebuildJob, RebuildState


def _names(manifest: Checked) -> list[str]:
    return [s.name for s in manifest.shards()] + [f.name for f in manifest.header.files]


def _fetch_shards(job: RebuildJob, manifest_rel: str, manifest: Checked) -> int:
    """Copy the shards that live beside the manifest in the repository; remote ones stay put."""
    namespace = manifest.header.namespace
    if namespace and "://" in namespace:
        return 0  # remote shards: verified where they are
    folder = Path(manifest_rel).parent / (namespace or ".")
    names = _names(manifest)
    for name in names:
        copy_in(job, (folder / name).as_posix())
    return len(names)


def _from_copy(job: RebuildJob, manifest_rel: str, manifest: Checked, root: str) -> tuple[int, str]:
    """(files copied, where verify resolves names) for `--dataset-root`: a local copy is copied into
    the work folder where the repository's shards would be (so the ranks read it as they would);
    a URL is verified where it is."""
    if "://" in root and not root.startswith("file://"):
        return 0, root
    source = Path(root.removeprefix("file://")).resolve()
    namespace = manifest.header.namespace
    local = not (namespace and "://" in namespace)
    target = (job.workdir / Path(manifest_rel).parent / (namespace if local and namespace else ".")).resolve()
    names = _names(manifest)
    for name in names:
        origin = (source / name).resolve()
        if source not in origin.parents:
            raise FileNotFoundError(f"{name} resolves outside --dataset-root {root}")
        if not origin.is_file():
            raise FileNotFoundError(f"{name} is not under --dataset-root {root}")
        copy_for_code(origin, target / name, job.workdir)  # a link a waiting rank left there is replaced, not followed
    return len(names), str(target)


def dataset(state: RebuildState) -> StageResult:
    job = state.job
    section = job.record.dataset
    if section is not None and not section.used:
        return skipped(f"the record declares no dataset ({section.reason or ''})")
    manifest_rel = section.manifest.path if section is not None and section.manifest is not None else None
    if manifest_rel is None:
        return failed(
            "the record's dataset is not addressed by a manifest file in the repository; inline datasets are not fetched in this version", exit_code=2
        )
    try:
        raw = read_written_by_code(job.workdir / manifest_rel, MANIFEST_MAX_BYTES, within=job.workdir)
    except OSError as exc:
        return failed(f"cannot read the dataset manifest {manifest_rel}: {exc.strerror or exc}")
    if raw is None:
        return failed(f"the dataset manifest {manifest_rel} is larger than {MANIFEST_MAX_BYTES:,} bytes")
    with tempfile.TemporaryDirectory(prefix="reprogate-manifest-") as private:
        # The manifest as read once, outside the work folder: this stage runs while the
        # preflight's ranks wait for the run, and they can write into the work folder.
        manifest = Path(private) / Path(manifest_rel).name
        manifest.write_bytes(raw)
        return _judge(job, manifest_rel, manifest)


def _judge(job: RebuildJob, manifest_rel: str, manifest: Path) -> StageResult:
    doc = load_manifest(manifest)  # a JSON Lines manifest's shards are read as they are iterated
    pinned = job.record.dataset.manifest.digest if job.record.dataset is not None and job.record.dataset.manifest is not None else None
    found = manifest_digest(doc.data)
    if found != pinned:
        return failed(f"the dataset manifest {manifest_rel} is {found}, the record pins {pinned}")
    try:
        loaded = checked(doc)
    except DocumentError as exc:
        return failed(f"the dataset manifest {manifest_rel} is not of a manifest's shape: {exc.message}")
    header = loaded.header
    root = job.options.dataset_root
    try:
        copied, where = _from_copy(job, manifest_rel, loaded, root) if root is not None else (_fetch_shards(job, manifest_rel, loaded), None)
    except OSError as exc:
        return failed(f"cannot fetch a shard of dataset {header.id}: {exc}")
    namespace = header.namespace
    local = None if namespace and "://" in str(namespace) else str(job.workdir / Path(manifest_rel).parent / (namespace or "."))
    report = verify(manifest, VerifyOptions(quiet=True, root=where if where is not None else local))
    problems = {k: v for k, v in report.by_kind.items() if v}
    if report.exit_code != 0:
        listed = "; ".join(f"{k}: {', '.join(v[:3])}" for k, v in problems.items()) or report.summary
        return failed(f"dataset {header.id} does not match its manifest ({listed})", exit_code=3 if report.exit_code == 3 else 1, problems=problems)
    source = f" from --dataset-root {root}" if root is not None else ""
    return passed(f"dataset {header.id}: fetched {copied} file(s){source}; {report.checked} match sizes and {header.algorithm} checksums")
