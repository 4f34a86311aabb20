"""The bounded claim: one honest paragraph a reviewer can quote, and its limits.

It says whether the run was replayed, on which machine and envelope, with which seeds, which
outputs were compared and by what test, and what it does not cover (no container, a dataset or
contract that expires, steps outside the compared range, hardware outside the envelope).
"""

from __future__ import annotations

from typing import Any

from reprogate.core.seedstats import percent
from reprogate.rebuild.context import RebuildContext


def claim(ctx: RebuildContext, verdict: dict[str, Any]) -> dict[str, Any]:
    facts = ctx.facts
    name = ctx.section("metadata", "name")
    first, last = ctx.step_range
    statuses = {s["name"]: s["status"] for s in verdict["stages"]}
    compared = []
    limits: list[str] = []
    if statuses.get("batches") == "pass":
        compared.append(f"input batch digests of steps {first}-{last}" if last else "input batch digests")
    if statuses.get("model-state") == "pass":
        compared.append(f"bitwise digests of {', '.join(ctx.section('contract', 'tensors') or [])}")
    for test in verdict["tests"]:
        if test["test"] == "exact step values":
            compared.append(f"{'/'.join(test['quantities'])} exactly at {test['compared']} (step, rank) points")
        elif test["test"] == "step tolerance":
            compared.append(f"{'/'.join(test['quantities'])} within {test['abs']:g} + {test['rel']:g}*|ref| at {test['compared']} (step, rank) points")
        elif test["test"].startswith("t prediction"):
            compared.append(
                f"{test['metric']} against its predeclared {percent(1 - test['alpha'])} prediction interval "
                f"[{test['interval'][0]:.6g}, {test['interval'][1]:.6g}] (t-based, n={test['n']} reference seeds, m=1{_power(test)})"
            )
        elif test["test"].startswith("two-sample t"):
            compared.append(
                f"{test['metric']} by a two-sided two-sample t on the means, |difference| within {test['limit']:.4g} "
                f"(pooled, α={test['alpha']:g} false-fail rate, n={test['n']}, m={test['m']}{_power(test)})"
            )
        elif test["test"].startswith("Welch"):
            compared.append(f"{test['metric']} by Welch TOST within ±{test['margin']:g} (α={test['alpha']:g}, n={test['n']}, m={test['m']})")
        note = test.get("seeds_note")
        if note and test.get("seed_source") in ("replay", "trace-replay"):
            limits.append(note)  # samples that are not independent: a limit of the claim
        elif note and compared:
            compared[-1] += f"; {note}"
    kernels = f", torch CPU kernels {facts['cpu_capability']}, MKL_CBWR {facts.get('mkl_cbwr', '?')}" if facts.get("cpu_capability") else ""
    gpus = ", ".join(facts.get("gpu_models") or []) or "CPU"
    machine = (
        f"{gpus} ({facts.get('machine', '?')}{kernels}), {facts.get('os', 'unknown OS')}, torch {facts.get('torch', '?')}, "
        f"{facts.get('world_size', ctx.world_size)} rank(s) over {facts.get('backend', '?')}"
    )
    replayed = verdict["verdict"] == "pass"
    environment = _environment(ctx)
    if ctx.choice is not None and ctx.choice.name == "current":
        limits.append(
            "the environment was not rebuilt: the record asks to run in the Python environment reprogate is installed in "
            "(job.environment.realizer: current), so a lock-file or image change is not exercised"
        )
    if ctx.judged_note:
        limits.append(ctx.judged_note)
    box = str((ctx.realized.facts if ctx.realized is not None else {}).get("sandbox", ""))
    if box.startswith("none"):
        limits.append(f"the ranks ran without a sandbox ({box[len('none ') :].strip('()')}): the code under test could read what the runner's user can")
    topo = _topology(ctx)
    if topo is not None:
        machine += f"; ranks on {topo.words()}, started by {facts.get('launcher', '?')}"
        if topo.changes:
            limits.append(
                f"topology changed against the reference: {', '.join(topo.changes)}" + (f" ({'; '.join(topo.remapped[:3])})" if topo.remapped else "")
            )
    container = ctx.section("container")
    if isinstance(container, dict) and container.get("used") is False:
        limits.append(f"no container: {container.get('reason', 'none declared')}")
    retention = _retention(ctx)
    if retention:
        limits.append(f"exact reproduction expires with the dataset's retention on {retention}")
    lifetime = ctx.section("contract", "lifetime", "expires")
    if lifetime:
        limits.append(f"the contract holds until {lifetime}")
    if last:
        limits.append(f"steps after {last} were not compared")
    envelope = ctx.section("contract", "envelope") or {}
    framework = envelope.get("framework", {})
    limits.append(
        f"hardware and software outside the envelope (GPUs {envelope.get('gpu_models') or 'none: CPU only'}, "
        f"framework {framework.get('name', '?')} {framework.get('release', '')}, "
        f"world sizes {envelope.get('world_sizes') or [ctx.section('execution', 'world_size')]})"
    )
    if replayed:
        text = (
            f"{name} was replayed from an empty worker in {environment}, on {machine}, inside its contract's envelope. "
            f"Seeds rebuilt: {verdict['seeds']['rebuilt']}. Compared: {'; '.join(compared) or 'the run started and reached its steps'}."
        )
    elif verdict.get("exit_code") in (2, 3):  # nothing was compared: a usage or infrastructure stop is no difference
        why = "an infrastructure failure" if verdict.get("exit_code") == 3 else "a problem with the input or the environment it declares"
        text = f"{name} could not be rebuilt, so nothing was compared: the {verdict['diagnosis']} stage stopped it with {why} ({_detail(verdict)})."
    else:
        text = (
            f"{name} was NOT reproduced: the first difference is at the {verdict['diagnosis']} stage ({_detail(verdict)}). "
            f"Rebuilt in {environment}, on {machine}."
        )
    found = {"replayed": replayed, "text": text, "compared": compared, "not_covered": limits}
    if topo is not None:
        found["placement"] = topo.as_dict()
    return found


