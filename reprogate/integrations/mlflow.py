"""A reference from an MLflow tracking store: `reprogate init PROJECT --from-mlflow RUN_ID ...`.

A team that logs its reference runs to MLflow already has what a record needs: one run per seed,
its parameters (the seed among them), its final metrics, the trace the run's ReprogateCallback
or Tracer wrote (logged as artifacts under `reprogate/`), the configuration and dataset manifest
if it logged them, and the git commit MLflow tags it with. This reads them into the shape init's
own reference runs have (init/imported.py), so the record is made, checked and validated as if
init had run the seeds — and refuses, naming the run and what is missing, whatever it cannot fill:
a run without the seed parameter or the contract's metric, a first run without a trace, runs that
differ in a parameter other than the seed, a commit whose project folder is not this one, a
logged configuration or manifest that is not the project's, a flag the runs did not run with.

Only the command line imports this module (`reprogate[mlflow]`: mlflow-skinny; a sqlite or other
database store also needs SQLAlchemy and Alembic, which the extra brings).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.core.documents import DocumentError, load_document
from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.git import GitError, run_git
from reprogate.core.gittree import changed_paths, folder_files, recorded_files, tree_id
from reprogate.datasets import manifest_digest
from reprogate.init.command import InitOptions, given_path, layout
from reprogate.init.discover import discover
from reprogate.init.imported import ImportedReference, not_recorded
from reprogate.init.reference import ReferenceRuns
from reprogate.runtime.entry_command import EntryCommandError, flags, read_entry
from reprogate.runtime.trace import MetaEvent, MetricEvent, TraceEvent, meta_events, trace_events

COMMIT_TAG = "mlflow.source.git.commit"
MAX_ARTIFACT_BYTES = 1024 * 1024 * 1024  # as a rebuild reads a rank's trace
MAX_RUNS = 100
REMOTE_NAMES = frozenset({"databricks", "databricks-uc", "uc"})  # tracking URIs without `://` that name no local folder


class MlflowReferenceError(UsageError):
    """What the tracking store holds cannot make the record (exit 2): the run, and what is missing."""


@dataclass(frozen=True)
class MlflowQuery:
    """Which runs: named by id, or an experiment's runs matching a filter (MLflow's search syntax)."""

    tracking_uri: str  # empty: $MLFLOW_TRACKING_URI
    run_ids: tuple[str, ...] = ()
    experiment: str | None = None
    filter: str = ""
    seed_param: str = "seed"
    metric: str | None = None
    trace_path: str = "reprogate"  # the artifact folder holding trace-rank*.jsonl


@dataclass(frozen=True)
class LoggedRun:
    """One MLflow run, read once: what the record takes from it."""

    run_id: str
    seed: int
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    commit: str | None
    artifacts: tuple[tuple[str, int], ...]  # (path, bytes) of every logged file


def _client(uri: str) -> Any:
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # downloads would draw bars on stdout
    try:
        from mlflow import MlflowClient
    except ImportError:
        raise UsageError("--from-mlflow needs MLflow here", hint="pip install 'reprogate[mlflow]'") from None
    return MlflowClient(tracking_uri=uri)


def _store_error(exc: Exception, what: str, uri: str) -> Exception:
    """An MLflow refusal as reprogate's: a missing run or experiment is the user's (2), a store
    that does not answer is the infrastructure's (3)."""
    code = str(getattr(exc, "error_code", ""))
    if code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE", "BAD_REQUEST", "NOT_FOUND"):
        return MlflowReferenceError(f"{what}: {str(exc).splitlines()[0]} (tracking store {uri})")
    return InfrastructureError(f"{what}: the tracking store {uri} did not answer: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")


def _artifacts(client: Any, run_id: str, path: str | None = None, depth: int = 0) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for info in client.list_artifacts(run_id, path):
        if info.is_dir and depth < 4:
            found += _artifacts(client, run_id, info.path, depth + 1)
        elif not info.is_dir:
            found.append((str(info.path), int(info.file_size or 0)))
    return found


