"""dataset: fetch the shards (after the preflight proved the workers) and check them against the
manifest the record pins, by size first and then by checksum."""

from __future__ import annotations

from pathlib import Path

from reprogate.datasets import manifest_digest
from reprogate.datasets.manifests import load_manifest
from reprogate.rebuild.context import RebuildContext, StageResult, failed, passed, skipped
from reprogate.rebuild.stages.artifacts import copy_in


def _fetch_shards(ctx: RebuildContext, manifest_rel: str, data: dict) -> int:
    """Copy the shards that live beside the manifest in the repository; remote ones stay put."""
    namespace = data.get("namespace")
    if namespace and "://" in str(namespace):
        return 0  # remote shards: verified where they are
    folder = Path(manifest_rel).parent / (namespace or ".")
    names = [s["name"] for s in data.get("shards", [])] + [f["name"] for f in data.get("files", [])]
    for name in names:
        copy_in(ctx, (folder / name).as_posix())
    return len(names)


def dataset(ctx: RebuildContext) -> StageResult:
    section = ctx.section("dataset")
    if isinstance(section, dict) and section.get("used") is False:
        return skipped(f"the record declares no dataset ({section.get('reason', '')})")
    manifest_rel = ctx.section("dataset", "manifest", "path")
    if not isinstance(manifest_rel, str):
        return failed(
            "the record's dataset is not addressed by a manifest file in the repository; inline datasets are not fetched in this version", exit_code=2
        )
    from reprogate.datasets.verify import VerifyOptions, verify

    manifest = ctx.workdir / manifest_rel
    data = load_manifest(manifest).data  # a JSON Lines manifest's shards are read as they are iterated
    pinned = ctx.section("dataset", "manifest", "digest")
    found = manifest_digest(data)
    if found != pinned:
        return failed(f"the dataset manifest {manifest_rel} is {found}, the record pins {pinned}")
    try:
        copied = _fetch_shards(ctx, manifest_rel, data)
    except OSError as exc:
        return failed(f"cannot fetch a shard of dataset {data.get('id')}: {exc}")
    report = verify(manifest, VerifyOptions(quiet=True))
    problems = {k: v for k, v in report.by_kind.items() if v}
    if report.exit_code != 0:
        listed = "; ".join(f"{k}: {', '.join(v[:3])}" for k, v in problems.items()) or report.summary
        return failed(f"dataset {data.get('id')} does not match its manifest ({listed})", exit_code=3 if report.exit_code == 3 else 1, problems=problems)
    return passed(f"dataset {data.get('id')}: fetched {copied} file(s); {report.checked} match sizes and {data.get('algorithm')} checksums")
