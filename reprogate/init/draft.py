"""The record `reprogate init` writes, section by section.

`before_reference` is everything a rebuild needs to run the entrypoint (the pins, the shape, the
environment); `complete` adds what only the reference runs can tell: the trace, the metric per
seed and its interval, the contract's steps and tensors, the envelope the reference lies inside,
and the software the training process really had (its trace's meta and the environment's probe).
"""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reprogate import __version__
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.record import read_record
from reprogate.core.seedstats import (
    POWER,
    TAIL_SEEDS,
    assured_power,
    assured_sigma,
    band_minimum,
    grid_step,
    holds_tails,
    mean_sd,
    minimum_detectable_shift,
    runs_for_judged,
    seeds_needed,
    trace_replays,
)
from reprogate.core.semantics import CURRENT_TEXT
from reprogate.core.timestamps import utc_now
from reprogate.rebuild.compare import metrics
from reprogate.rebuild.interval import compute
from reprogate.runtime.trace import CpuFacts, MetaEvent, StepEvent, TraceEvent, meta_events, plain


@dataclass
class Plan:
    """What init was told or found, with every path relative to the repository root."""

    name: str
    project: str  # source.path
    tree: str
    entrypoint: list[str]
    config: str | None  # None: the entrypoint's arguments are the configuration (config_arguments)
    config_hash: str | None  # None: code, pinned from the reference trace's meta once it has run
    realizer: str
    world_size: int
    seeds: list[int]
    env: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None  # {id, version?, path, digest}
    no_dataset: str | None = None  # why the run reads no dataset
    recipe: dict[str, str] | None = None  # {path, checksum}
    source: dict[str, Any] = field(default_factory=dict)  # what capture found (commit, lock files, ...)
    container: dict[str, Any] | None = None
    level: str | None = None
    metric: str | None = None
    direction: str = "lower"
    fail_on: str = "any"  # worse: the metric's test is one-sided, only a worse rebuild fails
    tensors: list[str] = field(default_factory=lambda: ["model_state"])
    description: str = ""
    resolution: float | None = None  # None: the grid the reference values sit on
    detect: dict[str, float] | None = None  # None: what SUGGESTED_SEEDS rebuild seeds catch
    margin: float | None = None  # given: several seeds are judged by Welch TOST within it
    config_code_checksum: str | None = None  # the configuration is code: its bytes
    config_arguments: tuple[str, ...] | None = None  # the configuration is the script's arguments (hash_of: argv)


SUGGESTED_SEEDS = 3
MOST_WRITTEN_SEEDS = 20  # init writes no rebuild_seeds above this: the reference is what to grow then


def _round_up(value: float) -> float:
    """`value` to three significant digits, rounded up: a shift written shorter must still be caught."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10 ** (math.floor(math.log10(value)) - 2)
    return float(f"{math.ceil(value / scale - 1e-9) * scale:.12g}")  # 287 * 0.001 is 0.28700000000000003 in binary


def _replay_words(level: str) -> str:
    """What a trace-comparing contract's extra rebuild run is for, said where init counts it."""
    return f" (one more run replays the reference's seed for the {level} trace comparison)" if trace_replays(level) else ""


