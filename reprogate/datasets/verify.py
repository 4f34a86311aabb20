"""`reprogate dataset verify`: do the bytes under a root still match a manifest?

Cheapest first. Every shard's size is checked (a stat as the hashing worker opens it, or a HEAD
request) before it is hashed, and the first wrong size stops the hashing: missing and truncated
shards are reported in seconds on any dataset, and checksums only count when every size matched
(--keep-going hashes the rest anyway). Each problem is reported by shard name and by its line in
the manifest, in separate kinds: missing, extra, truncated, corrupt, unsafe (a name that would
reach outside the root) and unreachable.

A JSON Lines manifest is read once, a line at a time, and its shards come sorted by name, so
extra files are found by merging it with the (equally sorted) walk of the root: memory stays flat
however many shards there are. YAML and JSON manifests are loaded whole.
"""

from __future__ import annotations

import contextlib
import stat
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import Diagnostic, ExitCode, Location
from reprogate.core.documents import Document, DocumentError, display_path
from reprogate.core.heap import heap_frozen
from reprogate.core.pool import ordered_map
from reprogate.core.progress import Progress
from reprogate.datasets.dvcdir import dvc_directory_md5
from reprogate.datasets.hashing import (
    SIZE,
    UNREADABLE,
    UNSAFE,
    AlgorithmUnavailable,
    Control,
    hash_batches,
    new_hasher,
)
from reprogate.datasets.manifest_header import ManifestHeader, checked
from reprogate.datasets.manifest_lines import ShardLines
from reprogate.datasets.manifests import load_manifest
from reprogate.datasets.names import RootGuard, UnsafeName, check_name, is_url
from reprogate.datasets.remote import Missing, Remote, RemoteUnreachable
from reprogate.datasets.select import Walk
from reprogate.datasets.shard_checker import shard_checker
from reprogate.datasets.verify_lines import NAME_HINT, check_shard_lines, order_problem

MANIFEST_MAX_BYTES = 256 * 1024 * 1024  # a million shards fit; records keep the 16 MiB default
KINDS = ("missing", "extra", "truncated", "corrupt", "unsafe", "unreachable")
REMOTE_JOBS = 4  # remote shards downloaded at once unless --jobs says otherwise


MAX_LINE_FINDINGS = 100  # damaged lines reported before a streamed manifest is given up on


@dataclass(slots=True)
class Entry:
    where: tuple[Any, ...]  # ("shards", i) or ("files", i)
    name: str
    size: int
    checksum: str
    kind: str = "file"
    path: str | None = None  # local file, once checked safe
    url: str | None = None


@dataclass
class VerifyOutcome:
    manifest: str
    root: str = ""
    checked: int = 0
    findings: list[Diagnostic] = field(default_factory=list)
    by_kind: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    checksums_skipped: bool = False
    exit_code: ExitCode = ExitCode.OK

    def problem(self, doc: Document | None, kind: str, entry_where: tuple[Any, ...] | None, name: str, message: str, hint: str = "") -> None:
        self.by_kind[kind].append(name)
        location = doc.locate(entry_where) if doc is not None and entry_where else Location()
        field_name = f"{entry_where[0]}[{entry_where[1]}]" if entry_where and len(entry_where) == 2 else ""
        self.findings.append(Diagnostic(self.manifest, f"{kind}: {name}: {message}", f"shard-{kind}", location=location, field=field_name, hint=hint))

    @property
    def summary(self) -> str:
        if self.exit_code == ExitCode.USAGE:
            return f"{self.manifest} cannot be used as a dataset manifest; nothing was verified"
        counts = ", ".join(f"{len(v)} {k}" for k, v in self.by_kind.items() if v) or "all match"
        note = " (checksums not computed: sizes already differ; --keep-going hashes the rest)" if self.checksums_skipped else ""
        return f"{self.checked} shard(s) checked against {self.manifest}: {counts}{note}"


@dataclass
class VerifyOptions:
    root: str | None = None
    jobs: int | None = None
    quiet: bool = False
    timeout: float = 30.0
    retries: int = 3
    keep_going: bool = False
    max_bytes: int = MANIFEST_MAX_BYTES
    max_time: float = 6 * 3600.0  # every remote request of the verification together


def _entries(data: dict[str, Any]) -> list[Entry]:
    out = []
    for section in ("shards", "files"):
        for i, item in enumerate(data.get(section) or []):
            out.append(Entry((section, i), item["name"], item.get("bytes", -1), item["checksum"], item.get("kind", "file")))
    return out


