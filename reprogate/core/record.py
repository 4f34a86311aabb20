"""A run record as typed values: one frozen dataclass per section that code reads.

The record is read by `core.documents.load_document` (positions, YAML 1.2, bounded) and checked by
`core.schema_check.schema_diagnostics`; `read_record` then builds this value once, and code past
it (validate's rules first) reads fields, never strings into a mapping.

Each section is built on its own, and only from a subtree that passes the schema's own check of
that section: a section the schema rejected (or one the record leaves out) is None. That keeps
what validate promises — every rule runs on a broken record too, so a person sees all problems
at once — without a rule ever meeting a value of the wrong type: the schema's finding already
names what is wrong in a None section, and the rules of the other sections still run.

Only the fields some code reads are modelled; the rest stay in the `Document` (which also locates
every field for a finding's line, by the same path tuples as before). Numbers keep the type the
file wrote (JSON Schema's "number" is an int or a float), so a message quotes `0`, not `0.0`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from reprogate.core.frozen import frozen_mapping
from reprogate.core.levels import Level
from reprogate.core.schema_fastpath import Unsupported, compile_schema
from reprogate.core.schemas import SCHEMA_FILES, load_schema, validator

Direction = Literal["lower", "higher"]
FailOn = Literal["any", "worse"]
TestName = Literal["difference", "seeds", "robust", "equivalence"]
IntervalMethod = Literal["prediction", "tolerance", "tost-margin"]
HashOf = Literal["file", "trace", "argv"]
LockFormat = Literal["pip-requirements", "uv", "poetry", "pipenv", "conda-environment", "conda-lock", "pyproject", "other"]

TopologyChange = Literal["rank-remap", "device-swap", "node-change", "interconnect-change"]

KIND = "RunRecord"


@dataclass(frozen=True)
class FileRef:
    """A file the record pins: in the repository (`path`) or at a URI, with its checksum."""

    checksum: str
    path: str | None = None
    uri: str | None = None
    bytes: int | None = None


@dataclass(frozen=True)
class Interval:
    """`contract.metric.interval`: the predeclared interval and what it was computed from."""

    method: IntervalMethod
    low: float
    high: float
    alpha: float
    n: int
    mean: float | None = None
    sd: float | None = None
    resolution: float | None = None


@dataclass(frozen=True)
class Detect:
    """`contract.metric.detect`: the shift a rebuild's test must catch (one of the two) and with what power."""

    absolute: float | None = None
    relative: float | None = None
    power: float | None = None


@dataclass(frozen=True)
class Metric:
    """`contract.metric`: what a statistical comparison judges and how."""

    name: str
    direction: Direction | None = None
    fail_on: FailOn | None = None
    alpha: float | None = None
    margin: float | None = None
    interval: Interval | None = None
    resolution: float | None = None
    test: TestName | None = None
    detect: Detect | None = None
    rebuild_seeds: int | None = None


@dataclass(frozen=True)
class Steps:
    count: int
    start: int | None = None


@dataclass(frozen=True)
class Tolerance:
    abs: float | None = None
    rel: float | None = None
    quantities: tuple[str, ...] | None = None


@dataclass(frozen=True)
class FrameworkRelease:
    name: str
    release: str


@dataclass(frozen=True)
class Envelope:
    """`contract.envelope`: where a rebuild may run and still be held to the contract."""

    gpu_models: tuple[str, ...] | None = None
    nodes_min: int | None = None
    nodes_max: int | None = None
    driver_branch: tuple[str, ...] | None = None
    framework: FrameworkRelease | None = None
    os: tuple[str, ...] | None = None
    cpu_capability: tuple[str, ...] | None = None
    cpu_mkl_cbwr: tuple[str, ...] | None = None
    cpu_architectures: tuple[str, ...] | None = None
    world_sizes: tuple[int, ...] | None = None
    topology_changes: tuple[TopologyChange, ...] = ()


@dataclass(frozen=True)
class Contract:
    level: Level
    envelope: Envelope
    steps: Steps | None = None
    tolerance: Tolerance | None = None
    tensors: tuple[str, ...] | None = None
    metric: Metric | None = None
    lifetime_expires: str | None = None