def _metric(plan: Plan, level: str, name: str, values: list[float], notes: list[str]) -> dict[str, Any]:
    """The metric's contract: its resolution from the evaluation grid the values sit on (unless
    given), the test (`robust`; one-sided where `--fail-on worse` says so), and a shift to catch that the rebuild seeds the gate will run
    catch at 80 % power, assured: either the shift given with the rebuild seeds it needs, or the
    shift SUGGESTED_SEEDS rebuild seeds catch; `rebuild_seeds` says how many either way. It counts
    every run: where the contract compares a trace (bitwise, behavioral) the first replays the
    reference's seed and judges no fresh one, so it comes on top of the seeds that catch the shift."""

    resolution = plan.resolution if plan.resolution is not None else grid_step(values)
    if plan.resolution is None and resolution:
        notes.append(f"{name}: the reference values sit on a grid of {resolution:g}; contract.metric.resolution says so (--resolution to change it)")
    metric: dict[str, Any] = {"name": name, "direction": plan.direction, "alpha": 0.05, "resolution": resolution}
    if plan.margin is not None:
        metric["margin"], metric["test"] = plan.margin, "equivalence"
    else:
        metric["test"] = "robust"
    if plan.fail_on == "worse":
        metric["fail_on"] = "worse"
    one_sided = plan.fail_on == "worse"
    n, sd = len(values), mean_sd(values)[1]
    test = metric.get("test")
    if len(set(values)) == 1 and plan.resolution is None:
        notes.append(
            f"{name}: the {n} reference seeds gave the same value and no grid shows, so contract.metric.resolution is 0: one rebuild seed "
            "must equal it to rounding, several are judged by their own spread; --resolution R declares the metric's evaluation grid instead"
        )
    if plan.detect is not None:
        metric["detect"] = dict(plan.detect)
        shift = plan.detect.get("absolute") or abs(mean_sd(values)[0]) * plan.detect.get("relative", 0.0)
        target = plan.detect.get("power", POWER)
        needed = (
            seeds_needed(n, assured_sigma(n, sd, target), shift, 0.05, target, resolution, test=test, reference_sd=sd, one_sided=one_sided) if n >= 2 else None
        )
        if needed is not None and not holds_tails(n, needed, 0.05):
            notes.append(
                f"{name}: one rebuild seed catches the declared shift, but against {n} reference seeds (fewer than {band_minimum(0.05)}) "
                f"one seed fails good builds too often when seeds are skewed: {TAIL_SEEDS} are written instead"
            )
            needed = TAIL_SEEDS
        if needed is not None and needed <= MOST_WRITTEN_SEEDS:
            metric["rebuild_seeds"] = runs_for_judged(level, needed)
            notes.append(
                f"{name}: contract.metric.rebuild_seeds is {metric['rebuild_seeds']}: {needed} fresh rebuild seed(s) catch the declared shift {shift:.4g} "
                f"at {target:.0%} power with {n} reference seeds{_replay_words(level)} (`reprogate interval RECORD --plan` prices it)"
            )
        else:
            caught = assured_power(n, SUGGESTED_SEEDS, shift, sd, 0.05, resolution, test, one_sided) if n >= 2 else 0.0
            notes.append(
                f"{name}: no number of rebuild seeds up to {MOST_WRITTEN_SEEDS} catches the declared shift {shift:.4g} at {target:.0%} power "
                f"with {n} reference seeds ({SUGGESTED_SEEDS} catch it {caught:.0%} of the time): record more reference seeds (--seeds)"
            )
    elif n >= 2 and sd > 0:
        shift = _round_up(minimum_detectable_shift(n, SUGGESTED_SEEDS, assured_sigma(n, sd, POWER), 0.05, POWER, resolution, test, sd, one_sided))
        metric["detect"] = {"absolute": shift}
        metric["rebuild_seeds"] = runs_for_judged(level, SUGGESTED_SEEDS)
        notes.append(
            f"{name}: contract.metric.detect is {shift:.3g}, the smallest shift {SUGGESTED_SEEDS} fresh rebuild seeds catch at 80 % power"
            + (" the worse way (one-sided, fail_on: worse)" if one_sided else "")
            + " with "
            f"{n} reference seeds, and contract.metric.rebuild_seeds is {metric['rebuild_seeds']}{_replay_words(level)}, "
            "so every rebuild (the gate's included) runs them; "
            "set the shift that must be caught with --detect (`reprogate interval RECORD --plan` prices it)"
        )
    return metric


def before_reference(plan: Plan) -> dict[str, Any]:
    source: dict[str, Any] = {"path": plan.project, "tree": plan.tree}
    source.update(
        {k: v for k, v in plan.source.items() if k in ("repository", "commit", "dirty", "diff_digest", "untracked_digest", "lock_files", "job_start_installs")}
    )
    source.setdefault("dirty", False)
    if plan.recipe is not None:
        source["build_recipe"] = dict(plan.recipe)
    record: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "semantics": CURRENT_TEXT,
        "kind": "RunRecord",
        "metadata": {
            "name": plan.name,
            "description": plan.description or f"Reference run of {plan.project}, recorded by reprogate {__version__} init.",
            "created": utc_now(),
        },
        "contract": {"level": plan.level or "bitwise", "envelope": {}},
        "container": plan.container or {"used": False, "reason": f"the environment is realized by the {plan.realizer} realizer (job.environment)"},
        "source": source,
        "dataset": {"manifest": plan.manifest} if plan.manifest else {"used": False, "reason": plan.no_dataset or "the run reads no dataset file"},
        "seeds": {"global": plan.seeds[0], **({"evaluation": list(plan.seeds)} if len(plan.seeds) > 1 else {})},
        "execution": {"world_size": plan.world_size, "nodes": 1, "ranks_per_node": plan.world_size, **({"env": dict(plan.env)} if plan.env else {})},
        "job": {
            "environment": {"realizer": plan.realizer},
            "entrypoint": list(plan.entrypoint),
            "workdir": plan.project,
            "config": _config_pin(plan),
        },
    }
    return record