def resolve_root(manifest_path: Path, header: ManifestHeader, root: str | None) -> str:
    """Where shard names are resolved: --root, else the manifest's namespace when reprogate can
    read it (a local folder, file:// or http(s)://), else the manifest's own folder."""
    spec = root if root is not None else header.namespace
    if spec is None:
        return str(manifest_path.resolve().parent)
    if spec.startswith("file://"):
        return spec[len("file://") :]
    if spec.lower().startswith(("http://", "https://")):
        return spec if spec.endswith("/") else spec + "/"
    if is_url(spec):
        raise ValueError(f"namespace {spec} cannot be read by reprogate; pass --root with a local copy or an http(s) mirror")
    return str(spec if root is not None else (manifest_path.resolve().parent / spec))


class _Source:
    """A manifest's entries, in file order.

    A loaded manifest (YAML, JSON) keeps them in a list. A JSON Lines manifest is read a line at a
    time; each shard line is checked against the schema and the sorted order as it is read, and
    what is wrong goes to `problems` (a manifest with any is not used). With a local root its
    shard lines are handed to the hashing workers instead (verify_lines), and only its side files
    come from here.
    """

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        shards = doc.data.get("shards")
        self.lines = shards if isinstance(shards, ShardLines) else None
        self.loaded = None if self.lines is not None else _entries(doc.data)
        self.side = [] if self.lines is None else _entries({"files": doc.data.get("files")})
        self.problems: list[Diagnostic] = []

    def entries(self, shards: bool = True) -> Iterator[Entry]:
        if self.loaded is not None:
            yield from self.loaded
            return
        assert self.lines is not None
        checker = shard_checker()
        valid = checker.valid
        previous = ""
        for line, text, shard in self.lines.numbered() if shards else ():
            index = line - 2
            if not valid(shard):
                self.problems.extend(checker.explain(self.doc.path, index, line, text, shard))
                if len(self.problems) >= MAX_LINE_FINDINGS:
                    return
                continue
            name = shard["name"]
            if name <= previous:
                self.problems.append(order_problem(self.doc.path, line, name, previous))
                return
            previous = name
            yield Entry(("shards", index), name, shard["bytes"], shard["checksum"], shard.get("kind", "file"))
        yield from self.side


class _Extras:
    """Files the walk of the root finds but the manifest does not name.

    Both the walk and the manifest's names come sorted, so one merge finds them, holding neither
    list: `known(names)` is called with runs of the manifest's names in increasing order, and
    takes the walk's names up to the last of them, a folder's run at a time, comparing the two
    as sets (C-level work, not a step per file).
    """

    def __init__(self, walk: Walk, also_known: set[str]) -> None:
        self.runs = walk.name_runs()
        self.also_known = also_known
        self.covered: tuple[str, ...] = ()  # DVC directory shards' folders, with a trailing /
        self.run: list[str] = []  # the walk's names not yet compared
        self.at = 0
        self.done = False
        self.found: list[str] = []

    def known(self, names: list[str]) -> None:
        if not names:
            return
        last = names[-1]
        taken: list[str] = []
        while True:
            if self.at >= len(self.run):
                run = next(self.runs, None)
                if run is None:
                    break
                self.run, self.at = run, 0
            if self.run[-1] <= last:
                taken.extend(self.run[self.at :])
                self.at = len(self.run)
                continue
            upto = bisect_right(self.run, last, self.at)
            taken.extend(self.run[self.at : upto])
            self.at = upto
            break
        if taken:
            unknown = set(taken).difference(names)
            if unknown:
                self.found.extend(sorted(self._extra(unknown)))

    def cover(self, folder: str) -> None:
        """A DVC directory shard: the files under it are the shard's, not extra."""
        self.covered += (folder.rstrip("/") + "/",)

    def _extra(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n not in self.also_known and not (self.covered and n.startswith(self.covered))]

    def finish(self) -> list[str]:
        """The extras, once the manifest's names are all known: whatever the walk has left."""
        self.found.extend(self._extra(self.run[self.at :]))
        for run in self.runs:
            self.found.extend(self._extra(run))
        self.run, self.at = [], 0
        return self.found


def verify(manifest_path: Path, options: VerifyOptions) -> VerifyOutcome:
    with contextlib.ExitStack() as until_done:
        return _verify(manifest_path, options, until_done)


