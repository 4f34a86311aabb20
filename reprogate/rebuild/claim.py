"""The bounded claim: one honest paragraph a reviewer can quote, and its limits.

It says whether the run was replayed, on which machine and envelope, with which seeds, which
outputs were compared and by what test, and what it does not cover (no container, a dataset or
contract that expires, steps outside the compared range, hardware outside the envelope).
"""

from __future__ import annotations

from collections.abc import Sequence

from reprogate.core.documents import DocumentError, load_document
from reprogate.core.record import Envelope
from reprogate.core.seedstats import percent
from reprogate.rebuild.comparisons import (
    DIFFERENCE,
    DIFFERENCE_ONE_SIDED,
    EQUIVALENCE,
    EXACT,
    PREDICTION,
    RANK_SUM,
    RANK_SUM_ONE_SIDED,
    TOLERANCE,
    Comparison,
    MetricTest,
    StepTest,
)
from reprogate.rebuild.realizers import REALIZERS
from reprogate.rebuild.state import RebuildJob, RebuildState
from reprogate.rebuild.topology import Topology, topology
from reprogate.rebuild.verdict import Claim, StageRecord


def _compared(job: RebuildJob, stages: Sequence[StageRecord], tests: Sequence[Comparison]) -> tuple[list[str], list[str]]:
    """(what was compared and how, the limits the seeds put on it)."""
    first, last = job.step_range
    statuses = {s.name: s.status for s in stages}
    compared: list[str] = []
    limits: list[str] = []
    if statuses.get("batches") == "pass":
        compared.append(f"input batch digests of steps {first}-{last}" if last else "input batch digests")
    if statuses.get("model-state") == "pass":
        compared.append(f"bitwise digests of {', '.join((job.record.contract.tensors if job.record.contract is not None else None) or [])}")
    for test in tests:
        if isinstance(test, StepTest):
            if test.kind == EXACT:
                compared.append(f"{'/'.join(test.quantities)} exactly at {test.compared} (step, rank) points")
            elif test.kind == TOLERANCE:
                compared.append(f"{'/'.join(test.quantities)} within {test.abs:g} + {test.rel:g}*|ref| at {test.compared} (step, rank) points")
            continue
        fails = test.figures.get("fails", "both")
        if test.kind == PREDICTION and test.interval is not None:
            where = (
                f"prediction interval [{test.interval[0]:.6g}, {test.interval[1]:.6g}]"
                if fails == "both"
                else f"one-sided prediction bound {test.interval[1] if fails == 'higher' else test.interval[0]:.6g} (only a {fails} value fails)"
            )
            compared.append(f"{test.metric} against its predeclared {percent(1 - test.alpha)} {where} (t-based, n={test.n} reference seeds, m=1{_power(test)})")
        elif test.kind in (DIFFERENCE, DIFFERENCE_ONE_SIDED) and test.limit is not None:
            within = f"|difference| within {test.limit:.4g}" if fails == "both" else f"a {fails} mean by no more than {test.limit:.4g}"
            compared.append(
                f"{test.metric} by a {'two' if fails == 'both' else 'one'}-sided two-sample t on the means, {within} "
                f"(pooled, α={test.alpha:g} false-fail rate, n={test.n}, m={test.m}{_power(test)})"
            )
        elif test.kind in (RANK_SUM, RANK_SUM_ONE_SIDED):
            which = "two-sided" if fails == "both" else f"one-sided (only {fails} fails)"
            compared.append(
                f"{test.metric} by a {which} Wilcoxon rank-sum test (exact mid-p, α={test.alpha:g} false-fail rate, n={test.n}, m={test.m}{_power(test)})"
            )
        elif test.kind == EQUIVALENCE and test.margin is not None:
            compared.append(f"{test.metric} by Welch TOST within ±{test.margin:g} (α={test.alpha:g}, n={test.n}, m={test.m})")
        if not test.seeds.metric_seeds:
            continue
        note = test.seeds.describe()
        if test.seeds.source in ("replay", "trace-replay"):
            limits.append(note)  # samples that are not independent: a limit of the claim
        elif compared:
            compared[-1] += f"; {note}"
    return compared, limits