def _config_pin(plan: Plan) -> dict[str, Any]:
    if plan.config_arguments is not None:
        return {"hash_of": "argv", "argv": list(plan.config_arguments), "hash": plan.config_hash}
    if plan.config_code_checksum is None:
        return {"path": plan.config, "hash": plan.config_hash}
    return {"path": plan.config, "hash_of": "trace", "checksum": plan.config_code_checksum}  # the hash: complete(), from the trace


def traced_configuration(plan: Plan, events: Mapping[int, Sequence[TraceEvent]]) -> str:
    """The one digest every rank of every reference seed handed Tracer(config=...): what a
    configuration written as code computed, and so what the record pins for it."""
    digests = {(seed, e.rank): e.config_digest for seed, seed_events in events.items() for e in meta_events(seed_events)}
    silent = sorted(str(rank) for (_, rank), digest in digests.items() if digest is None)
    if not digests or silent:
        raise UsageError(
            f"{plan.config} is code, and the reference run handed Tracer no configuration"
            + (f" (rank {', '.join(sorted(set(silent)))})" if silent else "")
            + ": its values cannot be pinned",
            hint="pass what the script computed to the Tracer: Tracer(config={k: v for k, v in globals().items() if k in config_keys}, ...) "
            "as nanoGPT's train.py collects its `config` dict; or write it to a YAML file the script reads and pin that",
        )
    found: list[str] = sorted({digest for digest in digests.values() if digest is not None})  # none is None: `silent` raised
    if len(found) > 1:
        raise CheckFailed(
            f"{plan.config} computed different configurations on different ranks or seeds ({', '.join(found)}): no one value to pin",
            hint="a configuration must not depend on the rank or the seed; move what does out of Tracer(config=...)",
        )
    return found[0]


def _first_meta(events: Sequence[TraceEvent]) -> MetaEvent:
    metas = meta_events(events)
    return metas[0] if metas else MetaEvent()