def _verify(manifest_path: Path, options: VerifyOptions, until_done: contextlib.ExitStack) -> VerifyOutcome:
    report = VerifyOutcome(display_path(manifest_path))
    try:
        doc = load_manifest(manifest_path, report.manifest, options.max_bytes)
    except DocumentError as exc:
        return _unusable(report, exc.diagnostics)

    try:
        header = checked(doc).header  # a JSON Lines manifest's header alone; its lines are checked as they are read
    except DocumentError as exc:
        return _unusable(report, exc.diagnostics)
    source = _Source(doc)  # only now: its entries are read as the schema says they are (every shard has a name and checksum)
    algorithm = header.algorithm
    try:
        new_hasher(algorithm)
        report.root = resolve_root(manifest_path, header, options.root)
    except (AlgorithmUnavailable, ValueError) as exc:
        report.findings.append(Diagnostic(report.manifest, str(exc), "cannot-verify", location=doc.locate(("namespace",))))
        report.exit_code = ExitCode.USAGE
        return report

    if source.loaded is not None:
        # A large loaded manifest is a big, long-lived heap; without this every collection
        # triggered by the hashing loop rescans it (measured: ~40% of the time on 20,000 shards).
        until_done.enter_context(heap_frozen())
    remote_root = is_url(report.root)
    walk = extras = None
    if not remote_root and header.selection and Path(report.root).is_dir():
        walk = Walk(
            Path(report.root),
            list(header.include),
            list(header.exclude),
            skip={manifest_path},
            sizes=False,
            temporaries_of=manifest_path,
        )
        extras = _Extras(walk, {e.name for e in source.side})
    try:
        _check(doc, report, source, Remote(timeout=options.timeout, retries=options.retries, max_time=options.max_time), extras, algorithm, options)
    except DocumentError as exc:  # a damaged line of a JSON Lines manifest
        return _unusable(report, [*source.problems, *exc.diagnostics])
    if source.problems:
        return _unusable(report, source.problems)
    if extras is not None and walk is not None:
        _report_extras(doc, report, extras, walk)
    mismatch = any(report.by_kind[k] for k in ("missing", "extra", "truncated", "corrupt", "unsafe"))
    report.exit_code = ExitCode.FAILED if mismatch else (ExitCode.INFRA if report.by_kind["unreachable"] else ExitCode.OK)
    return report


def _unusable(report: VerifyOutcome, diagnostics: list[Diagnostic]) -> VerifyOutcome:
    """The manifest cannot be used: only why is reported, and nothing counts as verified."""
    report.findings = list(diagnostics)
    report.by_kind = {k: [] for k in KINDS}
    report.exit_code = ExitCode.USAGE
    return report


class _Checks:
    """What one verify pass collects while workers report back."""

    def __init__(self, doc: Document, report: VerifyOutcome, options: VerifyOptions, remote: Remote, control: Control) -> None:
        self.doc, self.report, self.options, self.remote, self.control = doc, report, options, remote, control
        self.folders: list[Entry] = []
        self.urls: list[Entry] = []
        self.later: list[tuple[str, tuple[Any, ...], str, str]] = []  # checksum-stage findings: kept until sizes all match
        self.passed = 0  # entries whose size matched

    def size_problem(self, kind: str, where: tuple[Any, ...], name: str, message: str) -> None:
        """A wrong size (or a file that is not there, or may not be read): reported at once, and
        unless --keep-going no more files are read."""
        self.report.problem(self.doc, kind, where, name, message, NAME_HINT if kind == "unsafe" else "")
        if not self.options.keep_going:
            self.control.read = False

    def elsewhere(self, entry: Entry, guard: RootGuard | None, root: str) -> None:
        """A remote shard (HEAD now, GET later) or a DVC folder: checked here, not by a worker."""
        if _size_ok(self.doc, self.report, entry, guard, root, self.remote):
            self.passed += 1
            (self.urls if entry.url else self.folders).append(entry)
        elif not self.options.keep_going:
            self.control.read = False


