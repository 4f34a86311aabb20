"""`reprogate init [PROJECT]`: check what it was told, run the reference, write all or nothing.

Layout (what makes a record rebuildable): the training code lives in a folder of its own inside
the repository (PROJECT, pinned by the git tree id of its files); the record goes to
`records/NAME.yaml` and the reference trace to `reference/NAME/trace.jsonl` at the repository
root, both outside that folder, since writing them must not change the tree they pin. The data,
its manifest, the configuration, lock files and Dockerfile may live inside the folder: the
rebuild checks each at its own stage.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import resource
import shlex
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprogate.capture import CaptureContext, run_layer
from reprogate.capture import container as container_layer
from reprogate.capture import cpu as cpu_layer
from reprogate.capture import devices as devices_layer
from reprogate.capture import host as host_layer
from reprogate.capture import source as source_layer
from reprogate.capture.command import lock_globs
from reprogate.capture.storage import measured_node, measured_storage
from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.core.config import CONFIG_NAME
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document, load_text
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.git import GitError, ignored_paths, run_git
from reprogate.core.gittree import tree_id
from reprogate.core.levels import LEVELS
from reprogate.core.progress import shown, switch_off
from reprogate.core.record import read_record
from reprogate.core.schemas import modeline
from reprogate.core.yamlout import dump_yaml
from reprogate.datasets import manifest_digest
from reprogate.datasets.build import BuildError, BuildOptions, build_manifest, manifest_fields
from reprogate.datasets.verify import VerifyOptions, verify
from reprogate.init.arguments import ArgumentsPin, arguments_pin, mentions, torchrun_world_size
from reprogate.init.discover import Found
from reprogate.init.discover import discover as discover  # the command line names it from here
from reprogate.init.draft import Plan, before_reference, complete, trace_text
from reprogate.init.imported import ImportedReference
from reprogate.init.reference import run_reference
from reprogate.output.result import CommandResult
from reprogate.rebuild.planner import run_cost
from reprogate.rules.addressed import CONFIGURATION_HINT
from reprogate.runtime.portable_cpu import FIXED_THREADS_ENV, portable_cpu_env
from reprogate.validate.runner import Options, validate_document

LOCK_NAMES = ("requirements.txt", "uv.lock")  # the usual name first, before requirements-dev.txt and the like


@dataclass
class InitOptions:
    project: Path = Path(".")
    record: Path | None = None
    name: str | None = None
    entrypoint: list[str] | None = None
    config: Path | None = None
    data: Path | None = None
    manifest: Path | None = None
    no_dataset: str | None = None
    level: str | None = None
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3])
    world_size: int | None = None  # None: what a torchrun entrypoint starts, else 1
    metric: str | None = None
    direction: str = "lower"
    fail_on: str = "any"  # worse: the metric's test is one-sided (contract.metric.fail_on)
    tensors: list[str] = field(default_factory=lambda: ["model_state"])
    resolution: float | None = None
    detect: dict[str, float] | None = None
    margin: float | None = None
    realizer: str | None = None
    image: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    portable_cpu: bool = False
    timeout: float = 900.0
    cache: Path | None = None
    force: bool = False
    imported: ImportedReference | None = None  # a reference that ran elsewhere (--from-mlflow): its runs are not made again
    quiet: bool = False  # no progress line on stderr


class Written:
    """Files init writes, what was there before, and the folders it made for them: undone
    together if anything fails, so a failed init leaves the repository as it found it."""

    def __init__(self) -> None:
        self.done: list[tuple[Path, bytes | None]] = []
        self.folders: list[Path] = []  # made by init, outermost first

    def write(self, path: Path, text: str) -> None:
        self.done.append((path, path.read_bytes() if path.exists() else None))
        missing = [folder for folder in reversed(path.parents) if not folder.exists()]
        self.folders += [folder for folder in missing if folder not in self.folders]
        atomic_write(path, text)

    @property
    def paths(self) -> list[Path]:
        return [path for path, _ in self.done]

    def undo(self) -> None:
        for path, before in reversed(self.done):
            try:
                if before is None:
                    path.unlink(missing_ok=True)
                else:
                    path.write_bytes(before)
            except OSError:
                pass
        for folder in reversed(self.folders):  # innermost first; only if nothing else was put there
            try:
                folder.rmdir()
            except OSError:
                pass
        self.done.clear()
        self.folders.clear()


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root).as_posix()


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def _marked_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` that a .git or .reprogate.yaml marks as the repository root."""

    return next((f for f in (start, *start.parents) if (f / CONFIG_NAME).is_file() or (f / ".git").exists()), None)