def _release(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


def envelope(record: dict[str, Any], meta: MetaEvent, level: str, gpus: list[str], driver: str | None) -> dict[str, Any]:
    """The narrowest envelope the reference lies inside: its world size and node count, its GPU
    models and driver branch, its framework release, and for a bitwise contract on CPUs the
    kernels its ranks ran (torch's capability, MKL's mode, the architecture)."""
    execution = record["execution"]
    found: dict[str, Any] = {
        "gpu_models": sorted(set(gpus)),
        "nodes": {"min": execution["nodes"], "max": execution["nodes"]},
        "world_sizes": [execution["world_size"]],
    }
    if driver and driver.split(".")[0].isdigit():
        found["driver_branch"] = ["R" + driver.split(".")[0]]
    if meta.torch is not None:
        found["framework"] = {"name": "torch", "release": _release(meta.torch)}
    cpu = meta.cpu or CpuFacts()
    if level == "bitwise" and not gpus and cpu.capability:
        found["cpu"] = {"capability": [cpu.capability], "architectures": [cpu.architecture or platform.machine()]}
        if cpu.mkl_cbwr:
            found["cpu"]["mkl_cbwr"] = [cpu.mkl_cbwr]
    found["topology_changes"] = []
    return found


def trace_text(events: Sequence[TraceEvent]) -> str:
    """The reference trace as one file: every rank's events, meta first (validate reads the head)."""

    return "".join(json.dumps(e.to_json(), sort_keys=True, allow_nan=False) + "\n" for e in events)


def choose_level(plan: Plan, events: Sequence[TraceEvent], metric: str | None) -> str:
    """bitwise when the trace digests the model state; else behavioral (per-step losses); a
    statistical contract only when asked for (it needs a metric and several seeds)."""
    if plan.level:
        return plan.level
    if any(isinstance(e, StepEvent) and e.model_state is not None for e in events):
        return "bitwise"
    return "behavioral"


def complete(
    record: dict[str, Any],
    plan: Plan,
    events: Mapping[int, Sequence[TraceEvent]],
    trace_path: str,
    trace_checksum: str,
    probe: dict[str, Any],
    backend: str,
    host: dict[str, Any],
    cpu: dict[str, Any],
    devices: dict[str, Any],
) -> list[str]:
    """Fill in what the reference runs told; returns notes for the user."""

    notes: list[str] = []
    if plan.config_code_checksum is not None:
        config = record["job"]["config"]
        record["job"]["config"] = {"path": config["path"], "hash": traced_configuration(plan, events), "hash_of": "trace", "checksum": config["checksum"]}
        notes.append(
            f"{plan.config} is code: the record pins its bytes (job.config.checksum) and the configuration it computed, as the script "
            "handed it to Tracer(config=...) (job.config.hash_of: trace); a rebuild compares every rank's after the run"
        )
    primary = events[plan.seeds[0]]
    meta = _first_meta(primary)
    found = {seed: metrics(seed_events) for seed, seed_events in events.items()}
    names = sorted({name for values in found.values() for name in values})
    metric = plan.metric or (names[0] if len(names) == 1 else None)
    if plan.metric is None and len(names) > 1:
        notes.append(f"the trace reports several metrics ({', '.join(names)}); none is in the contract (--metric NAME chooses one)")
    level = choose_level(plan, primary, metric)
    steps = [e.step for e in primary if isinstance(e, StepEvent)]
    contract: dict[str, Any] = {"level": level, "steps": {"start": 0, "count": max(steps) if steps else 1}}
    if level == "bitwise":
        contract["tensors"] = list(plan.tensors)
    if level == "behavioral":
        contract["tolerance"] = {"abs": 0.0, "rel": 1e-6}
    gpus = [str(g.get("name")) for g in devices.get("gpus") or [] if isinstance(g, dict) and g.get("name")]
    contract["envelope"] = envelope(record, meta, level, gpus, devices.get("driver_version") if isinstance(devices.get("driver_version"), str) else None)
    reference: dict[str, Any] = {"trace": {"path": trace_path, "checksum": trace_checksum}}
    if metric is not None:
        values = [{"seed": seed, "value": found[seed][metric]} for seed in plan.seeds if metric in found.get(seed, {})]
        missing = [seed for seed in plan.seeds if metric not in found.get(seed, {})]
        if missing:
            raise CheckFailed(
                f"seed(s) {missing} reported no metric {metric!r} (Tracer.metric on rank 0)",
                hint="the metric's name is what the script passes to tracer.metric(NAME, value)",
            )
        reference["metric"] = {"name": metric, "values": values}
        if len(values) >= 2:
            contract["metric"] = _metric(plan, level, metric, [float(v["value"]) for v in values], notes)
            record["reference"] = reference
            record["contract"] = contract
            contract["metric"]["interval"] = compute(read_record(record))  # the draft read as any record is
        elif level == "statistical":
            raise UsageError("a statistical contract needs at least 2 reference seeds (5 or more recommended): --seeds 1,2,3,4,5")
        else:  # one value has no spread: an interval from it would refuse every rebuild (exit 2, "no predeclared interval")
            notes.append(f"{metric}: one reference seed gives no interval, so the contract does not judge it (--seeds 1,2,3 to judge it)")
    elif level == "statistical":
        raise UsageError("a statistical contract needs a metric, and the trace reports none", hint="report it on rank 0 with tracer.metric('val_loss', value)")
    record["contract"] = contract
    record["reference"] = reference
    record["execution"]["collective"] = {"backend": backend}
    record["host"], record["cpu"], record["devices"] = host, cpu, devices
    software: dict[str, Any] = {"present": True}
    if probe.get("python"):
        software["python"] = probe["python"]
    packages = probe.get("packages") or {}
    if meta.torch is not None or "torch" in packages:
        software["framework"] = {"name": "torch", "version": str(meta.torch or packages["torch"])}
    if meta.determinism is not None:
        software["determinism"] = plain(meta.determinism)
    if packages:
        software["packages"] = packages
    record["software"] = software
    ordered = [
        "apiVersion",
        "semantics",
        "kind",
        "metadata",
        "contract",
        "container",
        "source",
        "host",
        "cpu",
        "devices",
        "software",
        "dataset",
        "seeds",
        "execution",
        "job",
        "reference",
    ]
    rebuilt = {key: record[key] for key in ordered if key in record}
    record.clear()
    record.update(rebuilt)
    return notes