def _power(test: dict[str, Any]) -> str:
    """What the test could have caught: stated with every statistical verdict."""
    stated = test.get("power") or {}
    if "minimum_detectable_shift" not in stated:
        return ""
    said = f"; catches a shift of {stated['minimum_detectable_shift']:.4g} with {percent(stated['at_power'])} power"
    if "shift" in stated:
        said += f", the declared {stated['shift']:.4g} with {percent(stated['power'])}"
    return said


def _topology(ctx: RebuildContext) -> Any:
    """Where the ranks ran (rank <-> node) and what changed against the record, when known."""
    from reprogate.rebuild.topology import topology

    placement = ctx.facts.get("placement") or {}
    return topology(ctx.data, placement) if placement else None


def _environment(ctx: RebuildContext) -> str:
    """Which environment ran, in words: what the claim is about."""
    facts = ctx.realized.facts if ctx.realized is not None else {}
    which = ctx.options.environment
    kind = ctx.choice.name if ctx.choice is not None else "no realized environment"
    if kind == "container":
        image = str(facts.get("image_id", "?"))[:19]
        source = (
            f"built from {facts['built_from']}"
            if facts.get("built_from")
            else (
                f"pinned digest {facts['digest_verified_by_engine']} confirmed by the engine"
                if facts.get("digest_verified_by_engine")
                else str(facts.get("image_source", ""))
            )
        )
        return f"the {which} environment: image {image} ({source})"
    if kind == "venv":
        if not facts.get("lock_file"):
            return f"the {which} environment: a venv that could not be made"
        return f"the {which} environment: a venv from {facts['lock_file']} ({facts.get('lock_digest', '?')})"
    if kind == "current":
        return "reprogate's own Python environment"
    return kind


def _detail(verdict: dict[str, Any]) -> str:
    stage = next(s for s in verdict["stages"] if s["name"] == verdict["diagnosis"])
    return stage["detail"]


def _retention(ctx: RebuildContext) -> str | None:
    from reprogate.core.documents import DocumentError, load_document

    inline = ctx.section("dataset", "inline")
    if isinstance(inline, dict):
        return (inline.get("retention") or {}).get("expires")
    path = ctx.section("dataset", "manifest", "path")
    if isinstance(path, str):
        try:
            data = load_document(ctx.root / path).data
        except (DocumentError, OSError):
            return None
        return ((data or {}).get("retention") or {}).get("expires") if isinstance(data, dict) else None
    return None
