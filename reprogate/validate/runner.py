"""`reprogate validate`: find reprogate documents, check schema and semantics, collect findings.

A file is a reprogate document when its `apiVersion` starts with `reprogate` or its `kind` is one
reprogate defines; other YAML (workflows, Kubernetes manifests) met while walking a folder or
named by pre-commit is skipped, not failed.
"""

from __future__ import annotations

import datetime
import gc
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.config import CONFIG_NAME, load_config, repository_root
from reprogate.core.diagnostics import Diagnostic, ExitCode, Severity
from reprogate.core.documents import DEFAULT_MAX_BYTES, Document, DocumentError, display_path
from reprogate.core.errors import InfrastructureError
from reprogate.core.heap import heap_frozen
from reprogate.core.pool import WorkerDied, ordered_map, usable_cpus, use_processes
from reprogate.core.record import KIND as RECORD_KIND
from reprogate.core.record import NO_RECORD, read_record
from reprogate.core.schema_check import quick_check, schema_diagnostics
from reprogate.core.schemas import API_VERSION, SCHEMA_FILES
from reprogate.datasets.manifest_lines import is_stream
from reprogate.datasets.manifests import load_manifest
from reprogate.output.result import worst
from reprogate.rules import RuleContext, rules_for
from reprogate.rules.environment import CODE as DRIFT_CODE
from reprogate.rules.manifest import stream_schema_diagnostics
from reprogate.validate.discovery import Target, discover


@dataclass
class Options:
    max_bytes: int = DEFAULT_MAX_BYTES
    root: Path | None = None  # repository root for addressed paths; default found per file
    strict: bool = False  # warnings fail too
    addressed_files: bool = True  # compare the files a record addresses (rebuild does that itself)
    today: datetime.date = field(default_factory=datetime.date.today)
    changed: frozenset[Path] | None = None  # files a diff changed (resolved): in-repo shards among them are hashed; None: unknown


@dataclass
class FileResult:
    path: str
    kind: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    status: ExitCode = ExitCode.OK
    skipped: str = ""  # why the file was not checked (not a reprogate document)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]

    @property
    def drift(self) -> list[Diagnostic]:
        """Environment pins the working tree no longer matches (notices; --strict fails on them)."""
        return [d for d in self.diagnostics if d.code == DRIFT_CODE]


@dataclass
class Validation:
    """Everything one `validate` found: per-file results and problems with the arguments (what the
    renderers in output/findings turn into text, JSON or GitHub annotations)."""

    files: list[FileResult] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)  # about the arguments, not a file
    problems_code: ExitCode = ExitCode.USAGE  # what an error among `problems` exits with
    strict: bool = False

    @property
    def checked(self) -> list[FileResult]:
        """Files recognised as reprogate documents (whatever their findings)."""
        return [f for f in self.files if f.kind is not None]

    @property
    def exit_code(self) -> ExitCode:
        """The worst of the files' and the arguments' codes, in the one order every command
        uses (output.result.worst); under --strict a warning or drift fails a clean run."""
        codes = [f.status for f in self.files]
        if any(p.severity is Severity.ERROR for p in self.problems):
            codes.append(self.problems_code)
        code = worst(*codes)
        if code is ExitCode.OK and self.strict and any(f.warnings or f.drift for f in self.files):
            return ExitCode.FAILED
        return code

    @property
    def drift(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.drift]


def classify(doc: Document, filename: str) -> tuple[str | None, list[Diagnostic]]:
    """The document's kind, or None if it is not a reprogate document; findings if it claims to
    be one but cannot be (unknown apiVersion or kind)."""
    data = doc.data
    if not isinstance(data, dict):
        if filename == CONFIG_NAME:
            return "Config", [Diagnostic(doc.path, "configuration must be a mapping", "not-a-mapping")]
        return None, []
    api, kind = data.get("apiVersion"), data.get("kind")
    known_kind = isinstance(kind, str) and kind in SCHEMA_FILES
    claims = (isinstance(api, str) and api.startswith("reprogate")) or known_kind or filename == CONFIG_NAME
    if not claims:
        return None, []
    if isinstance(api, str) and api.startswith("reprogate") and api != API_VERSION:
        return "?", [
            Diagnostic(
                doc.path,
                f"unknown apiVersion {api!r}; this reprogate reads {API_VERSION!r}",
                "unknown-api-version",
                location=doc.locate(("apiVersion",)),
                field="apiVersion",
                hint="upgrade reprogate if the record was written by a newer version",
            )
        ]
    if filename == CONFIG_NAME and kind in (None, "Config"):
        return "Config", []
    if not known_kind:
        return "?", [
            Diagnostic(
                doc.path,
                f"unknown kind {str(kind)[:100]!r}; expected one of {', '.join(SCHEMA_FILES)}",
                "unknown-kind",
                location=doc.locate(("kind",)),
                field="kind",
            )
        ]
    return kind, []