def _run_ids(client: Any, query: MlflowQuery) -> list[str]:
    if query.run_ids:
        twice = next((run_id for i, run_id in enumerate(query.run_ids) if run_id in query.run_ids[:i]), None)
        if twice is not None:
            raise MlflowReferenceError(
                f"run {twice} is listed twice: each reference seed is one run", hint="list each run once (one --from-mlflow RUN_ID a seed)"
            )
        return list(query.run_ids)
    if query.experiment is None:
        raise UsageError("--from-mlflow needs run ids, or --mlflow-experiment NAME (with --mlflow-filter)")
    try:
        experiment = client.get_experiment_by_name(query.experiment)
    except Exception as exc:  # noqa: BLE001 - MLflow's own exception types vary by store
        raise _store_error(exc, f"experiment {query.experiment!r}", query.tracking_uri) from None
    if experiment is None:
        raise MlflowReferenceError(f"experiment {query.experiment!r} is not in the tracking store {query.tracking_uri}")
    try:
        runs = client.search_runs([experiment.experiment_id], filter_string=query.filter, max_results=MAX_RUNS + 1, order_by=["attributes.start_time ASC"])
    except Exception as exc:  # noqa: BLE001
        raise _store_error(exc, f"experiment {query.experiment!r} with filter {query.filter!r}", query.tracking_uri) from None
    if not runs:
        raise MlflowReferenceError(f"no run of experiment {query.experiment!r} matches {query.filter!r}")
    if len(runs) > MAX_RUNS:
        raise MlflowReferenceError(f"more than {MAX_RUNS} runs of experiment {query.experiment!r} match {query.filter!r}: narrow the filter")
    return [str(run.info.run_id) for run in runs]


def _logged(client: Any, run_id: str, query: MlflowQuery) -> LoggedRun:
    try:
        run = client.get_run(run_id)
        artifacts = _artifacts(client, run_id)
    except Exception as exc:  # noqa: BLE001
        raise _store_error(exc, f"run {run_id}", query.tracking_uri) from None
    params = {str(k): str(v) for k, v in run.data.params.items()}
    if query.seed_param not in params:
        raise MlflowReferenceError(
            f"run {run_id} has no parameter {query.seed_param!r}: the record cannot say which seed it ran",
            hint=f"log it with mlflow.log_param({query.seed_param!r}, seed), or name the run's seed parameter with --mlflow-seed-param",
        )
    try:
        seed = int(params[query.seed_param])
    except ValueError:
        raise MlflowReferenceError(f"run {run_id}: parameter {query.seed_param!r} is {params[query.seed_param]!r}, not an integer seed") from None
    if seed < 0:
        raise MlflowReferenceError(f"run {run_id}: seed {seed} is negative")
    metrics = {str(k): float(v) for k, v in run.data.metrics.items() if isinstance(v, (int, float)) and math.isfinite(float(v))}
    commit = run.data.tags.get(COMMIT_TAG)
    return LoggedRun(run_id, seed, params, metrics, str(commit) if commit else None, tuple(artifacts))


def _download(client: Any, run: LoggedRun, path: str, folder: Path, uri: str) -> Path:
    size = dict(run.artifacts).get(path, 0)
    if size > MAX_ARTIFACT_BYTES:
        raise MlflowReferenceError(f"run {run.run_id}: artifact {path} is {size:,} bytes, more than {MAX_ARTIFACT_BYTES:,}")
    try:
        local = Path(client.download_artifacts(run.run_id, path, str(folder)))
    except Exception as exc:  # noqa: BLE001
        raise _store_error(exc, f"run {run.run_id}: artifact {path}", uri) from None
    if not local.is_file() or local.is_symlink() or local.stat().st_size > MAX_ARTIFACT_BYTES:
        raise MlflowReferenceError(f"run {run.run_id}: artifact {path} did not download as a file within {MAX_ARTIFACT_BYTES:,} bytes")
    return local


def _trace(client: Any, run: LoggedRun, query: MlflowQuery, folder: Path) -> list[TraceEvent]:
    prefix = query.trace_path.strip("/") + "/"
    names = sorted(p for p, _ in run.artifacts if p.startswith(prefix) and p.rsplit("/", 1)[-1].startswith("trace") and p.endswith(".jsonl"))
    if not names:
        raise MlflowReferenceError(
            f"run {run.run_id} (seed {run.seed}, the one a rebuild replays) logged no trace under {prefix}: the record has nothing to compare a rebuild with",
            hint="log the folder the Tracer wrote: mlflow.log_artifacts(os.environ.get('REPROGATE_TRACE_DIR', TRACE_FOLDER), 'reprogate'); "
            "or list a run that has one first",
        )
    texts = [_download(client, run, name, folder, query.tracking_uri).read_text(encoding="utf-8", errors="strict") for name in names]
    try:
        return trace_events(texts)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MlflowReferenceError(f"run {run.run_id}: its trace cannot be read: {exc}") from None


