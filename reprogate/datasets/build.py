"""`reprogate dataset manifest`: walk a dataset, hash every shard, write the manifest atomically.

The same bytes always give the same manifest text and digest: shards are sorted by name, no
timestamp is written, and fields a person added to a previous manifest (`--base`) are carried
over, so rebuilding an unchanged dataset changes nothing a record pins. The output's suffix picks
the form: `.jsonl` (JSON Lines, for large datasets), `.json`, or YAML.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from reprogate.core.errors import CheckFailed
from reprogate.core.pool import ordered_map, use_processes, worker_count
from reprogate.core.progress import Progress
from reprogate.core.yamlout import FlowMap
from reprogate.datasets.hashing import (
    BATCH_BYTES,
    BATCH_FILES,
    PER_FILE_WEIGHT,
    PROCESS_MIN_FILES,
    UNKNOWN_SIZE,
    digest_named,
    hash_files,
    hasher_factory,
)
from reprogate.datasets.manifest_writer import ManifestWriter, render_files
from reprogate.datasets.names import UnsafeName, local_path
from reprogate.datasets.select import Walk

# Fields a build computes; everything else in a --base manifest is a person's and is kept.
COMPUTED = {"apiVersion", "kind", "algorithm", "selection", "shards", "files", "digest"}
ROLES = ("tokenizer", "vocabulary", "merges", "normalization", "filter", "other")


class BuildError(CheckFailed):
    """The dataset cannot be described safely (links out of the root, unreadable files)."""


@dataclass
class BuildOptions:
    root: Path
    output: Path
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    algorithm: str = "sha256"
    jobs: int | None = None
    quiet: bool = False
    id: str | None = None
    version: str | None = None
    namespace: str | None = None
    side_files: list[tuple[str, str]] = field(default_factory=list)  # (role, name under root)
    base: dict[str, Any] = field(default_factory=dict)


@dataclass
class BuildSummary:
    output: Path
    shards: int
    bytes: int
    digest: str
    form: str  # yaml, json or jsonl


def manifest_fields(options: BuildOptions) -> dict[str, Any]:
    """Every field of the manifest but shards, side files and digest, in the order written."""
    fields: dict[str, Any] = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest"}
    fields["id"] = options.id or options.base.get("id") or options.root.resolve().name
    for key, value in options.base.items():
        if key not in COMPUTED and key != "id":
            fields[key] = value
    if options.version:
        fields["version"] = options.version
    if options.namespace:
        fields["namespace"] = options.namespace
    fields["algorithm"] = options.algorithm
    fields["selection"] = {k: v for k, v in (("include", options.include), ("exclude", options.exclude)) if v}
    return fields


def _side_files(options: BuildOptions) -> list[dict[str, Any]]:
    """The side files (tokenizer, vocabulary...) with sizes and checksums; hashed before the shards
    because the header of a JSON Lines manifest carries them."""
    paths = []
    for role, name in options.side_files:
        if role not in ROLES:
            raise BuildError(f"unknown side-file role {role!r}; choose one of {', '.join(ROLES)}")
        try:
            paths.append(local_path(options.root, name))
        except UnsafeName as exc:
            raise BuildError(str(exc)) from None
        if not paths[-1].is_file():
            raise BuildError(f"side file {name!r} does not exist under {options.root}")
    digests = hash_files(paths, options.algorithm, options.jobs)
    for digest in digests:
        if digest.error:
            raise BuildError(f"cannot read {digest.path}: {digest.error}")
    return [FlowMap(role=role, name=name, bytes=d.size, checksum=d.checksum) for (role, name), d in zip(options.side_files, digests, strict=True)]


def build_manifest(options: BuildOptions, written_by: str = "reprogate dataset manifest") -> BuildSummary:
    """Hash the dataset and write the manifest to options.output, atomically, a shard at a time.

    The walk, the hashing and the writing are one stream: memory holds one folder's names and
    the batches in flight, never the whole dataset, so a million shards fit in a small process.
    """
    root = options.root
    files = _side_files(options)
    side_names = {name for _, name in options.side_files}
    walk = Walk(root, options.include, options.exclude, skip={options.output}, sizes=False, temporaries_of=options.output)  # workers learn sizes as they read
    runs = walk.name_runs() if not side_names else ([n for n in run if n not in side_names] for run in walk.name_runs())
    fields = manifest_fields(options)
    progress = Progress("hashing", None, None, options.quiet)
    try:
        with ManifestWriter(options.output, fields, files, _comment(fields["id"], written_by)) as writer:
            for names, (count, total, problems, canonical, text) in _hashed(str(walk.root), runs, options.algorithm, options.jobs, writer.form):
                progress.advance(total, count)
                if problems:
                    first = min(problems)
                    kind, detail = problems[first]
                    if kind == NOT_UNICODE:
                        raise BuildError(f"{names[first]!r}: the file name is not valid UTF-8, so no manifest can name it; rename it or --exclude it")
                    raise BuildError(f"cannot read {root / names[first]}: {detail or kind}")
                writer.add_rendered(canonical, text, count, total)
            if walk.outside:
                shown = ", ".join(walk.outside[:5]) + (" ..." if len(walk.outside) > 5 else "")
                raise BuildError(f"{len(walk.outside)} symlink(s) lead outside the dataset root: {shown}; exclude them or copy the data in")
    finally:
        progress.close()
    return BuildSummary(options.output, writer.count, writer.bytes, writer.value, writer.form)


NOT_UNICODE = "not-unicode"  # a batch's problem: a file name with undecodable bytes
# (count, bytes, {index: (problem, detail)}, canonical text, text in the manifest's form)
Rendered = tuple[int, int, dict[int, tuple[str, str]], bytes, bytes]


def hash_and_render(root: str, names: list[str], algorithm: str, form: str) -> Rendered:
    """A batch of a build in a worker: hash the files and render their shards in the manifest's
    form, so the writing process only appends bytes (a per-shard step there would leave the
    workers waiting). Nothing is rendered when a file could not be read, or a name is not valid
    Unicode (NOT_UNICODE: undecodable bytes in the file system, which no manifest can name)."""
    blob, sizes, problems = digest_named(root, names, algorithm)
    if problems:
        return len(names), 0, problems, b"", b""
    text = blob.hex()
    width = len(text) // len(names) if names else 0
    prefix = algorithm + ":"
    checksums = [prefix + text[i : i + width] for i in range(0, len(text), width)]
    try:
        canonical, rendered = render_files(form, names, sizes, checksums)
    except UnicodeEncodeError:
        bad = next(i for i, name in enumerate(names) if not _encodes(name))
        return len(names), 0, {bad: (NOT_UNICODE, "")}, b"", b""
    return len(names), sum(sizes), {}, canonical, rendered


def _hashed(root: str, runs: Iterator[list[str]], algorithm: str, jobs: int | None, form: str) -> Iterator[tuple[list[str], Rendered]]:
    """(names, Rendered) of each batch of the walk's names, in order, by `jobs` workers (processes
    past PROCESS_MIN_FILES names, else threads or here). A batch holds about BATCH_BYTES by the
    mean size of the files hashed so far (a file's own size is learned only as it is read), at
    most BATCH_FILES, never more than one folder's run."""
    hasher_factory(algorithm)  # fails before any worker starts if the algorithm is unavailable
    jobs = worker_count(jobs)
    prefix = root.rstrip("/") + "/"
    learned = [0, 0]  # bytes, files
    head: list[list[str]] = []
    for run in runs:
        head.append(run)
        if sum(map(len, head)) >= PROCESS_MIN_FILES:
            break
    processes = use_processes(jobs, sum(map(len, head)), PROCESS_MIN_FILES)

    def batches() -> Iterator[tuple[tuple[Any, ...], list[str]]]:
        for run in chain(head, runs):
            at = 0
            while at < len(run):
                mean = learned[0] // learned[1] if learned[1] else UNKNOWN_SIZE
                size = max(1, min(BATCH_FILES, BATCH_BYTES // (mean + PER_FILE_WEIGHT)))
                names = run[at : at + size]
                at += size
                yield (prefix, names, algorithm, form), names

    for names, rendered in ordered_map(hash_and_render, batches(), jobs, processes):
        learned[0] += rendered[1]
        learned[1] += rendered[0]
        yield names, rendered


def _encodes(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _comment(manifest_id: str, written_by: str) -> str:
    return (
        f"Dataset manifest {manifest_id}, written by `{written_by}`.\n"
        "A record pins this manifest by its digest (the last field): reprogate digest --manifest FILE"
    )


def write_manifest(manifest: dict[str, Any], output: Path, written_by: str = "reprogate dataset manifest") -> str:
    """Write a manifest held in memory (an import, a small dataset) atomically, in the form the
    file name asks for (.jsonl, .json, else YAML); returns its digest."""
    fields = {k: v for k, v in manifest.items() if k not in ("shards", "files", "digest")}
    with ManifestWriter(output, fields, list(manifest.get("files") or []), _comment(manifest.get("id", ""), written_by)) as writer:
        for shard in manifest.get("shards") or []:
            writer.add(shard)
    return writer.value