def validate_document(doc: Document, kind: str, options: Options, cache: dict[Any, Any], source: Path | None = None) -> list[Diagnostic]:
    """Schema findings and semantic findings of one loaded document."""
    if doc.syntax == "jsonl":  # a JSON Lines manifest: the header here, its shard lines in its rule
        found = stream_schema_diagnostics(doc, kind)
        if kind != "DatasetManifest":
            return found
    else:
        found = schema_diagnostics(doc, kind)
    if options.root is not None:
        root = options.root
    elif kind == "Config" and source is not None:
        root = source.resolve().parent
    else:
        folder = source.parent if source is not None else Path(".")
        if ("repository-root", folder) not in cache:  # a walk up with a stat per level: once per folder
            cache[("repository-root", folder)] = repository_root(folder)
        root = cache[("repository-root", folder)]
    record = read_record(doc.data, schema_valid=not found) if kind == RECORD_KIND else NO_RECORD
    ctx = RuleContext(doc, kind, root, options.today, options.max_bytes, cache, source, options.changed, record)
    for check in rules_for(kind, options.addressed_files):
        try:
            found.extend(check(ctx))
        except (TypeError, KeyError, AttributeError, ValueError):
            if not found:  # a rule crashing on schema-valid data is a bug in the rule
                raise
    return found


def validate_file(path: Path, explicit: bool, options: Options, cache: dict[Any, Any]) -> FileResult:
    display = display_path(path)
    try:
        doc = load_manifest(path, display, options.max_bytes)  # YAML and JSON go to load_document
    except DocumentError as exc:
        if is_stream(path) and not explicit:  # JSON Lines met while walking is usually data
            return FileResult(display, None, [], ExitCode.OK, skipped="not a reprogate document")
        return FileResult(display, None, exc.diagnostics, exc.exit_code)
    kind, problems = classify(doc, path.name)
    if kind is None:
        why = "not a reprogate document (no reprogate apiVersion or kind)"
        return FileResult(display, None, [], ExitCode.OK, skipped=why if explicit else "not a reprogate document")
    if problems:
        return FileResult(display, kind, problems, ExitCode.FAILED)
    try:
        found = validate_document(doc, kind, options, cache, path)
    except DocumentError as exc:  # a damaged line of a JSON Lines manifest, met while reading it
        return FileResult(display, kind, exc.diagnostics, exc.exit_code)
    status = ExitCode.FAILED if any(d.severity is Severity.ERROR for d in found) else ExitCode.OK
    return FileResult(display, kind, found, status)


def default_targets(start: Path, report: Validation) -> tuple[list[str], Path | None]:
    """Record globs from `.reprogate.yaml` when the user names no paths; problems go to `report`."""
    try:
        config = load_config(start)
    except DocumentError as exc:
        report.problems.extend(exc.diagnostics)
        report.problems_code = exc.exit_code
        return [], None
    if config.path is None or not config.records:
        message = "no paths given and no records: globs in a .reprogate.yaml here or above"
        report.problems.append(Diagnostic(".", message, "no-targets", hint="pass files, folders or globs, or add `records:` to .reprogate.yaml"))
        return [], None
    top = repository_root(config.folder)
    for i, glob in enumerate(config.records):
        if not _inside(config.folder.resolve() / glob, top):
            message = f"records: {glob[:120]!r} reaches outside the repository: the globs are relative to this file's folder, and stay in the repository"
            where = Diagnostic(
                display_path(config.path), message, "records-outside", field=f"records[{i}]", hint="write the glob relative to this file's folder"
            )
            report.problems.append(where)
            report.problems_code = ExitCode.FAILED
    if report.problems:
        return [], None
    return [*config.records, str(config.path)], config.folder