def _check(doc: Document, report: VerifyOutcome, source: _Source, remote: Remote, extras: _Extras | None, algorithm: str, options: VerifyOptions) -> None:
    """One pass over the manifest. Local files go to the hashing workers, which open each one,
    check its size (and where a symlink leads) and hash it only if that holds. The first wrong
    size stops the hashing unless --keep-going: later files are only checked, every size problem
    is still reported, and no checksum result is, as if all sizes had been checked first."""
    root = report.root
    guard = None if is_url(root) else RootGuard(root)
    checks = _Checks(doc, report, options, remote, Control(real_root=guard.real_root if guard else None))
    files, size = (len(source.loaded), sum(max(e.size, 0) for e in source.loaded)) if source.loaded is not None else (None, None)
    progress = Progress("verifying", files, size, quiet=options.quiet)
    try:
        lines_here = source.lines is not None and guard is not None
        if lines_here and guard is not None:  # lines_here says guard is not None; the checker needs it said here
            _check_lines(source, checks, extras, guard, algorithm, progress)
        if source.problems:
            return
        _check_entries(source.entries(shards=not lines_here), checks, guard, extras if not lines_here else None, algorithm, progress)
        if not checks.control.read:
            report.checksums_skipped = checks.passed > 0
            return
        for kind, where, name, message in checks.later:
            report.problem(doc, kind, where, name, message)
        for entry in checks.folders:
            assert entry.path is not None
            size, count, checksum = dvc_directory_md5(Path(entry.path), options.jobs)
            progress.advance(size, 1)
            if checksum != entry.checksum:
                report.problem(doc, "corrupt", entry.where, entry.name, f"DVC directory hash differs ({count} files, {size:,} bytes)")
        # Remote shards wait on the network, not the CPU: threads, REMOTE_JOBS unless --jobs says.
        tasks = (((entry, remote, algorithm, progress), entry) for entry in checks.urls)
        for entry, (kind, message) in ordered_map(_remote_digest, tasks, max(1, options.jobs or REMOTE_JOBS), processes=False):
            if kind:
                report.problem(doc, kind, entry.where, entry.name, message)
    finally:
        progress.close()


def _check_lines(source: _Source, checks: _Checks, extras: _Extras | None, guard: RootGuard, algorithm: str, progress: Progress) -> None:
    """The shard lines of a JSON Lines manifest, parsed, checked and hashed by the workers."""
    assert source.lines is not None
    doc, report = checks.doc, checks.report
    last = ""
    results = check_shard_lines(source.lines, doc.path, report.root, algorithm, checks.options.jobs, checks.control)
    try:
        for result in results:
            progress.advance(result.bytes, len(result.names))
            report.checked += len(result.names)
            if result.names and result.names[0] <= last:  # out of order across two pieces: as within one, nothing after it counts
                source.problems.extend(d for d in result.invalid if d.location.line < result.first_name_line)
                source.problems.append(order_problem(doc.path, result.first_name_line, result.names[0], last))
                return
            source.problems.extend(result.invalid)
            source.problems.extend(result.damaged)
            if result.damaged or len(source.problems) >= MAX_LINE_FINDINGS or (result.invalid and result.invalid[-1].code == "manifest-order"):
                return
            if result.names:
                last = result.names[-1]
                if extras is not None:
                    for _, shard in result.deferred:
                        if shard.get("kind") == "dvc-directory":
                            extras.cover(shard["name"])
                    extras.known(result.names)
            checks.passed += result.passed
            for index, name, kind, message in result.sizes:
                checks.size_problem(kind, ("shards", index), name, message)
            checks.later.extend((kind, ("shards", index), name, message) for index, name, kind, message in result.checksums)
            for index, shard in result.deferred:
                checks.elsewhere(Entry(("shards", index), shard["name"], shard["bytes"], shard["checksum"], shard.get("kind", "file")), guard, report.root)
    finally:
        results.close()


def _check_entries(entries: Iterator[Entry], checks: _Checks, guard: RootGuard | None, extras: _Extras | None, algorithm: str, progress: Progress) -> None:
    """Entries parsed here (a loaded manifest, side files, shards under a remote root): local
    files go to the workers by path; the rest are checked here."""
    report, root = checks.report, checks.report.root
    names: list[str] = []

    def local() -> Iterator[tuple[str, int, Entry]]:
        for entry in entries:
            report.checked += 1
            if extras is not None:
                names.append(entry.name)
                if entry.kind == "dvc-directory":
                    extras.cover(entry.name)
            if guard is None or entry.kind != "file" or ("://" in entry.name and is_url(entry.name)):
                checks.elsewhere(entry, guard, root)
                continue
            try:
                entry.path = guard.folder_checked(entry.name)
            except UnsafeName as exc:
                checks.size_problem("unsafe", entry.where, entry.name, f"refused, never read ({exc})")
                continue
            yield entry.path, entry.size, entry

    for batch in hash_batches(local(), algorithm, checks.options.jobs, progress.advance, checks.control):
        for i, item in enumerate(batch.items):
            entry = item[2]
            problem = batch.problems.get(i)
            if problem is None:
                checks.passed += 1
                checksum = batch.checksums[i]
                if checksum and checksum != entry.checksum:
                    checks.later.append(("corrupt", entry.where, entry.name, f"checksum differs: manifest {entry.checksum[:24]}..., file {checksum[:24]}..."))
            elif problem[0] == UNREADABLE:
                checks.passed += 1
                checks.later.append(("missing", entry.where, entry.name, f"cannot read: {problem[1]}"))
            else:
                checks.size_problem(*_worker_problem(entry, batch.sizes[i], *problem))
    if extras is not None:  # a loaded manifest's names, sorted for the merge with the walk
        extras.known(sorted(set(names)))