@dataclass(frozen=True)
class SeedValue:
    seed: int
    value: float


@dataclass(frozen=True)
class ReferenceMetric:
    name: str
    values: tuple[SeedValue, ...]


@dataclass(frozen=True)
class ReferenceRun:
    seconds: float | None = None
    gpus: int | None = None


@dataclass(frozen=True)
class Reference:
    trace: FileRef | None = None
    metric: ReferenceMetric | None = None
    preflight: FileRef | None = None
    run: ReferenceRun | None = None


@dataclass(frozen=True)
class RankSeed:
    rank: int
    seed: int


@dataclass(frozen=True)
class Seeds:
    global_seed: int | None = None  # `seeds.global`
    python: int | None = None
    numpy: int | None = None
    torch: int | None = None
    sampler: int | None = None
    per_rank: tuple[RankSeed, ...] | None = None
    evaluation: tuple[int, ...] | None = None
    replay: tuple[int, ...] | None = None


@dataclass(frozen=True)
class LockFile:
    path: str
    checksum: str
    format: LockFormat | None = None


@dataclass(frozen=True)
class BuildRecipe:
    path: str
    checksum: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class Source:
    dirty: bool
    repository: str | None = None
    commit: str | None = None
    tree: str | None = None
    path: str | None = None
    diff_digest: str | None = None
    untracked_digest: str | None = None
    build_recipe: BuildRecipe | None = None
    lock_files: tuple[LockFile, ...] = ()


@dataclass(frozen=True)
class ManifestRef:
    digest: str
    path: str | None = None
    uri: str | None = None
    id: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class Dataset:
    """`dataset`: used or not; addressed by a manifest or inline. The inline manifest itself is a
    dataset manifest, read by that kind's rules from the document."""

    used: bool
    manifest: ManifestRef | None = None
    inline: bool = False
    reason: str | None = None  # why no dataset, where `used: false`


@dataclass(frozen=True)
class Container:
    used: bool
    registry: str | None = None
    repository: str | None = None
    digest: str | None = None
    tag: str | None = None
    image_id: str | None = None
    built_from: str | None = None
    reason: str | None = None  # why no container, where `used: false`


@dataclass(frozen=True)
class JobConfig:
    hash: str | None  # None only in init's draft of a configuration written as code (read_draft_job)
    hash_of: HashOf | None = None
    path: str | None = None
    argv: tuple[str, ...] | None = None
    checksum: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class JobEnvironment:
    """`job.environment`. Realizer names stay strings: the set is `rebuild.realizers.REALIZERS`,
    which a test may extend (tests/rebuild/test_fourth_realizer.py), and the schema's enum is held
    to it by tests/test_registries.py."""

    realizer: str
    candidate: str | None = None


@dataclass(frozen=True)
class Job:
    entrypoint: tuple[str, ...]
    config: JobConfig
    workdir: str | None = None
    environment: JobEnvironment | None = None


@dataclass(frozen=True)
class RankPlace:
    rank: int
    node: int | None = None
    local_rank: int | None = None
    device: str | None = None


@dataclass(frozen=True)
class Execution:
    world_size: int
    nodes: int | None = None
    ranks_per_node: int | None = None
    rank_mapping: tuple[RankPlace, ...] | None = None
    elastic: bool = False  # `execution.elastic.enabled`
    env: Mapping[str, str] | None = None
    collective_backend: str | None = None  # `execution.collective.backend`
    scheduler_name: str | None = None


@dataclass(frozen=True)
class Gpu:
    name: str
    uuid: str
    index: int | None = None
    node: int | None = None


@dataclass(frozen=True)
class Devices:
    present: bool = True
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: tuple[Gpu, ...] | None = None


@dataclass(frozen=True)
class Framework:
    name: str
    version: str
    cuda: str | None = None


@dataclass(frozen=True)
class Software:
    present: bool = True
    python: str | None = None
    cuda_runtime: str | None = None
    cuda_toolkit: str | None = None
    framework: Framework | None = None