def _inside(path: Path, top: Path) -> bool:
    """Whether `path` (a glob: its `..` taken as written, not through links) lies in `top`. A
    configuration's record glob that is absolute or climbs out would have validate walk and
    read the machine's files (`/**` walks every one) on a pull request's say-so."""
    normal = os.path.normpath(path)
    return normal == os.fspath(top) or normal.startswith(os.path.join(os.fspath(top), ""))


def validate(args: list[str], options: Options) -> Validation:
    report = Validation(strict=options.strict)
    base: Path | None = None
    if not args:
        args, base = default_targets(Path.cwd(), report)
        if report.problems:
            return report
    found = discover(args, base)
    report.problems.extend(found.problems)
    report.files = _validate_all(found.targets, options)
    if not report.checked and not report.problems and not any(t.explicit for t in found.targets):
        # a folder or glob that holds no record is a mistake, not a pass; a file named explicitly
        # and skipped (pre-commit passes every YAML file) is fine
        where = ", ".join(args)[:300]
        hint = "name the folder that holds the records, or add `records:` globs to .reprogate.yaml"
        report.problems.append(Diagnostic(where, f"no reprogate document found in {where}", "no-documents", hint=hint))
        report.problems_code = ExitCode.USAGE
    return report


PARALLEL_MIN_FILES = 64  # below this, one process is done before a pool would have started
CHUNK_FILES = 32  # files a worker validates before it hands their results back
WORKER_GC_THRESHOLD = 50_000  # container objects allocated between young collections in a worker


def _validate_chunk(targets: list[Target], options: Options, cache: dict[Any, Any] | None = None) -> list[FileResult]:
    """Results of a chunk of files; `cache` keeps what addressed files hold (read and hashed once
    per process, not once per record)."""
    cache = {} if cache is None else cache
    return [validate_file(target.path, target.explicit, options, cache) for target in targets]


_worker_cache: dict[Any, Any] = {}  # a forked worker's addressed files, across its chunks


def _start_worker() -> None:
    """A worker starts with an empty cache, and collects young objects after 50,000 allocations
    instead of 700: a record's nodes and data (some 3,000 objects) are then freed by reference
    counting before any collection looks at them, rather than scanned and promoted by several
    collections a record (measured: 5-7 % of a worker's CPU, in one process, turn about)."""

    _worker_cache.clear()
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])


def _validate_in_worker(targets: list[Target], options: Options) -> list[FileResult]:
    return _validate_chunk(targets, options, _worker_cache)


def _validate_all(targets: list[Target], options: Options) -> list[FileResult]:
    """Results in the order of `targets`. Many files are split across forked processes (core.pool),
    one per core: validating a record is CPU work in Python (parsing, schema, rules), so threads would
    not help, and each record is independent of the others.

    The cost of a record must not depend on how many there are. So a worker holds at most
    CHUNK_FILES results before it hands them back (a worker that kept a whole share of 10,000
    records rescanned them all at every full garbage collection, measured 1.12x its CPU per
    record at 1,000), and the parent's heap, which grows with the number of targets, is frozen
    before the fork: the workers' collections neither scan it nor copy its pages. Small chunks
    also keep both cores busy to the end."""
    jobs = usable_cpus()
    if not use_processes(jobs, len(targets), PARALLEL_MIN_FILES):
        return _validate_chunk(targets, options)
    for kind in SCHEMA_FILES:  # compile once here; the forked workers inherit it
        rules_for(kind)
        quick_check(kind)
    size = min(CHUNK_FILES, -(-len(targets) // (jobs * 4)))
    tasks = (((targets[i : i + size], options), None) for i in range(0, len(targets), size))
    results: list[FileResult] = []
    try:
        with heap_frozen():
            for _, done in ordered_map(_validate_in_worker, tasks, jobs, processes=True, initializer=_start_worker):
                results.extend(done)
    except WorkerDied:
        raise InfrastructureError(
            "a validation worker died before it finished (killed: out of memory, or a signal); nothing was judged",
            hint="run again; with little memory, name fewer files at once",
        ) from None
    return results
