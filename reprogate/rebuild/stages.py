"""The eleven rebuild stages, in the runbook's diagnosis order.

Each stage is a function (ctx) -> StageResult listed in STAGES; the runner stops at the first
failure and marks the rest not-run. A stage that does not apply says `skipped` and why; nothing
passes silently, and a comparison that cannot be made is a failure, not a pass.
"""

from __future__ import annotations

import platform
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from reprogate.core.canonical import CanonicalError, canonical_digest, file_digest
from reprogate.datasets import manifest_digest
from reprogate.datasets.manifests import load_manifest
from reprogate.core.documents import DocumentError, load_document
from reprogate.rebuild import compare
from reprogate.rebuild.context import RebuildContext, SeedRun, StageResult

Stage = Callable[[RebuildContext], StageResult]


def _result(name: str, status: str, detail: str, **data: Any) -> StageResult:
    return StageResult(name, status, detail, data=data)


# artifacts ---------------------------------------------------------------------------------------

def _copy_in(ctx: RebuildContext, rel: str) -> Path:
    """Copy a repository path (file or folder) into the work folder at the same relative place."""
    source = (ctx.root / rel).resolve()
    if ctx.root.resolve() not in (source, *source.parents):
        raise FileNotFoundError(f"{rel} resolves outside the repository root")
    if not source.exists():
        raise FileNotFoundError(f"{rel} does not exist under {ctx.root}")
    target = ctx.workdir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    else:
        shutil.copy2(source, target)
    return target


def artifacts(ctx: RebuildContext) -> StageResult:
    """Fetch only what the record addresses into the empty work folder; check the source tree."""
    fetched: list[str] = []
    try:
        source_path = ctx.section("source", "path")
        tree = ctx.section("source", "tree")
        if isinstance(source_path, str):
            if isinstance(tree, str):
                from reprogate.core.gittree import tree_id

                found = tree_id(ctx.root / source_path)
                if found != tree:
                    return _result("artifacts", "fail", f"source folder {source_path} has git tree {found[:12]}, the record pins {tree[:12]}: the code changed", expected=tree, found=found)
            _copy_in(ctx, source_path)
            fetched.append(source_path)
        elif isinstance(ctx.section("source", "commit"), str):
            return _result("artifacts", "fail", "the record pins a commit but no project folder (source.path + source.tree); this version rebuilds folders pinned by tree id")
        config = ctx.section("job", "config", "path")
        if isinstance(config, str):
            _copy_in(ctx, config)
            fetched.append(config)
        manifest = ctx.section("dataset", "manifest", "path")
        if isinstance(manifest, str):
            fetched.extend(_fetch_dataset(ctx, manifest))
        for item in ctx.section("source", "lock_files") or []:
            _copy_in(ctx, item["path"])
            fetched.append(item["path"])
        trace = ctx.section("reference", "trace")
        if isinstance(trace, dict):
            if "path" not in trace:
                return _result("artifacts", "fail", f"the reference trace is only at {trace.get('uri')}; this version reads reference traces from the repository")
            path = ctx.root / trace["path"]
            if file_digest(path) != trace["checksum"]:
                return _result("artifacts", "fail", f"reference trace {trace['path']} does not match its checksum")
            from reprogate.runtime.trace import read_trace

            ctx.reference_events = read_trace([path])
        checkpoint = ctx.section("state", "checkpoint")
        if isinstance(checkpoint, dict):
            if "path" not in checkpoint:
                return _result("artifacts", "fail", f"checkpoint {checkpoint.get('id', '')} is only at {checkpoint.get('uri')}; fetching remote checkpoints is not implemented in this version")
            _copy_in(ctx, checkpoint["path"])
            fetched.append(checkpoint["path"])
    except (FileNotFoundError, OSError) as exc:
        return _result("artifacts", "fail", f"cannot fetch an addressed artifact: {exc}")
    return _result("artifacts", "pass", f"fetched {len(fetched)} addressed artifact(s) into an empty work folder" + (f"; source tree {tree[:12]} matches" if isinstance(tree, str) else ""), fetched=fetched)