@dataclass(frozen=True)
class Host:
    present: bool = True
    os_id: str | None = None
    os_version_id: str | None = None
    hostname_sha256: str | None = None


@dataclass(frozen=True)
class Checkpoint:
    step: int
    checksum: str
    path: str | None = None
    uri: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class State:
    checkpoint: Checkpoint | None = None
    generator_states: FileRef | None = None


@dataclass(frozen=True)
class Metadata:
    name: str


@dataclass(frozen=True)
class RunRecord:
    """The sections of a run record code reads; each None where the record leaves it out or the
    schema rejected it (the schema's finding says which)."""

    semantics: str | None = None
    metadata: Metadata | None = None
    contract: Contract | None = None
    container: Container | None = None
    source: Source | None = None
    dataset: Dataset | None = None
    seeds: Seeds | None = None
    execution: Execution | None = None
    job: Job | None = None
    devices: Devices | None = None
    software: Software | None = None
    host: Host | None = None
    state: State | None = None
    reference: Reference | None = None


NO_RECORD = RunRecord()  # what a rule of another document kind sees


def _strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _file_ref(data: Any) -> FileRef | None:
    if data is None:
        return None
    return FileRef(data["checksum"], data.get("path"), data.get("uri"), data.get("bytes"))


def _interval(data: Any) -> Interval | None:
    if data is None:
        return None
    return Interval(data["method"], data["low"], data["high"], data["alpha"], int(data["n"]), data.get("mean"), data.get("sd"), data.get("resolution"))


def _metric(data: Any) -> Metric | None:
    if data is None:
        return None
    detect = data.get("detect")
    rebuild_seeds = data.get("rebuild_seeds")
    return Metric(
        name=data["name"],
        direction=data.get("direction"),
        fail_on=data.get("fail_on"),
        alpha=data.get("alpha"),
        margin=data.get("margin"),
        interval=_interval(data.get("interval")),
        resolution=data.get("resolution"),
        test=data.get("test"),
        detect=None if detect is None else Detect(detect.get("absolute"), detect.get("relative"), detect.get("power")),
        rebuild_seeds=None if rebuild_seeds is None else int(rebuild_seeds),
    )


def _int(value: Any) -> int | None:
    """A schema "integer" (which admits 1.0) as an int."""
    return None if value is None else int(value)


def _contract(data: Any) -> Contract:
    envelope = data["envelope"]
    nodes, framework, cpu = envelope.get("nodes") or {}, envelope.get("framework"), envelope.get("cpu") or {}
    steps, tolerance = data.get("steps"), data.get("tolerance")
    return Contract(
        level=data["level"],
        envelope=Envelope(
            gpu_models=_strings(envelope.get("gpu_models")),
            nodes_min=_int(nodes.get("min")),
            nodes_max=_int(nodes.get("max")),
            driver_branch=_strings(envelope.get("driver_branch")),
            framework=None if framework is None else FrameworkRelease(framework["name"], framework["release"]),
            os=_strings(envelope.get("os")),
            cpu_capability=_strings(cpu.get("capability")),
            cpu_mkl_cbwr=_strings(cpu.get("mkl_cbwr")),
            cpu_architectures=_strings(cpu.get("architectures")),
            world_sizes=_ints(envelope.get("world_sizes")),
            topology_changes=tuple(envelope.get("topology_changes") or ()),
        ),
        steps=None if steps is None else Steps(int(steps["count"]), _int(steps.get("start"))),
        tolerance=None if tolerance is None else Tolerance(tolerance.get("abs"), tolerance.get("rel"), _strings(tolerance.get("quantities"))),
        tensors=_strings(data.get("tensors")),
        metric=_metric(data.get("metric")),
        lifetime_expires=(data.get("lifetime") or {}).get("expires"),
    )


def _reference(data: Any) -> Reference:
    metric, run = data.get("metric"), data.get("run")
    return Reference(
        trace=_file_ref(data.get("trace")),
        metric=None if metric is None else ReferenceMetric(metric["name"], tuple(SeedValue(int(v["seed"]), v["value"]) for v in metric["values"])),
        preflight=_file_ref(data.get("preflight")),
        run=None if run is None else ReferenceRun(run.get("seconds"), _int(run.get("gpus"))),
    )