def layout(options: InitOptions) -> tuple[Path, Path, Path, str]:
    """(repository root, project folder, record path, name), refusing a layout no rebuild could replay."""
    project = options.project.resolve()
    if not project.is_dir():
        raise UsageError(f"{options.project}: not a folder (PROJECT is the folder that holds the training code)")
    root = _marked_root(project)
    if root is None:
        raise UsageError(
            f"{options.project} is not inside a repository (no .git or .reprogate.yaml above it)",
            hint="run `git init` at the repository root; the training code goes in a folder of its own below it",
        )
    if project == root:
        raise UsageError(
            f"{options.project} is the repository root ({root}); its tree would contain the record, so no record of it could be rebuilt",
            hint="keep the training code in a folder of its own (e.g. `mkdir train && git mv train.py config data train/`), "
            "then run `reprogate init train` from the repository root (a .git or .reprogate.yaml marks it)",
        )
    name = options.name or project.name
    record = (options.record or root / "records" / f"{name}.yaml").resolve()
    if _inside(record, project):
        raise UsageError(
            f"{record}: inside {_rel(project, root)}, the folder whose tree the record pins; writing it would change that tree",
            hint="put records outside the project folder: --record records/NAME.yaml",
        )
    if not _inside(record, root):
        raise UsageError(f"{record}: outside the repository root {root}; a record addresses files relative to it")
    if record.exists() and not options.force:
        raise UsageError(f"{_rel(record, root)} exists; nothing was run", hint="--force replaces it (its reference is remade), or --name chooses another")
    return root, project, record, name


def given_path(path: Path, project: Path) -> Path:
    """A path given on the command line, resolved like --entrypoint: against the project folder
    (where the run starts), else, when no such file is there, against the current folder."""
    if not path.is_absolute() and (project / path).exists():
        return (project / path).resolve()
    return path.resolve()


CODE_SUFFIXES = (".py",)  # a configuration a script executes (nanoGPT's configurator) rather than reads


@dataclass(frozen=True)
class ConfigPin:
    """The configuration as init pins it: a data file by its parsed content's hash; code by its
    bytes now and, once the reference has run, by what it handed Tracer(config=...)."""

    path: str
    hash: str | None  # None for code until the reference runs
    code_checksum: str | None = None


