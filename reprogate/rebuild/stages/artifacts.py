"""artifacts: fetch only what the record addresses into the empty work folder, and check the
source tree. Shards are not fetched here: the dataset stage fetches them after the preflight has
proved the workers (the runbook's order: prove the machine before the big download)."""

from __future__ import annotations

from pathlib import Path

from reprogate.core.canonical import file_digest
from reprogate.core.errors import ReprogateError
from reprogate.core.fileio import copy_for_code
from reprogate.core.gittree import changed_paths, folder_files, recorded_files, tree_id
from reprogate.detect.git import materialize, toplevel
from reprogate.rebuild.inject import runtime_folder
from reprogate.rebuild.stages.base import StageResult, failed, passed
from reprogate.rebuild.state import Fetched, RebuildJob, RebuildState
from reprogate.rules.source_tree import owned_paths
from reprogate.runtime.trace import TraceError, TraceEvent, read_trace

MAX_REFERENCE_TRACE = 1024 * 1024 * 1024  # as `compare` reads traces


def copy_in(job: RebuildJob, rel: str) -> Path:
    """Copy a repository path (file or folder) into the work folder at the same relative place,
    never through a link: the dataset stage copies while the preflight's ranks wait, and they
    may have left one where a shard goes (core.fileio.copy_for_code)."""
    source = (job.root / rel).resolve()
    if job.root.resolve() not in (source, *source.parents):
        raise FileNotFoundError(f"{rel} resolves outside the repository root")
    if not source.exists():
        raise FileNotFoundError(f"{rel} does not exist under {job.root}")
    target = job.workdir / rel
    job.workdir.mkdir(parents=True, exist_ok=True)
    copy_for_code(source, target, job.workdir, skip=lambda name: name in ("__pycache__", ".git"))
    return target


def artifacts(state: RebuildState) -> StageResult:
    job = state.job
    fetched: list[str] = []
    deferred: dict[str, str] = {}
    reference_events: list[TraceEvent] = []
    record = job.record
    source = record.source
    tree = source.tree if source is not None else None
    trace = record.reference.trace if record.reference is not None else None
    try:
        source_path = source.path if source is not None else None
        if source_path is not None and job.code.ran == "base" and job.code.base_tree:
            # only environment pins changed: the base's reviewed tree runs, written from git objects
            # (the head's versions of the pins it names are copied over it below)
            base_tree = job.code.base_tree
            found = tree_id(job.root / source_path)
            if found != base_tree:
                problem = _source_changes(job, source_path, base_tree, found, deferred)
                if problem is not None:
                    return problem
            materialize(toplevel(job.root), base_tree, job.workdir / source_path)
            fetched.append(source_path)
        elif source_path is not None:
            if tree is not None:
                found = tree_id(job.root / source_path)
                if found != tree:
                    problem = _source_changes(job, source_path, tree, found, deferred)
                    if problem is not None:
                        return problem
            copy_in(job, source_path)
            fetched.append(source_path)
        elif source is not None and source.commit is not None:
            return failed(
                "the record pins a commit but no project folder (source.path + source.tree); this version rebuilds folders pinned by tree id", exit_code=2
            )
        manifest = record.dataset.manifest if record.dataset is not None else None
        recipe = source.build_recipe if source is not None else None
        pinned = (job.job_section.config.path, manifest.path if manifest else None, recipe.path if recipe else None)
        for rel in pinned:
            if isinstance(rel, str) and rel not in fetched:
                copy_in(job, rel)
                fetched.append(rel)
        for item in source.lock_files if source is not None else ():
            copy_in(job, item.path)
            fetched.append(item.path)
        if trace is not None:
            if trace.path is None:
                return failed(f"the reference trace is only at {trace.uri}; this version reads reference traces from the repository", exit_code=2)
            path = job.root / trace.path
            if not path.is_file():  # a FIFO or a link to /dev/zero would be read forever
                return failed(f"reference trace {trace.path} is not a regular file in the repository", exit_code=2)
            if path.stat().st_size > MAX_REFERENCE_TRACE:
                return failed(f"reference trace {trace.path} is larger than {MAX_REFERENCE_TRACE:,} bytes", exit_code=2)
            if file_digest(path) != trace.checksum:
                return failed(f"reference trace {trace.path} is {file_digest(path)}, the record pins {trace.checksum}")
            reference_events = read_trace([path])
        checkpoint = record.state.checkpoint if record.state is not None else None
        if checkpoint is not None:
            if checkpoint.path is None:
                return failed(
                    f"checkpoint {checkpoint.id or ''} is only at {checkpoint.uri}; fetching remote checkpoints is not implemented in this version",
                    exit_code=2,
                )
            copy_in(job, checkpoint.path)
            fetched.append(checkpoint.path)
    except OSError as exc:
        return failed(f"cannot fetch an addressed artifact: {exc}")
    except ReprogateError as exc:  # git could not write the base's tree
        return failed(f"cannot write the base's project tree: {exc.message}", exit_code=int(exc.exit_code))
    except TraceError as exc:  # the record's reference trace is not a trace: unusable input, nothing compared
        return failed(f"cannot read the reference trace {trace.path if trace is not None else None}: {exc}", exit_code=2)
    except ValueError as exc:
        return failed(f"cannot read the reference trace: {exc}")
    state.fetched = Fetched(tuple(fetched), tuple(reference_events), runtime_folder(job.workdir / ".reprogate" / "runtime"), deferred)
    if deferred:
        tree_note = "; the source tree differs only in files checked elsewhere: " + ", ".join(f"{path} ({owner})" for path, owner in sorted(deferred.items()))
    else:
        tree_note = f"; source tree {tree[:12]} matches" if isinstance(tree, str) else ""
    if job.code.ran == "base":
        tree_note += f"; the base's project tree {str(job.code.base_tree)[:12]} runs (written from git objects), not the checkout's"
    return passed(f"fetched {len(fetched)} addressed artifact(s) into an empty work folder{tree_note}", fetched=fetched)


def _source_changes(job: RebuildJob, folder: str, pinned: str, found: str, deferred: dict[str, str]) -> StageResult | None:
    """Why the project folder's tree differs: the code (fail here, naming the paths), or only
    files later stages judge — data (dataset), the configuration (config) — or environment pins
    a pull request may change (lock files, the build recipe): then None, and the rebuild goes on,
    with `deferred` naming each such path and the stage that judges it."""
    before = recorded_files(job.root, pinned)
    if before is None:
        return failed(
            f"source folder {folder} has git tree {found}, the record pins {pinned}; this repository does not hold the "
            "pinned tree, so the changed paths cannot be named (fetch the full history: actions/checkout with fetch-depth: 0)",
            expected=pinned,
            found=found,
        )
    diff = changed_paths(before, folder_files(job.root / folder))
    owners = owned_paths(job.record, job.root, folder)
    code = {kind: [p for p in paths if p not in owners] for kind, paths in diff.items()}
    if any(code.values()):
        listed = "; ".join(f"{kind}: {', '.join(paths[:6])}{' ...' if len(paths) > 6 else ''}" for kind, paths in code.items() if paths)
        return failed(
            f"the code in {folder} changed since the reference ({listed}); tree {found}, the record pins {pinned}", expected=pinned, found=found, paths=code
        )
    deferred.update({p: owners[p] for paths in diff.values() for p in paths})
    return None