def _ints(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(v) for v in value)


def _seeds(data: Any) -> Seeds:
    per_rank = data.get("per_rank")
    return Seeds(
        global_seed=_int(data.get("global")),
        python=_int(data.get("python")),
        numpy=_int(data.get("numpy")),
        torch=_int(data.get("torch")),
        sampler=_int(data.get("sampler")),
        per_rank=None if per_rank is None else tuple(RankSeed(int(e["rank"]), int(e["seed"])) for e in per_rank),
        evaluation=_ints(data.get("evaluation")),
        replay=_ints(data.get("replay")),
    )


def _source(data: Any) -> Source:
    recipe = data.get("build_recipe")
    return Source(
        dirty=data["dirty"],
        repository=data.get("repository"),
        commit=data.get("commit"),
        tree=data.get("tree"),
        path=data.get("path"),
        diff_digest=data.get("diff_digest"),
        untracked_digest=data.get("untracked_digest"),
        build_recipe=None if recipe is None else BuildRecipe(recipe["path"], recipe.get("checksum"), recipe.get("revision")),
        lock_files=tuple(LockFile(e["path"], e["checksum"], e.get("format")) for e in data.get("lock_files") or ()),
    )


def _dataset(data: Any) -> Dataset:
    if data.get("used") is False:
        return Dataset(False, reason=data.get("reason"))
    manifest = data.get("manifest")
    ref = None if manifest is None else ManifestRef(manifest["digest"], manifest.get("path"), manifest.get("uri"), manifest.get("id"), manifest.get("version"))
    return Dataset(True, ref, "inline" in data)


def _container(data: Any) -> Container:
    if data.get("used") is False:
        return Container(False, reason=data.get("reason"))
    get = data.get
    return Container(True, get("registry"), get("repository"), get("digest"), get("tag"), get("image_id"), get("built_from"))


def _job(data: Any) -> Job:
    config, environment = data["config"], data.get("environment")
    return Job(
        entrypoint=tuple(data["entrypoint"]),
        config=JobConfig(config.get("hash"), config.get("hash_of"), config.get("path"), _strings(config.get("argv")), config.get("checksum"), config.get("id")),
        workdir=data.get("workdir"),
        environment=None if environment is None else JobEnvironment(environment["realizer"], environment.get("candidate")),
    )


def _execution(data: Any) -> Execution:
    mapping, env = data.get("rank_mapping"), data.get("env")
    return Execution(
        world_size=int(data["world_size"]),
        nodes=_int(data.get("nodes")),
        ranks_per_node=_int(data.get("ranks_per_node")),
        rank_mapping=None
        if mapping is None
        else tuple(RankPlace(int(e["rank"]), _int(e.get("node")), _int(e.get("local_rank")), e.get("device")) for e in mapping),
        elastic=(data.get("elastic") or {}).get("enabled") is True,
        env=None if env is None else frozen_mapping(env),
        collective_backend=(data.get("collective") or {}).get("backend"),
        scheduler_name=data.get("scheduler_name"),
    )


def _devices(data: Any) -> Devices:
    gpus = data.get("gpus")
    return Devices(
        present=data.get("present", True),
        driver_version=data.get("driver_version"),
        cuda_driver_version=data.get("cuda_driver_version"),
        gpus=None if gpus is None else tuple(Gpu(g["name"], g["uuid"], _int(g.get("index")), _int(g.get("node"))) for g in gpus),
    )


def _software(data: Any) -> Software:
    framework = data.get("framework")
    return Software(
        present=data.get("present", True),
        python=data.get("python"),
        cuda_runtime=data.get("cuda_runtime"),
        cuda_toolkit=data.get("cuda_toolkit"),
        framework=None if framework is None else Framework(framework["name"], framework["version"], framework.get("cuda")),
    )


def _host(data: Any) -> Host:
    os = data.get("os") or {}
    return Host(data.get("present", True), os.get("id"), os.get("version_id"), data.get("hostname_sha256"))