def _config(options: InitOptions, found: Found, root: Path, project: Path) -> ConfigPin:
    path = given_path(options.config, project) if options.config else found.config
    if path is None:
        raise UsageError(
            "no configuration file found in the project",
            hint="--config PATH (YAML, JSON or TOML: its canonical hash is the record's job.config.hash; or the Python file the script executes)",
        )
    path = path.resolve()
    if not path.is_file() or not _inside(path, root):
        raise UsageError(f"--config {path}: not a file inside the repository {root}")
    if path.suffix in CODE_SUFFIXES:
        return ConfigPin(_rel(path, root), None, "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest())
    try:
        data = load_document(path).data
        if not isinstance(data, (dict, list)):
            raise UsageError(
                f"{_rel(path, root)} is not a mapping or a list (it reads as one {type(data).__name__}): a configuration written as code "
                "cannot be pinned by its text",
                hint=CONFIGURATION_HINT,
            )
        return ConfigPin(_rel(path, root), canonical_digest(data))
    except DocumentError as exc:
        raise UsageError(f"{_rel(path, root)}: {exc.diagnostics[0].message}") from None
    except CanonicalError as exc:
        raise UsageError(f"{_rel(path, root)} has no canonical form: {exc}") from None


def _configuration(options: InitOptions, found: Found, root: Path, project: Path, entrypoint: list[str]) -> ConfigPin | ArgumentsPin:
    """A configuration file (given, or found and not contradicted by the entrypoint), else the
    entrypoint's own arguments: a script configured on its command line (`python train.py --lr
    3e-4`), or one given with arguments that do not name the file found, is pinned by its argv."""
    if options.config is not None:
        return _config(options, found, root, project)
    arguments = entrypoint[2:] if len(entrypoint) > 2 else []
    if found.config is not None and (options.entrypoint is None or not arguments or mentions(entrypoint, found.config, project)):
        return _config(options, found, root, project)
    return arguments_pin(entrypoint)


def code_config_passed(config: ConfigPin, entrypoint: list[str], project: Path, root: Path, given: bool, notes: list[str]) -> None:
    """A configuration written as code does something only when the script is handed it (nanoGPT's
    configurator reads `python train.py config/train_gpt2.py`): pinning one the entrypoint never
    names pins a file the run ignores. Refused for the entrypoint init made up; a note for one
    given (the script may import it by itself)."""
    if config.code_checksum is None:
        return
    target = (root / config.path).resolve()
    for arg in entrypoint:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        try:
            if value and (project / value).resolve() == target:
                return
        except (OSError, ValueError):
            continue
    shown = Path(os.path.relpath(target, project)).as_posix()
    if given:
        notes.append(f"the entrypoint never names {config.path}: the record pins it, so make sure the script reads it")
        return
    raise UsageError(
        f"--config {config.path} is code the script must be handed, and the entrypoint init found ({shlex.join(entrypoint)}) never names it: "
        "the record would pin a file the run ignores",
        hint=f"name it in the entrypoint as the script takes it, e.g. --entrypoint {shlex.quote(shlex.join([*entrypoint, shown]))}",
    )


def _dataset(options: InitOptions, found: Found, root: Path, project: Path, written: Written, notes: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    """(record's dataset.manifest, or None and why): an existing manifest, or one built from the data folder."""
    if options.no_dataset:
        return None, options.no_dataset
    data = given_path(options.data, project) if options.data else None
    manifest = given_path(options.manifest, project) if options.manifest else None
    if data is None and manifest is None:
        data = found.data
        manifest = found.manifest if found.manifest is not None and data is not None and _inside(found.manifest, data) else None
    if data is None and manifest is None:
        notes.append("no data folder found: the record says the run reads no dataset (--data DIR if it does)")
        return None, "reprogate init found no data folder and was given none"
    if data is None:
        assert manifest is not None
        try:
            content = load_document(manifest).data
        except DocumentError as exc:
            raise UsageError(f"--manifest {manifest}: {exc.diagnostics[0].message}") from None
        if not isinstance(content, dict) or not _inside(manifest, root):
            raise UsageError(f"--manifest {manifest}: not a dataset manifest inside the repository")
        return {"id": str(content.get("id")), "path": _rel(manifest, root), "digest": manifest_digest(content)}, None
    if not data.is_dir() or not _inside(data, root):
        raise UsageError(f"--data {data}: not a folder inside the repository {root}")

    existing = sorted(p for p in data.iterdir() if p.is_file() and ".manifest." in p.name)
    target = manifest or (existing[0] if len(existing) == 1 else data / f"{data.name}.manifest.yaml")
    base: Any = {}
    if target.exists() and manifest is None:
        if verify(target, VerifyOptions(quiet=True)).exit_code == 0:  # still true of the data: keep it as written
            content = load_document(target).data
            notes.append(f"{_rel(target, root)} still matches {_rel(data, root)}: kept as it is")
            return {
                "id": str(content.get("id")),
                "path": _rel(target, root),
                "digest": manifest_digest(content),
                **({"version": str(content["version"])} if content.get("version") else {}),
            }, None
    if target.exists():
        try:
            base = load_document(target).data
        except DocumentError:
            base = {}
    namespace = None if target.parent == data else Path(os.path.relpath(data, target.parent)).as_posix()
    inside = target.resolve().parent == data.resolve() or data.resolve() in target.resolve().parents
    with tempfile.TemporaryDirectory(prefix="reprogate-init-") as scratch:
        # built aside and written with the record, so a failure later leaves nothing written
        build = BuildOptions(
            data,
            Path(scratch) / target.name,
            exclude=[Path(os.path.relpath(target, data)).as_posix()] if inside else [],
            quiet=not shown(),
            id=(base.get("id") if isinstance(base, dict) else None) or data.name,
            namespace=namespace,
            base=base if isinstance(base, dict) else {},
        )
        try:
            built = build_manifest(build, written_by="reprogate init")
        except BuildError as exc:
            raise UsageError(f"the dataset in {_rel(data, root)} cannot be described: {exc.message}") from None
        text = build.output.read_text(encoding="utf-8")
    if not target.exists() or target.read_text(encoding="utf-8", errors="replace") != text:
        written.write(target, text)
        notes.append(f"wrote {_rel(target, root)}: {built.shards} shard(s) of {_rel(data, root)}")
    fields = manifest_fields(build)
    ref = {"id": str(fields["id"]), "path": _rel(target, root), "digest": built.digest}
    if fields.get("version"):
        ref["version"] = str(fields["version"])
    return ref, None


def _source(project: Path, root: Path, exclude: list[Path]) -> dict[str, Any]:
    """What capture's source layer finds, with paths relative to the repository root and only
    the lock files of the project (inside its folder, else at the root)."""

    found = run_layer(source_layer, CaptureContext(root=project, framework=False, lock_globs=lock_globs(root), exclude=exclude))
    if found.get("present") is False:
        return {"dirty": False}
    try:
        out = run_git(project, "rev-parse", "--show-toplevel", timeout=30).stdout
    except GitError:
        out = b""
    top = Path(out.decode().strip()) if out.strip() else root
    locks = []
    for entry in found.get("lock_files") or []:
        path = (top / entry["path"]).resolve()
        if _inside(path, root):
            locks.append({**entry, "path": _rel(path, root)})
    prefix = _rel(project, root) + "/"
    mine = [e for e in locks if e["path"].startswith(prefix)] or [e for e in locks if "/" not in e["path"]]
    found["lock_files"] = sorted(mine, key=lambda e: (e["path"].rsplit("/", 1)[-1] not in LOCK_NAMES, e["path"]))  # the venv realizer installs the first
    found["job_start_installs"] = found.get("job_start_installs") or []
    return found


def _realizer(options: InitOptions, source: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    if options.image and "@sha256:" not in options.image:
        raise UsageError(f"--image {options.image}: pin the image by digest (REF@sha256:...)", hint="reprogate image resolve REF prints the digest")
    realizer = options.realizer or ("container" if options.image else "venv" if source.get("lock_files") else "current")
    if realizer == "venv" and not source.get("lock_files"):
        raise UsageError(
            "the venv realizer needs a lock file, and the project has none",
            hint="make one with hashes: uv pip compile --generate-hashes requirements.in -o requirements.txt",
        )
    if realizer == "container":
        if not options.image:
            raise UsageError("the container realizer needs the image the reference runs in: --image REF@sha256:...")

        found = container_layer.capture(CaptureContext(root=options.project, image=options.image, framework=False))
        return realizer, {k: found[k] for k in ("registry", "repository", "tag", "digest") if k in found}
    return realizer, None


def run_init(options: InitOptions) -> CommandResult:
    switch_off(options.quiet)

    if options.level is not None and options.level not in LEVELS:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}")
    if not options.seeds or len(set(options.seeds)) != len(options.seeds):
        raise UsageError("--seeds: give distinct integers, e.g. 1,2,3")
    if options.level == "statistical" and len(options.seeds) < 2:
        raise UsageError("a statistical contract needs at least 2 reference seeds (5 or more recommended): --seeds 1,2,3,4,5")
    root, project, record_path, name = layout(options)
    found = discover(project, root)
    given_config = given_path(options.config, project) if options.config else None
    entrypoint = options.entrypoint or found.entrypoint(project, given_config.resolve() if given_config is not None else None)
    if not entrypoint:
        raise UsageError(
            f"no entrypoint found in {_rel(project, root)} (looked for train.py, main.py, run.py)",
            hint="--entrypoint 'python train.py --config ../config.yaml' (run from the project folder)",
        )
    world_size = torchrun_world_size(entrypoint, options.world_size) or options.world_size or 1
    config = _configuration(options, found, root, project, entrypoint)
    if isinstance(config, ConfigPin):
        code_config_passed(config, entrypoint, project, root, given=options.entrypoint is not None, notes=found.notes)
    trace_path = root / "reference" / name / "trace.jsonl"
    if _inside(trace_path, project):
        raise UsageError(f"the reference trace would go inside {_rel(project, root)}; choose another --name")
    notes = list(found.notes)
    written = Written()
    try:
        manifest, no_dataset = _dataset(options, found, root, project, written, notes)
        # what init itself writes (the record, the trace, a manifest it built) is not dirt
        source = _source(project, root, [record_path, trace_path, *written.paths])
        realizer, container = _realizer(options, source)
        if realizer != "current":  # the environment is the lock or the image; what this CLI has installed says nothing of it
            source["job_start_installs"] = []
        if len(source.get("lock_files") or []) > 1 and realizer == "venv":
            notes.append(f"several lock files; the venv is made from {source['lock_files'][0]['path']} (the first)")
        recipe = None
        if found.recipe is not None and _inside(found.recipe, root):
            recipe = {"path": _rel(found.recipe, root), "checksum": "sha256:" + hashlib.sha256(found.recipe.read_bytes()).hexdigest()}
        env = {**({**FIXED_THREADS_ENV, **portable_cpu_env()} if options.portable_cpu else {}), **options.env}
        plan = Plan(
            name=name,
            project=_rel(project, root),
            tree=tree_id(project),
            entrypoint=list(entrypoint),
            config=config.path if isinstance(config, ConfigPin) else None,
            config_hash=config.hash,
            config_code_checksum=config.code_checksum if isinstance(config, ConfigPin) else None,
            config_arguments=config.argv if isinstance(config, ArgumentsPin) else None,
            realizer=realizer,
            world_size=world_size,
            seeds=list(options.seeds),
            env=env,
            manifest=manifest,
            no_dataset=no_dataset,
            recipe=recipe,
            source=source,
            container=container,
            level=options.level,
            metric=options.metric,
            direction=options.direction,
            fail_on=options.fail_on,
            tensors=list(options.tensors),
            resolution=options.resolution,
            detect=options.detect,
            margin=options.margin,
        )
        record = before_reference(plan)
        imported = options.imported
        peak_before = children_peak_bytes()
        runs = imported.runs if imported is not None else run_reference(record, root, list(plan.seeds), options.timeout, options.cache)
        peak_after = children_peak_bytes()
        primary = runs.events.get(plan.seeds[0]) or []
        text = trace_text(primary)
        checksum = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        capture = CaptureContext(root=project, framework=False)
        machine = (
            (imported.host, imported.cpu, imported.devices)
            if imported is not None
            else (run_layer(host_layer, capture), run_layer(cpu_layer, capture), run_layer(devices_layer, capture))
        )
        notes += complete(
            record,
            plan,
            runs.events,
            _rel(trace_path, root),
            checksum,
            runs.probe,
            runs.backend,
            *machine,
        )
        if imported is not None:
            notes += list(imported.notes)
            record["execution"].pop("collective", None)  # the store does not say which backend the ranks used
            if imported.commit:
                record["source"]["commit"] = imported.commit
        record["contract"]["envelope"]["storage"] = {**measured_storage(record, root), "scratch_bytes": runs.scratch_bytes}
        if runs.seconds:  # what one run costs, for `interval --plan` to price rebuild seeds
            record["reference"]["run"] = {"seconds": round(statistics.median(runs.seconds), 3), "gpus": run_cost(read_record(record), None).gpus}
        ran_here = imported is None and peak_after > peak_before  # an imported reference ran elsewhere
        record["contract"]["envelope"]["node"] = measured_node(record, machine[2], peak_after if ran_here else None)
        written.write(trace_path, text)
        wrote_config = _write_config(root, record_path, written, notes)
        _write_record(record, record_path, root, written)
    except BaseException:
        written.undo()
        raise
    contract = record["contract"]
    metric = contract.get("metric") or {}
    interval = metric.get("interval")
    said = f", {metric['name']} interval [{interval['low']:.6g}, {interval['high']:.6g}] from {interval['n']} seeds" if interval else ""
    lines = [
        f"wrote {_rel(record_path, root)}: {contract['level']} contract, {plan.world_size} rank(s), seeds {plan.seeds}, "
        f"{contract['steps']['count']} step(s){said}",
        f"wrote {_rel(trace_path, root)}: the reference trace (seed {plan.seeds[0]}, every rank)",
    ]
    if wrote_config:
        lines.append(f"wrote .reprogate.yaml: records/*.yaml, reference {_rel(record_path, root)}")
    stderr = [f"note: {n}" for n in notes]
    stderr += [
        f"the reference was imported from {options.imported.origin}:" if options.imported else "the reference ran as a rebuild will run it:",
        *runs.stages,
    ]
    adding = to_commit(root, [_rel(p, root) for p, _ in written.done], pinned_paths(record, root, _rel(record_path, root)))
    stderr += [
        f"warning: {path} is pinned but ignored by git ({rule}): a clean checkout (what CI gets) will not have it" for path, rule in adding.ignored.items()
    ]
    stderr += [f"next: {adding.command} && reprogate validate && reprogate rebuild {_rel(record_path, root)}"]
    return CommandResult(ExitCode.OK, lines, stderr)


def children_peak_bytes() -> int:
    """The largest peak resident memory of any process this one has waited for (Linux counts KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


@dataclass(frozen=True)
class ToCommit:
    """What `git add` must be told to commit everything a record pins: the folders init wrote
    into, and (forced, with -f) each pinned file a .gitignore rule would leave out."""

    folders: tuple[str, ...]
    ignored: dict[str, str]  # pinned path -> the rule that ignores it (`.gitignore:7:*.bin`)

    @property
    def command(self) -> str:
        forced = f"git add -f {shlex.join(self.ignored)}" if self.ignored else ""
        plain = f"git add {shlex.join(self.folders)}" if self.folders else ""
        return " && ".join(part for part in (forced, plain) if part)


def to_commit(root: Path, written: list[str], pinned: list[str]) -> ToCommit:
    """The `git add` line for what init wrote and what the record pins: a plain `git add` of an
    ignored file fails, and of an ignored folder too (even one with tracked files in it), so
    ignored files are named with -f and ignored folders left to that."""
    ignored = ignored_paths(root, sorted(set(pinned) | set(written)))
    tops = sorted({path.split("/")[0] for path in written})
    ignored_tops = ignored_paths(root, tops, rules_only=True)
    forced = {**ignored, **{path: rule for path in written if (rule := ignored_tops.get(path.split("/")[0])) and path not in ignored}}
    return ToCommit(tuple(t for t in tops if t not in ignored_tops), dict(sorted(forced.items())))


def pinned_paths(record: dict[str, Any], root: Path, record_rel: str) -> list[str]:
    """Every repository path the record pins (configuration, manifest and its in-repository shards,
    lock files, build recipe, reference trace) and the record itself, relative to the root."""
    paths = [record_rel]
    for section, *keys in (("job", "config", "path"), ("dataset", "manifest", "path"), ("source", "build_recipe", "path"), ("reference", "trace", "path")):
        value: Any = record.get(section)
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str):
            paths.append(value)
    paths += [entry["path"] for entry in (record.get("source") or {}).get("lock_files") or [] if isinstance(entry.get("path"), str)]
    manifest_rel = ((record.get("dataset") or {}).get("manifest") or {}).get("path")
    if isinstance(manifest_rel, str):
        paths += _shard_paths(root, manifest_rel)
    return list(dict.fromkeys(paths))


def _shard_paths(root: Path, manifest_rel: str) -> list[str]:
    """The manifest's shards and files that live in the repository (a local namespace), relative to the root."""
    try:
        data = load_document(root / manifest_rel).data
    except (DocumentError, OSError):
        return []
    if not isinstance(data, dict) or "://" in str(data.get("namespace") or ""):
        return []
    folder = (root / manifest_rel).parent / str(data.get("namespace") or ".")
    found = []
    for entry in [*(data.get("shards") or []), *(data.get("files") or [])]:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and _inside(folder / entry["name"], root):
            found.append(_rel(folder / entry["name"], root))
    return found


def _write_config(root: Path, record_path: Path, written: Written, notes: list[str]) -> bool:

    path = root / CONFIG_NAME
    rel = _rel(record_path, root)
    if path.exists():
        try:
            data = load_document(path).data
        except DocumentError:
            data = {}
        if isinstance(data, dict) and not data.get("reference"):
            notes.append(f"{CONFIG_NAME} names no reference record: add `reference: {rel}` so the gate rebuilds it")
        return False
    text = modeline("Config") + (
        "# reprogate configuration: where the records are and which one the gate rebuilds (see reprogate's\n"
        "# docs/adopting.md). Paths are relative to this folder, the repository root.\n"
        "apiVersion: reprogate/v1\nkind: Config\nrecords:\n  - records/*.yaml\n"
        f"reference: {rel}\n"
        "rebuild:\n  workflow: reference-rebuild.yml  # the name of the example rebuild workflow (examples/workflows)\n"
    )
    written.write(path, text)
    return True


def _write_record(record: dict[str, Any], path: Path, root: Path, written: Written) -> None:
    """Validate the record where it will live (its paths resolve from the root), then write it."""

    header = (
        "Written by `reprogate init`: the reference trace and the metric of each seed come from running the\n"
        "entrypoint as `reprogate rebuild` runs it. Review the contract (level, steps, tolerance, envelope)\n"
        "before committing: it is what a rebuild must reproduce."
    )
    text = modeline("RunRecord") + dump_yaml(record, header)
    doc = load_text(text, _rel(path, root))
    findings = [d for d in validate_document(doc, "RunRecord", Options(root=root, today=datetime.date.today()), {}, path) if d.severity.value == "error"]
    if findings:
        raise CheckFailed("the record init made does not validate; nothing was written", diagnostics=findings)
    written.write(path, text)