def _fetch_dataset(ctx: RebuildContext, manifest_rel: str) -> list[str]:
    """Copy the manifest and, when its shards live beside it in the repository, the shards."""
    target = _copy_in(ctx, manifest_rel)
    data = load_manifest(target).data  # a JSON Lines manifest's shards are read as iterated
    namespace = data.get("namespace") if isinstance(data, dict) else None
    if namespace and "://" in str(namespace):
        return [manifest_rel]  # remote shards: the dataset stage verifies them where they are
    folder = Path(manifest_rel).parent / (namespace or ".")
    names = [s["name"] for s in data.get("shards", [])] + [f["name"] for f in data.get("files", [])]
    for name in names:
        _copy_in(ctx, (folder / name).as_posix())
    return [manifest_rel, *[(folder / n).as_posix() for n in names]]


# digest ------------------------------------------------------------------------------------------

def digest(ctx: RebuildContext) -> StageResult:
    container = ctx.section("container")
    if isinstance(container, dict) and container.get("used") is False:
        return _result("digest", "skipped", f"the record declares no container ({container.get('reason', '')})")
    pinned = {container.get("digest"), container.get("platform_digest")} - {None}
    import os

    image = ctx.options.image or os.environ.get("REPROGATE_IMAGE")
    if not image:
        return _result("digest", "fail", "cannot confirm the image this rebuild runs in: run it in the pinned image and pass --image REF@sha256:... (or set REPROGATE_IMAGE)")
    found = image.rsplit("@", 1)[-1]
    if found not in pinned:
        return _result("digest", "fail", f"this rebuild runs in {found}, the record pins {container.get('digest')}", found=found)
    return _result("digest", "pass", f"running in the pinned image {found}")


# preflight ---------------------------------------------------------------------------------------

def preflight(ctx: RebuildContext) -> StageResult:
    import json

    from reprogate.rebuild.preflight import PreflightOptions, run_preflight

    report = run_preflight(PreflightOptions(world_size=ctx.world_size, timeout=ctx.options.preflight_timeout))
    (ctx.workdir / "preflight.json").write_text(json.dumps(report.as_json(), indent=2) + "\n")
    ctx.facts["backend"] = report.backend
    ctx.facts["gpus"] = report.stages[0].detail
    if report.could_not_start:
        return _result("preflight", "fail", f"preflight could not start: {report.could_not_start}", infra=True)
    if report.failed_stage:
        return _result("preflight", "fail", f"preflight failed at {report.failed_stage}: {report.stage(report.failed_stage).detail}")
    return _result("preflight", "pass", f"{report.world_size} rank(s), {report.backend}: devices, framework op, process group and all-reduce checked in {report.seconds:.1f} s")


# dataset -----------------------------------------------------------------------------------------

def dataset(ctx: RebuildContext) -> StageResult:
    section = ctx.section("dataset")
    if isinstance(section, dict) and section.get("used") is False:
        return _result("dataset", "skipped", f"the record declares no dataset ({section.get('reason', '')})")
    manifest_rel = ctx.section("dataset", "manifest", "path")
    if not isinstance(manifest_rel, str):
        return _result("dataset", "fail", "the record's dataset is not addressed by a manifest file in the repository; inline datasets are not fetched in this version")
    from reprogate.datasets.verify import VerifyOptions, verify

    manifest = ctx.workdir / manifest_rel
    data = load_manifest(manifest).data
    if manifest_digest(data) != ctx.section("dataset", "manifest", "digest"):
        return _result("dataset", "fail", "the dataset manifest does not match the digest the record pins")
    report = verify(manifest, VerifyOptions(quiet=True))
    problems = {k: v for k, v in report.by_kind.items() if v}
    if report.exit_code != 0:
        listed = "; ".join(f"{k}: {', '.join(v[:3])}" for k, v in problems.items()) or report.summary
        return _result("dataset", "fail", f"dataset {data.get('id')} does not match its manifest ({listed})", problems=problems)
    return _result("dataset", "pass", f"dataset {data.get('id')}: {report.checked} file(s) match sizes and {data.get('algorithm')} checksums")