def _worker_problem(entry: Entry, size: int, problem: str, detail: str) -> tuple[str, tuple[Any, ...], str, str]:
    """(kind, where, name, message) of a problem a hashing worker found before reading a file."""
    if problem == SIZE:
        kind = "truncated" if size < entry.size else "corrupt"
        return kind, entry.where, entry.name, f"{size:,} bytes, the manifest says {entry.size:,}"
    if problem == UNSAFE:
        return "unsafe", entry.where, entry.name, f"refused, never read ({entry.name!r}: resolves through a symlink to {detail}, outside the dataset root)"
    return "missing", entry.where, entry.name, f"no file at {entry.path}" + (f" ({detail})" if "regular" in detail else "")


def _size_ok(doc: Document, report: VerifyOutcome, entry: Entry, guard: RootGuard | None, root: str, remote: Remote) -> bool:
    """The size check of a remote shard (HEAD) or a DVC folder, made here rather than by a worker."""
    info = None
    try:
        if guard is None or is_url(entry.name):
            check_name(entry.name)
            entry.url = entry.name if is_url(entry.name) else root + entry.name
        else:
            entry.path, info = guard.stat(entry.name)
    except UnsafeName as exc:
        report.problem(doc, "unsafe", entry.where, entry.name, f"refused, never read ({exc})", NAME_HINT)
        return False
    if entry.url:
        return bool(_remote_size(doc, report, entry, remote))
    if info is None or not stat.S_ISDIR(info.st_mode):
        report.problem(doc, "missing", entry.where, entry.name, f"no folder at {entry.path}")
        return False
    return True


def _remote_size(doc: Document, report: VerifyOutcome, entry: Entry, remote: Remote) -> list[Entry]:
    assert entry.url is not None
    try:
        size = remote.size(entry.url)
    except Missing as exc:
        report.problem(doc, "missing", entry.where, entry.name, f"{entry.url}: {exc}")
        return []
    except RemoteUnreachable as exc:
        report.problem(doc, "unreachable", entry.where, entry.name, str(exc), "the remote did not answer; retry later or raise --timeout/--retries")
        return []
    if size is not None and size < entry.size:
        report.problem(doc, "truncated", entry.where, entry.name, f"{size:,} bytes at {entry.url}, the manifest says {entry.size:,}")
        return []
    if size is not None and size != entry.size:
        report.problem(doc, "corrupt", entry.where, entry.name, f"{size:,} bytes at {entry.url}, the manifest says {entry.size:,}")
        return []
    return [entry]


def _report_extras(doc: Document, report: VerifyOutcome, extras: _Extras, walk: Walk) -> None:
    for name in extras.finish():
        why = "present under the root and chosen by the manifest's selection, but not in the manifest"
        report.problem(doc, "extra", ("shards",), name, why, "rebuild the manifest if the file belongs to the dataset, or remove it")
    reported = set(report.by_kind["unsafe"])  # a listed name whose link leaves the root was refused already
    for name in (n for n in walk.outside if n not in reported):
        report.problem(doc, "unsafe", ("shards",), name, "a symlink under the root that leads outside it; not followed")


def _remote_digest(entry: Entry, remote: Remote, algorithm: str, progress: Progress) -> tuple[str, str]:
    assert entry.url is not None
    try:
        size, checksum = remote.digest(entry.url, algorithm, lambda n: progress.advance(n, 0), entry.size if entry.size >= 0 else None)
    except Missing as exc:
        return "missing", f"{entry.url}: {exc}"
    except RemoteUnreachable as exc:
        return "unreachable", str(exc)
    progress.advance(0, 1)
    if size < entry.size:
        return "truncated", f"{size:,} bytes read from {entry.url}, the manifest says {entry.size:,}"
    if checksum != entry.checksum:
        return "corrupt", f"checksum differs: manifest {entry.checksum[:24]}..., remote {checksum[:24]}..."
    return "", ""