def bounded_claim(
    state: RebuildState, stages: Sequence[StageRecord], tests: Sequence[Comparison], failed: StageRecord | None, seeds_rebuilt: Sequence[int]
) -> Claim:
    job, machine, ranks = state.job, state.machine, state.ranks
    name = job.name
    last = job.step_range[1]
    compared, limits = _compared(job, stages, tests)
    cpu = machine.cpu if machine is not None else {}
    kernels = f", torch CPU kernels {cpu['cpu_capability']}, MKL_CBWR {cpu.get('mkl_cbwr', '?')}" if cpu.get("cpu_capability") else ""
    gpus = ", ".join(machine.gpu_models if machine is not None else ()) or "CPU"
    if machine is None:  # the rebuild stopped before its environment ran: nothing of the machine is known
        described = f"a machine the rebuild stopped before probing ({job.world_size} rank(s) asked for)"
    else:
        described = f"{gpus} ({machine.machine}{kernels}), {machine.os or 'unknown OS'}, torch {machine.torch or 'not found'}, {machine.world_size} rank(s)" + (
            f" over {ranks.backend}" if ranks is not None else ", no process group started"
        )
    replayed = failed is None
    environment = _environment(state)
    if state.environment is not None:
        limits.extend(state.environment.realized.identity.claim_limits())
    if job.judged_note:
        limits.append(job.judged_note)
    if job.code.ran == "pull-request":
        limits.append(job.code.words())
    box = state.environment.sandbox if state.environment is not None else ""
    if box.startswith("none"):
        limits.append(f"the ranks ran without a sandbox ({box[len('none ') :].strip('()')}): the code under test could read what the runner's user can")
    topo = _topology(state)
    if topo is not None:
        described += f"; ranks on {topo.words()}, started by {ranks.launcher.name if ranks is not None else '?'}"
        if topo.changes:
            limits.append(
                f"topology changed against the reference: {', '.join(topo.changes)}" + (f" ({'; '.join(topo.remapped[:3])})" if topo.remapped else "")
            )
    container, contract = job.record.container, job.record.contract
    if container is not None and not container.used:
        limits.append(f"no container: {container.reason if container.reason is not None else 'none declared'}")
    retention = _retention(job)
    if retention:
        limits.append(f"exact reproduction expires with the dataset's retention on {retention}")
    lifetime = contract.lifetime_expires if contract is not None else None
    if lifetime:
        limits.append(f"the contract holds until {lifetime}")
    if last:
        limits.append(f"steps after {last} were not compared")
    envelope = contract.envelope if contract is not None else Envelope()
    framework = envelope.framework
    world_sizes = list(envelope.world_sizes or [job.record.execution.world_size if job.record.execution is not None else None])
    limits.append(
        f"hardware and software outside the envelope (GPUs {list(envelope.gpu_models or []) or 'none: CPU only'}, "
        f"framework {framework.name if framework else '?'} {framework.release if framework else ''}, "
        f"world sizes {world_sizes})"
    )
    if failed is None:
        text = (
            f"{name} was replayed from an empty worker in {environment}, on {described}, inside its contract's envelope. "
            f"Seeds rebuilt: {list(seeds_rebuilt)}. Compared: {'; '.join(compared) or 'the run started and reached its steps'}."
        )
        if job.code.ran != "record":
            text += f" Whose code: {job.code.words()}."
    elif failed.exit_code in (2, 3):  # nothing was compared: a usage or infrastructure stop is no difference
        why = "an infrastructure failure" if failed.exit_code == 3 else "a problem with the input or the environment it declares"
        text = f"{name} could not be rebuilt, so nothing was compared: the {failed.name} stage stopped it with {why} ({failed.detail})."
    else:
        text = f"{name} was NOT reproduced: the first difference is at the {failed.name} stage ({failed.detail}). Rebuilt in {environment}, on {described}."
    return Claim(replayed, text, tuple(compared), tuple(limits), topo.as_dict() if topo is not None else None)


def _power(test: MetricTest) -> str:
    """What the test could have caught: stated with every statistical verdict."""
    stated = test.power
    if "minimum_detectable_shift" not in stated:
        return ""
    said = f"; catches a shift of {stated['minimum_detectable_shift']:.4g} with {percent(stated['at_power'])} power"
    if "shift" in stated:
        said += f", the declared {stated['shift']:.4g} with {percent(stated['power'])}"
    return said


def _topology(state: RebuildState) -> Topology | None:
    """Where the ranks ran (rank <-> node) and what changed against the record, when known."""
    placement = state.ranks.placement if state.ranks is not None else {}
    return topology(state.job.record, dict(placement)) if placement else None


def _environment(state: RebuildState) -> str:
    """Which environment ran, in words: what the claim is about."""
    which = state.job.options.environment
    if state.fetched is None:  # the digest stage never ran
        return "no realized environment"
    if state.environment is None:  # the digest stage failed: the realizer says what it could not make
        return REALIZERS[state.job.realizer.name].unrealized(which)
    return state.environment.realized.identity.claim_words(which)


def _retention(job: RebuildJob) -> str | None:
    """The dataset's retention: of its inline manifest (a dataset manifest, which the typed record
    does not model: that kind's rules read it), else of the manifest file it names."""
    inline = (job.data.get("dataset") or {}).get("inline") if isinstance(job.data.get("dataset"), dict) else None
    if isinstance(inline, dict):
        return (inline.get("retention") or {}).get("expires")
    dataset = job.record.dataset
    path = dataset.manifest.path if dataset is not None and dataset.manifest is not None else None
    if path is not None:
        try:
            data = load_document(job.root / path).data
        except (DocumentError, OSError):
            return None
        return ((data or {}).get("retention") or {}).get("expires") if isinstance(data, dict) else None
    return None