# config ------------------------------------------------------------------------------------------

def config(ctx: RebuildContext) -> StageResult:
    path = ctx.section("job", "config", "path")
    pinned = ctx.section("job", "config", "hash")
    try:
        found = canonical_digest(load_document(ctx.workdir / path).data)
    except (DocumentError, CanonicalError, OSError) as exc:
        return _result("config", "fail", f"cannot read the configuration {path}: {exc}")
    if found != pinned:
        return _result("config", "fail", f"configuration {ctx.section('job', 'config', 'id') or path} changed: canonical hash {found[20:32]}..., the record pins {str(pinned)[20:32]}...", found=found)
    checksum = ctx.section("job", "config", "checksum")
    if checksum and file_digest(ctx.workdir / path) != checksum:
        return _result("config", "fail", f"configuration {path} was reformatted (same content, other bytes) and the record pins its bytes")
    return _result("config", "pass", f"configuration {ctx.section('job', 'config', 'id') or path}: canonical hash matches")


# envelope ----------------------------------------------------------------------------------------

def machine_facts() -> dict[str, Any]:
    """The rebuild machine as the envelope sees it, without importing torch."""
    from reprogate.capture.host import os_release

    facts: dict[str, Any] = {"nodes": 1, "python": platform.python_version(), "machine": platform.machine()}
    release = os_release()
    if release.get("ID"):
        facts["os"] = f"{release.get('ID')}-{release.get('VERSION_ID', '')}".rstrip("-")
    try:
        facts["torch"] = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            facts["gpu_models"] = sorted({str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(pynvml.nvmlDeviceGetCount())})
            facts["driver"] = str(pynvml.nvmlSystemGetDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML: a CPU machine
        facts["gpu_models"] = []
    return facts


def envelope(ctx: RebuildContext) -> StageResult:
    from reprogate.rules.envelope import release_admits

    env = ctx.section("contract", "envelope") or {}
    facts = ctx.facts
    facts.update({k: v for k, v in machine_facts().items() if k not in facts})
    facts["world_size"] = ctx.world_size
    problems = []
    allowed_sizes = env.get("world_sizes") or [ctx.section("execution", "world_size")]
    if ctx.world_size not in allowed_sizes:
        problems.append(f"world size {ctx.world_size} is not among the envelope's {allowed_sizes}")
    models = env.get("gpu_models") or []
    if models and not set(facts["gpu_models"]) <= set(models):
        problems.append(f"GPUs {facts['gpu_models'] or 'none'} are outside the envelope's {models}")
    nodes = env.get("nodes") or {}
    if not (nodes.get("min", 1) <= facts["nodes"] <= nodes.get("max", facts["nodes"])):
        problems.append(f"{facts['nodes']} node(s) is outside {nodes.get('min', 1)}..{nodes.get('max')}")
    branches = env.get("driver_branch") or []
    if branches and facts.get("driver") and f"R{facts['driver'].split('.')[0]}" not in branches:
        problems.append(f"driver {facts['driver']} is outside the branches {branches}")
    framework = env.get("framework") or {}
    if framework.get("name") == "torch":
        if "torch" not in facts:
            problems.append("torch is not installed on the rebuild machine")
        elif not release_admits(str(framework.get("release")), facts["torch"]):
            problems.append(f"torch {facts['torch']} is outside the envelope's release {framework.get('release')}")
    systems = env.get("os") or []
    if systems and facts.get("os") not in systems and str(facts.get("os", "")).split("-")[0] not in systems:
        problems.append(f"operating system {facts.get('os')} is outside {systems}")
    if problems:
        return _result("envelope", "fail", "rejected before the run, never widened: " + "; ".join(problems), facts=facts)
    return _result("envelope", "pass", f"{ctx.world_size} rank(s) on {', '.join(facts['gpu_models']) or 'CPU'}, torch {facts.get('torch', '-')}, {facts.get('os', 'unknown OS')}: inside the envelope", facts=facts)


# run ---------------------------------------------------------------------------------------------

def rebuild_seeds(ctx: RebuildContext) -> list[int]:
    """The primary seed (seeds.global) first, then further evaluation seeds up to --seeds."""
    primary = ctx.section("seeds", "global")
    evaluation = list(ctx.section("seeds", "evaluation") or [])
    seeds = [primary] if isinstance(primary, int) else evaluation[:1] or [0]
    for seed in evaluation:
        if len(seeds) >= max(1, ctx.options.seeds):
            break
        if seed not in seeds:
            seeds.append(seed)
    return seeds[: max(1, ctx.options.seeds)]


def run(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild.launch import launch
    from reprogate.runtime.trace import read_trace

    entry = ctx.section("job", "entrypoint")
    cwd = ctx.workdir / (ctx.section("job", "workdir") or ctx.section("source", "path") or ".")
    env = {k: str(v) for k, v in (ctx.section("execution", "env") or {}).items()}
    first, last = ctx.step_range
    if ctx.options.steps is not None and last is not None:
        env["REPROGATE_MAX_STEPS"] = str(last)
    seeds = rebuild_seeds(ctx)
    for seed in seeds:
        folder = ctx.workdir / "runs" / f"seed-{seed}"
        result = launch(entry, cwd, ctx.world_size, folder / "trace", folder / "logs", seed, env, ctx.options.timeout)
        traces = sorted((folder / "trace").glob("trace-rank*.jsonl"))
        outcome = SeedRun(seed, read_trace(traces) if traces else [], result.ok, result.seconds, result.log_tail())
        ctx.runs.append(outcome)
        if not result.ok:
            return _result("run", "fail", f"seed {seed}: {result.detail}", log_tail=outcome.log_tail, seed=seed)
        if not any(e.get("type") == "step" for e in outcome.events):
            return _result("run", "fail", f"seed {seed}: the entrypoint finished but wrote no step trace (does it use reprogate.runtime.trace.Tracer?)", log_tail=outcome.log_tail)
    steps = max(e["step"] for e in ctx.runs[0].events if e.get("type") == "step")
    if ctx.level == "startup":
        wanted = int(ctx.section("contract", "steps", "count") or 1)
        if steps < wanted:
            return _result("run", "fail", f"the run reached step {steps}; the startup contract needs {wanted}")
    return _result("run", "pass", f"{len(seeds)} seed(s) {seeds} x {ctx.world_size} rank(s) ran to step {steps} in {sum(r.seconds for r in ctx.runs):.1f} s", seeds=seeds)


# comparisons -------------------------------------------------------------------------------------

def _ranges(ctx: RebuildContext) -> tuple[dict[Any, Any], dict[Any, Any]]:
    first, last = ctx.step_range
    return compare.step_events(ctx.reference_events, first, last), compare.step_events(ctx.runs[0].events, first, last)


def batches(ctx: RebuildContext) -> StageResult:
    if ctx.level == "startup":
        return _result("batches", "skipped", "a startup contract compares nothing numeric")
    if not ctx.reference_events:
        return _result("batches", "fail", "the record has no reference trace to compare with")
    outcome = compare.compare_batches(*_ranges(ctx))
    return _result("batches", outcome.status, outcome.detail, **outcome.data)


def model_state(ctx: RebuildContext) -> StageResult:
    if ctx.level != "bitwise":
        return _result("model-state", "skipped", f"a {ctx.level} contract does not compare tensors bitwise")
    names = list(ctx.section("contract", "tensors") or [])
    outcome = compare.compare_tensors(*_ranges(ctx), names)
    return _result("model-state", outcome.status, outcome.detail, **outcome.data)


def steps(ctx: RebuildContext) -> StageResult:
    if ctx.level in ("startup", "statistical"):
        return _result("steps", "skipped", f"a {ctx.level} contract does not compare individual steps" + (" (it compares the metric)" if ctx.level == "statistical" else ""))
    tolerance = ctx.section("contract", "tolerance") or {}
    quantities = list(tolerance.get("quantities") or ["loss"])
    abs_tol, rel_tol = (0.0, 0.0) if ctx.level == "bitwise" else (float(tolerance.get("abs", 0.0)), float(tolerance.get("rel", 0.0)))
    outcome, result = compare.compare_values(*_ranges(ctx), quantities, abs_tol, rel_tol)
    ctx.tests.append({"test": "step tolerance" if ctx.level == "behavioral" else "exact step values", "quantities": quantities, "abs": abs_tol, "rel": rel_tol, "compared": result.compared, "first_outside": outcome.data.get("first_step"), "max_deviation": result.max_deviation, "passed": result.passed})
    return _result("steps", outcome.status, outcome.detail, **outcome.data)


def metric(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild.stats import Interval, welch_tost

    declared = ctx.section("contract", "metric")
    if not isinstance(declared, dict):
        if ctx.level == "statistical":
            return _result("metric", "fail", "a statistical contract without a declared metric cannot be judged")
        return _result("metric", "skipped", "the contract declares no metric")
    name = declared["name"]
    values = []
    for run_ in ctx.runs:
        found = compare.metrics(run_.events).get(name)
        if found is None:
            return _result("metric", "fail", f"seed {run_.seed}: the run reported no {name} (Tracer.metric)")
        values.append(found)
    reference = [float(v["value"]) for v in ctx.section("reference", "metric", "values") or []]
    alpha = float(declared.get("alpha", 0.05))
    if len(values) == 1:
        stored = declared.get("interval")
        if not isinstance(stored, dict):
            return _result("metric", "fail", f"no predeclared interval for {name}: run `reprogate interval RECORD` before the drill")
        interval = Interval(stored["method"], stored["low"], stored["high"], stored.get("alpha", alpha), stored["n"], stored.get("mean", 0.0), stored.get("sd", 0.0), stored.get("resolution", 0.0))
        inside = interval.contains(values[0])
        ctx.tests.append({"test": "t prediction interval (one rebuild seed)", "metric": name, "alpha": interval.alpha, "n": interval.n, "m": 1, "interval": [interval.low, interval.high], "resolution": interval.resolution, "value": values[0], "passed": inside})
        detail = f"{name} {values[0]:.6g} {'inside' if inside else 'outside'} the predeclared {int((1 - interval.alpha) * 100)}% prediction interval [{interval.low:.6g}, {interval.high:.6g}] (n={interval.n}, m=1)"
        return _result("metric", "pass" if inside else "fail", detail, value=values[0])
    margin = declared.get("margin")
    if margin is None:
        return _result("metric", "fail", f"{len(values)} rebuild seeds need contract.metric.margin for the equivalence test")
    tost = welch_tost(reference, values, float(margin), alpha)
    ctx.tests.append({"test": "Welch TOST equivalence", "metric": name, **tost.as_dict(), "passed": tost.equivalent, "values": values})
    detail = f"{name}: mean difference {tost.difference:+.4g}, {int((1 - 2 * alpha) * 100)}% CI [{tost.ci_low:.4g}, {tost.ci_high:.4g}] {'inside' if tost.equivalent else 'not inside'} ±{margin} (Welch TOST, α={alpha}, n={tost.n}, m={tost.m}, p={tost.p_value:.3g})"
    return _result("metric", "pass" if tost.equivalent else "fail", detail, values=values)


STAGES: list[tuple[str, Stage]] = [
    ("artifacts", artifacts),
    ("digest", digest),
    ("preflight", preflight),
    ("dataset", dataset),
    ("config", config),
    ("envelope", envelope),
    ("run", run),
    ("batches", batches),
    ("model-state", model_state),
    ("steps", steps),
    ("metric", metric),
]