def _same_params(runs: list[LoggedRun], seed_param: str) -> None:
    """Seeds of one reference differ in their seed alone."""
    first = runs[0]
    for run in runs[1:]:
        keys = sorted((set(first.params) | set(run.params)) - {seed_param})
        differ = [k for k in keys if first.params.get(k) != run.params.get(k)]
        if differ:
            key = differ[0]
            raise MlflowReferenceError(
                f"runs {first.run_id} and {run.run_id} differ in parameter {key!r} ({first.params.get(key)!r} vs {run.params.get(key)!r}): "
                "they are not seeds of one reference",
                hint="list the runs of one configuration (--mlflow-filter \"params.lr = '0.01'\")",
            )
    by_seed: dict[int, LoggedRun] = {}
    for run in runs:
        other = by_seed.setdefault(run.seed, run)
        if other is not run:
            raise MlflowReferenceError(
                f"runs {other.run_id} and {run.run_id} logged the same seed {run.seed}: each reference seed once",
                hint="list one run a seed (by id, or narrow --mlflow-filter, e.g. to one run name)",
            )


def _flags_ran(runs: list[LoggedRun], entrypoint: list[str]) -> None:
    """An entrypoint flag that names a logged parameter must say what the runs ran with."""
    try:
        command = read_entry(entrypoint)
    except EntryCommandError as exc:
        raise UsageError(f"--entrypoint: {exc}") from None
    params = runs[0].params
    for flag, value in flags(command.arguments):
        name = flag.lstrip("-").replace("-", "_")
        logged = params.get(name, params.get(flag.lstrip("-")))
        if value is None or logged is None or _same_value(value, logged):
            continue
        raise MlflowReferenceError(
            f"the entrypoint says {flag} {value}, and run {runs[0].run_id} ran with {name}={logged}: the record would pin what the reference did not run",
            hint=f"give the entrypoint the reference ran: --entrypoint '... {flag} {logged} ...'",
        )


def _same_value(given: str, logged: str) -> bool:
    if given == logged:
        return True
    try:
        return float(given) == float(logged)
    except ValueError:
        return False


def _commit(runs: list[LoggedRun], project: Path, root: Path, manifest: Path | None = None) -> tuple[str | None, list[str]]:
    """The commit the runs were made at, when its project folder is the one being pinned: the
    same tree, or the same but for the dataset manifest init wrote there (a second init of the
    same runs finds it). Otherwise the paths that differ are named, MLflow's own store first."""
    commits = sorted({run.commit for run in runs if run.commit})
    if not commits:
        return None, ["the MLflow runs carry no git commit tag (mlflow.source.git.commit): the record pins the project folder as it is now"]
    if len(commits) > 1:
        raise MlflowReferenceError(f"the runs were made at different commits ({', '.join(c[:12] for c in commits)}): not one reference")
    commit = commits[0]
    try:
        top = Path(run_git(project, "rev-parse", "--show-toplevel", timeout=30).stdout.decode().strip())
        rel = project.resolve().relative_to(top.resolve()).as_posix()
        tree = run_git(top, "rev-parse", f"{commit}^{{commit}}:{rel}", timeout=30).stdout.decode().strip()
    except (GitError, ValueError):
        raise MlflowReferenceError(
            f"the runs were made at commit {commit[:12]}, which this repository does not have (or has no {project.name}/ in)",
            hint="fetch that commit (git fetch origin COMMIT), or run init from the repository the runs were made in",
        ) from None
    here = tree_id(project)
    rel = project.relative_to(root).as_posix()
    if tree == here:
        return commit, []
    then = recorded_files(top, tree) or {}
    differ = changed_paths(then, folder_files(project))
    if manifest is not None and differ == {"changed": [], "added": [_within(manifest, project)], "removed": []}:
        return commit, [f"the project folder is commit {commit[:12]}'s but for the dataset manifest {_within(manifest, project)} (init writes it)"]
    shown = "; ".join(f"{kind}: {', '.join(paths[:5])}" + (f" and {len(paths) - 5} more" if len(paths) > 5 else "") for kind, paths in differ.items() if paths)
    stores = sorted({p.split("/", 1)[0] for p in differ["added"] if p.split("/", 1)[0] in ("mlruns", "mlartifacts", "mlflow.db")})
    hint = (
        f"keep MLflow's store and artifacts outside {rel}/ (they are in {', '.join(s + '/' for s in stores)}): move them out and make the runs "
        "again with an experiment whose artifact_location is outside it (docs/mlflow.md)"
        if stores
        else f"check the project out as it was: git checkout {commit[:12]} -- {rel}, and move out what it did not have "
        "(or make the reference anew: reprogate init)"
    )
    raise MlflowReferenceError(
        f"the runs were made at commit {commit[:12]}, whose {rel}/ is tree {tree[:12]}; the folder here is tree {here[:12]} ({shown})", hint=hint
    )