def _state(data: Any) -> State:
    checkpoint = data.get("checkpoint")
    return State(
        checkpoint=None
        if checkpoint is None
        else Checkpoint(int(checkpoint["step"]), checkpoint["checksum"], checkpoint.get("path"), checkpoint.get("uri"), checkpoint.get("id")),
        generator_states=_file_ref(data.get("generator_states")),
    )


_BUILDERS: dict[str, Callable[[Any], Any]] = {
    "semantics": lambda value: value,
    "metadata": lambda value: Metadata(value["name"]),
    "contract": _contract,
    "container": _container,
    "source": _source,
    "dataset": _dataset,
    "seeds": _seeds,
    "execution": _execution,
    "job": _job,
    "devices": _devices,
    "software": _software,
    "host": _host,
    "state": _state,
    "reference": _reference,
}


@functools.cache
def section_check(name: str) -> Callable[[Any], bool]:
    """The schema's check of one top-level section, alone: the record's schema with every other
    property dropped and nothing required, so its `$defs` and cross-file references still resolve."""
    root = load_schema(KIND)
    alone = {key: value for key, value in root.items() if key not in ("required", "additionalProperties", "patternProperties", "properties")}
    alone["properties"] = {name: root["properties"][name]}
    others = [load_schema(k) for k in SCHEMA_FILES if k != KIND]
    try:
        check = compile_schema(alone, *others)
    except Unsupported:  # as schema_check falls back: jsonschema answers for every value
        check = validator(KIND).evolve(schema=alone).is_valid
    return lambda value: bool(check({name: value}))


def read_record(data: Any, schema_valid: bool = False) -> RunRecord:
    """The typed record of a run record's data: each section built from its subtree when the
    schema accepts that subtree, else None. `schema_valid`: the whole record already passed the
    schema (the common case), so no section is checked again."""
    if not isinstance(data, dict):
        return NO_RECORD
    sections: dict[str, Any] = {}
    for name, build in _BUILDERS.items():
        value = data.get(name)
        if value is None or not (schema_valid or section_check(name)(value)):
            sections[name] = None
        else:
            sections[name] = build(value)
    return RunRecord(**sections)


DRAFT_HASH = "canonical-v1:sha256:" + "0" * 64  # stands in for the hash a draft does not have yet, for the schema's check alone


def read_draft_job(data: Any) -> Job | None:
    """The `job` section of the draft `init` runs its reference through: a configuration written
    as code (`hash_of: trace`) has no hash until the reference's trace gives it, which the schema
    (and so `read_record`) rejects. The section is checked as the schema checks it with a stand-in
    hash, every other field as strictly as a record's, and built with no hash (`JobConfig.hash`
    None); None when it fails that check too."""
    if not isinstance(data, dict) or not isinstance(data.get("job"), dict):
        return None
    job = data["job"]
    config = job.get("config")
    awaiting_hash = isinstance(config, dict) and "hash" not in config and config.get("hash_of") == "trace"
    checked = {**job, "config": {**config, "hash": DRAFT_HASH}} if awaiting_hash else job
    return _job(job) if section_check("job")(checked) else None


__all__ = [
    "KIND",
    "NO_RECORD",
    "BuildRecipe",
    "Checkpoint",
    "Container",
    "Contract",
    "Dataset",
    "Detect",
    "Devices",
    "Direction",
    "Envelope",
    "Execution",
    "FailOn",
    "FileRef",
    "Framework",
    "FrameworkRelease",
    "Gpu",
    "HashOf",
    "Host",
    "Interval",
    "IntervalMethod",
    "Job",
    "JobConfig",
    "JobEnvironment",
    "LockFile",
    "LockFormat",
    "ManifestRef",
    "Metadata",
    "Metric",
    "RankPlace",
    "RankSeed",
    "Reference",
    "ReferenceMetric",
    "ReferenceRun",
    "RunRecord",
    "SeedValue",
    "Seeds",
    "Software",
    "Source",
    "State",
    "Steps",
    "TestName",
    "TopologyChange",
    "Tolerance",
    "read_draft_job",
    "read_record",
    "section_check",
]
