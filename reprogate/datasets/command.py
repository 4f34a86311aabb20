"""`reprogate dataset manifest|verify|from-dvc`: describe shards, check them, import DVC's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import UsageError
from reprogate.datasets.build import BuildError, BuildOptions, build_manifest, write_manifest
from reprogate.datasets.dvc import DvcError, from_dvc
from reprogate.datasets.manifests import load_manifest
from reprogate.datasets.verify import VerifyOptions, verify
from reprogate.output.findings import render_verify
from reprogate.output.result import CommandResult

LARGE_MANIFEST = 100_000  # shards beyond which a YAML or JSON manifest is slow to read back


def manifest_command(
    root: Path,
    output: Path,
    include: list[str],
    exclude: list[str],
    algorithm: str,
    jobs: int | None,
    quiet: bool,
    manifest_id: str | None,
    version: str | None,
    namespace: str | None,
    side_files: list[str],
    base: Path | None,
) -> CommandResult:

    pairs = []
    for item in side_files:
        role, sep, name = item.partition("=")
        if not sep:
            raise UsageError(f"--file {item!r}: write ROLE=PATH")
        pairs.append((role, name))
    base_data: Any = load_manifest(base).data if base else {}  # any form; only its fields are kept
    if base is not None and (not isinstance(base_data, dict) or base_data.get("kind") != "DatasetManifest"):
        raise UsageError(f"--base {base}: not a dataset manifest (kind: DatasetManifest)")
    options = BuildOptions(
        root, output, include, exclude, algorithm, jobs, quiet, manifest_id, version, namespace, pairs, base_data if isinstance(base_data, dict) else {}
    )
    try:
        built = build_manifest(options)  # writes the manifest as it hashes
    except BuildError as exc:
        raise BuildError(f"{exc.message}; nothing written") from None
    hint = []
    if built.form != "jsonl" and built.shards > LARGE_MANIFEST:
        hint.append(f"hint: for {built.shards:,} shards write a .jsonl manifest (JSON Lines): verify and validate read it in constant memory")
    return CommandResult(ExitCode.OK, [f"wrote {output}: {built.shards:,} shard(s), {built.bytes:,} bytes, digest {built.digest}"], hint)


def verify_command(
    manifest: Path, root: str | None, fmt: str, jobs: int | None, timeout: float, retries: int, keep_going: bool, quiet: bool, max_time: float = 6 * 3600.0
) -> CommandResult:

    return render_verify(verify(manifest, VerifyOptions(root, jobs, quiet, timeout, retries, keep_going, max_time=max_time)), fmt)


def from_dvc_command(dvc_file: Path, output: Path, manifest_id: str | None, stage: str | None = None) -> CommandResult:

    try:
        found = from_dvc(dvc_file, output, manifest_id, stage)
    except DvcError as exc:
        raise DvcError(f"{exc.message}; nothing written") from None
    write_manifest(found.manifest, output, f"reprogate dataset from-dvc {dvc_file.name}")
    return CommandResult(
        ExitCode.OK,
        [f"wrote {output}: {len(found.manifest['shards'])} output(s) from {dvc_file}, digest {found.manifest['digest']}"],
        [*(f"note: {n}" for n in found.notes), *(f"warning: {w}" for w in found.warnings)],
    )