def _within(path: Path, folder: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _matches_logged(client: Any, runs: list[LoggedRun], local: Path | None, what: str, digest: Any, query: MlflowQuery, folder: Path) -> None:
    """A configuration or manifest the runs logged must be the project's (by canonical digest)."""
    if local is None:
        return
    for run in runs:
        logged = [p for p, _ in run.artifacts if p.rsplit("/", 1)[-1] == local.name]
        if not logged:
            continue
        path = _download(client, run, logged[0], folder / run.run_id, query.tracking_uri)
        try:
            theirs, ours = digest(load_document(path).data), digest(load_document(local).data)
        except (DocumentError, CanonicalError, OSError, ValueError) as exc:
            raise MlflowReferenceError(f"run {run.run_id}: the logged {what} {logged[0]} cannot be read: {exc}") from None
        if theirs != ours:
            raise MlflowReferenceError(
                f"run {run.run_id} logged a {what} ({logged[0]}) that is not the project's {local.name}: {theirs}, the project's is {ours}",
                hint=f"the record pins the project's {what}: check out the one the reference ran with",
            )


def read_reference(
    query: MlflowQuery, project: Path, root: Path, entrypoint: list[str], config: Path | None, manifest: Path | None, metric: str | None
) -> tuple[list[int], str, ImportedReference]:
    """(the seeds in order — the first is the one a rebuild replays —, the contract's metric, the
    imported reference). The first run listed (or found) whose trace was logged comes first."""
    client = _client(query.tracking_uri)
    runs = [_logged(client, run_id, query) for run_id in _run_ids(client, query)]
    _same_params(runs, query.seed_param)
    _flags_ran(runs, entrypoint)
    commit, notes = _commit(runs, project, root, manifest)
    prefix = query.trace_path.strip("/") + "/"
    traced = next((r for r in runs if any(p.startswith(prefix) and p.endswith(".jsonl") for p, _ in r.artifacts)), runs[0])
    runs = [traced, *(r for r in runs if r is not traced)]
    with tempfile.TemporaryDirectory(prefix="reprogate-mlflow-") as scratch:
        folder = Path(scratch)
        events = _trace(client, traced, query, folder / "trace")
        _matches_logged(client, runs, config, "configuration", canonical_digest, query, folder / "config")
        _matches_logged(client, runs, manifest, "dataset manifest", manifest_digest, query, folder / "manifest")
    metas = meta_events(events)
    wrong = next((m for m in metas if m.seed is not None and m.seed != traced.seed), None)
    if wrong is not None:
        raise MlflowReferenceError(
            f"run {traced.run_id} logged {query.seed_param}={traced.seed}, and its trace's meta (rank {wrong.rank}) says seed {wrong.seed}"
        )
    name = metric or _metric_name(events, runs)
    for run in runs:
        if name not in run.metrics:
            raise MlflowReferenceError(
                f"run {run.run_id} (seed {run.seed}) logged no metric {name!r}: the contract judges it per seed",
                hint=f"it logged: {', '.join(sorted(run.metrics)) or 'no metrics'}; --metric NAME names another",
            )
    traced_metric = [e for e in events if isinstance(e, MetricEvent) and e.name == name and e.rank == 0]
    if traced_metric and not math.isclose(float(traced_metric[-1].value), traced.metrics[name], rel_tol=1e-9, abs_tol=1e-12):
        raise MlflowReferenceError(f"run {traced.run_id}: its trace reports {name} {traced_metric[-1].value!r}, MLflow holds {traced.metrics[name]!r}")
    per_seed: dict[int, list[TraceEvent]] = {traced.seed: [e for e in events if not (isinstance(e, MetricEvent) and e.name == name)]}
    per_seed[traced.seed].append(MetricEvent(name, traced.metrics[name]))
    for run in runs[1:]:
        per_seed[run.seed] = [MetricEvent(name, run.metrics[name])]
    origin = f"MLflow run(s) {', '.join(r.run_id for r in runs)} of {query.tracking_uri}"
    stages = [f"  mlflow     {r.run_id}  seed {r.seed}: {name} {r.metrics[name]:.6g}" + ("  (trace)" if r is traced else "") for r in runs]
    reference = ReferenceRuns(events=per_seed, probe={}, backend="", stages=stages, scratch_bytes=0)
    cpu = _cpu(metas, origin)
    return [r.seed for r in runs], name, ImportedReference(reference, origin, commit, not_recorded(origin), cpu, not_recorded(origin), tuple(notes))


def _metric_name(events: Iterable[TraceEvent], runs: list[LoggedRun]) -> str:
    traced = sorted({e.name for e in events if isinstance(e, MetricEvent)})
    if len(traced) == 1:
        return traced[0]
    shared = sorted(set.intersection(*(set(r.metrics) for r in runs))) if runs else []
    raise MlflowReferenceError(
        "name the metric the contract judges: --metric NAME",
        hint=f"the runs all logged: {', '.join(shared) or 'no metric in common'}",
    )


def _cpu(metas: Sequence[MetaEvent], origin: str) -> dict[str, Any]:
    """The CPU the trace's meta states (architecture, torch's kernels, MKL's mode); the rest of
    the machine is not in the store."""
    cpu = next((m.cpu for m in meta_events(metas) if m.cpu is not None), None)
    if cpu is None or not cpu.to_json():
        return not_recorded(origin)
    found: dict[str, Any] = {"present": True}
    if cpu.architecture is not None:
        found["architecture"] = cpu.architecture
    if cpu.capability is not None:
        found["capability"] = {"effective": cpu.capability.lower(), "source": "torch"}  # the trace's meta reads it from torch
    if cpu.mkl_cbwr is not None:
        found["mkl_cbwr"] = cpu.mkl_cbwr
    return found


def _missing_store(uri: str) -> str | None:
    """The file or folder a local store's URI names, when it is not there: MLflow would make an
    empty store at a mistyped path, and init must write nothing. Servers are asked, not checked."""
    scheme = urlparse(uri).scheme.split("+", 1)[0].lower() if "://" in uri else ""
    if scheme == "sqlite":
        try:
            from sqlalchemy.engine import make_url
            from sqlalchemy.exc import ArgumentError
        except ImportError:
            return None
        try:
            database = make_url(uri).database
        except ArgumentError:
            return None
        return database if database and database != ":memory:" and not Path(database).is_file() else None
    if uri.startswith("file:"):
        folder = url2pathname(urlparse(uri).path)
        return folder if not Path(folder).is_dir() else None
    if "://" not in uri and uri.split(":", 1)[0] not in REMOTE_NAMES:
        return uri if not Path(uri).is_dir() else None
    return None


def import_into(options: InitOptions, query: MlflowQuery, seeds_given: bool = False) -> None:
    """Fill `options` (seeds, metric, the imported reference) from the store, for run_init."""
    if seeds_given:
        raise UsageError("--seeds and --from-mlflow: the seeds are the runs' (their seed parameter); give one or the other")
    uri = query.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise UsageError("--from-mlflow needs the tracking store: --tracking-uri URI (e.g. sqlite:///mlflow.db) or MLFLOW_TRACKING_URI")
    missing = _missing_store(uri)
    if missing is not None:
        raise MlflowReferenceError(
            f"the tracking store {uri} does not exist: there is no {missing}",
            hint="check the path (sqlite:////abs/path.db has four slashes, sqlite:///rel/path.db is relative to here): init reads a store, it makes none",
        )
    query = dataclasses.replace(query, tracking_uri=uri)
    root, project, _, _ = layout(options)
    found = discover(project, root)
    entrypoint = options.entrypoint or found.entrypoint(project)
    if not entrypoint:
        raise UsageError("--from-mlflow: no entrypoint found in the project; give the command the runs ran: --entrypoint '...'")
    config = given_path(options.config, project) if options.config else found.config
    manifest = given_path(options.manifest, project) if options.manifest else found.manifest
    seeds, metric, imported = read_reference(query, project, root, list(entrypoint), config, manifest, options.metric or query.metric)
    options.entrypoint = list(entrypoint)
    options.seeds = seeds
    options.metric = metric
    options.imported = imported
