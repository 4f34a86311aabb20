"""Comparing a rebuilt step trace with the reference: batches, tensors, step values, metrics.

Shared by the rebuild's batches / model-state / steps / metric stages and `reprogate compare`.
Events are keyed by (step, rank), so multi-rank traces compare rank by rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reprogate.rebuild.stage_names import StageStatus
from reprogate.rebuild.step_figures import Figures, Judged, Key, Point, Tolerance, figures
from reprogate.runtime.trace import MetricEvent, StepEvent, TraceError, TraceEvent, Value

# What a step's scalars are, in the order a step uses them: the inputs it is given (the schedule's
# learning rate, the loss scale and other hyperparameters a script reports, the batch), then what
# it computes from them (the loss, the gradient norm and the other metrics, then the weights).
INPUT_METRICS = ("loss_scale", "momentum", "weight_decay", "beta1", "beta2", "temperature", "dropout", "batch_size", "tokens")
OUTPUT_FIELDS = ("loss",)


@dataclass
class Outcome:
    status: StageStatus  # pass, fail, skipped
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


Steps = Mapping[Key, StepEvent]  # step events by (step, rank)


def step_events(events: Iterable[TraceEvent], first: int, last: int | None) -> dict[Key, StepEvent]:
    """Step events with first <= step <= last (last None: no upper bound)."""
    return {(e.step, e.rank): e for e in events if isinstance(e, StepEvent) and e.step >= first and (last is None or e.step <= last)}


def metrics(events: Iterable[TraceEvent]) -> dict[str, float]:
    """Metric values reported by rank 0 (the last one reported wins)."""
    out: dict[str, float] = {}
    for e in events:
        if isinstance(e, MetricEvent) and e.rank == 0:
            out[e.name] = float(e.value)
    return out


def loss_curve(events: Iterable[TraceEvent]) -> list[tuple[int, float]]:
    """Mean loss over ranks per step."""
    sums: dict[int, list[float]] = {}
    for e in events:
        if isinstance(e, StepEvent) and e.loss is not None:
            sums.setdefault(e.step, []).append(float(e.loss))
    return [(step, sum(v) / len(v)) for step, v in sorted(sums.items())]


def digest_algorithm(value: Any) -> str | None:
    """The algorithm a digest was made with, from its prefix (sha256:..., blake3:...)."""
    return value.split(":", 1)[0] if isinstance(value, str) and ":" in value else None


def other_algorithms(expected: Any, got: Any) -> str | None:
    """Why two digests cannot be compared at all, or None when they can."""
    a, b = digest_algorithm(expected), digest_algorithm(got)
    if a and b and a != b:
        return f"different digest algorithms (the reference used {a}, the rebuild {b}): not comparable; trace both with the same Tracer(digest=...)"
    return None


def compare_batches(reference: Steps, rebuilt: Steps) -> Outcome:
    keyed = {k: e.batch for k, e in reference.items() if e.batch is not None}
    if not keyed:
        return Outcome("skipped", "the reference trace records no batch digests")
    for key in sorted(keyed):
        theirs = rebuilt.get(key)
        got = theirs.batch if theirs is not None else None
        if got != keyed[key]:
            step, rank = key
            if other_algorithms(keyed[key], got):
                return Outcome("fail", f"step {step}, rank {rank}: {other_algorithms(keyed[key], got)}", {"first_step": step, "rank": rank})
            what = "is missing from the rebuild" if got is None else "differs (data order or content changed)"
            return Outcome("fail", f"step {step}, rank {rank}: the input batch {what}", {"first_step": step, "rank": rank})
    steps = sorted({k[0] for k in keyed})
    return Outcome("pass", f"batch digests equal at {len(keyed)} (step, rank) points, steps {steps[0]}-{steps[-1]}", {"compared": len(keyed)})


def _digest_of(event: StepEvent | None, name: str) -> str | None:
    """The digest of tensor `name` a step records (`model_state`: of the whole state)."""
    if event is None:
        return None
    if name == "model_state":
        return event.model_state
    return (event.tensors or {}).get(name)


def compare_tensors(reference: Steps, rebuilt: Steps, names: list[str]) -> Outcome:
    """Bitwise: digests of the named tensors (`model_state` = the whole state) must be equal."""
    compared = 0
    for key in sorted(reference):
        for name in names:
            expected = _digest_of(reference[key], name)
            if expected is None:
                continue
            got = _digest_of(rebuilt.get(key), name)
            compared += 1
            if got != expected:
                step, rank = key
                if other_algorithms(expected, got):
                    why = other_algorithms(expected, got)
                    return Outcome("fail", f"step {step}, rank {rank}: {name}: {why}", {"first_step": step, "rank": rank, "tensor": name})
                what = "is missing from the rebuild" if got is None else "differs"
                return Outcome(
                    "fail",
                    f"step {step}, rank {rank}: {name} {what} ({digest_algorithm(expected)} over dtype, shape, bytes)",
                    {"first_step": step, "rank": rank, "tensor": name},
                )
    if not compared:
        return Outcome("fail", f"the reference trace has no digest of {', '.join(names)}: a bitwise contract cannot be checked")
    return Outcome("pass", f"{compared} tensor digest(s) equal ({', '.join(names)})", {"compared": compared})


class QuantityError(TraceError):
    """A compared step value that is not a number; `side` says whose trace (reference, rebuilt)."""

    def __init__(self, message: str, side: str) -> None:
        super().__init__(message)
        self.side = side


def quantity(event: StepEvent, name: str, key: Key, side: str) -> float:
    """A compared step value as a number; a trace is written by training code, so a string, a
    list or a boolean there is a TraceError naming the side, step, rank and field (and so is a
    reference value that is not finite: nothing can be within a tolerance of it)."""
    value = event.named(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuantityError(f"the {side} trace, step {key[0]}, rank {key[1]}: {name} is a number, not {str(value)[:40]!r}", side)
    if side == "reference" and not math.isfinite(value):
        raise QuantityError(f"the {side} trace, step {key[0]}, rank {key[1]}: {name} is {value!r}, not a finite number", side)
    return float(value)


def loss_figures(reference: Steps, rebuilt: Steps, judged: Judged, tolerance: Tolerance | None) -> Figures:
    """The loss at every (step, rank) point: the figures the model-state note, the verdict's
    `loss` section and the report's chart state (a loss that is not a number is left out here;
    the steps stage, which judges it, says so)."""
    return figures(reference, rebuilt, "loss", judged, tolerance)


def first_loss_difference(loss: Figures) -> str | None:
    """Where the loss first differs at all, in words: shown beside a digest difference, which
    the trace records only every few steps, so the first numeric divergence is not hidden."""
    point = loss.first_difference
    if point is None:
        return None
    if point.rebuilt is None:
        return f"the rebuild has no loss at {point.where} (the reference has {point.reference!r})"
    return f"the loss first differs at {point.where} ({point.rebuilt!r} vs {point.reference!r} in the reference, |Δ| {point.difference:.3g})"


@dataclass(frozen=True)
class StepJudgement:
    """The steps stage's test of several quantities: each one's figures; the first point outside
    any (in (step, rank) order, then the order the quantities are listed in) and the largest
    difference of any, each named with its quantity."""

    figures: tuple[Figures, ...]
    compared: int  # (step, rank) points of the reference in the compared range

    @property
    def first_outside(self) -> tuple[str, Point] | None:
        found = [(p.step, p.rank or 0, i, f.quantity, p) for i, f in enumerate(self.figures) if (p := f.first_outside) is not None]
        if not found:
            return None
        first = min(found, key=lambda item: item[:3])
        return first[3], first[4]

    @property
    def largest(self) -> tuple[str, Point] | None:
        found = [(f.quantity, p) for f in self.figures if (p := f.largest) is not None]
        return max(found, key=lambda item: item[1].difference) if found else None

    @property
    def passed(self) -> bool:
        return self.first_outside is None

    def of(self, name: str) -> Figures | None:
        return next((f for f in self.figures if f.quantity == name), None)


def largest_words(judgement: StepJudgement) -> str:
    """The largest difference of any compared quantity, named: `largest difference 0.00116 (loss at step 58, rank 1)`."""
    largest = judgement.largest
    if largest is None:
        return "no value compared"
    name, point = largest
    return f"largest difference {point.difference:.3g} ({name} at {point.where})" if point.difference > 0 else "largest difference 0"


def compare_values(reference: Steps, rebuilt: Steps, quantities: list[str], abs_tol: float, rel_tol: float) -> tuple[Outcome, StepJudgement]:
    """The steps stage's test: every quantity at every (step, rank) point of the reference, by
    |a-b| <= abs + rel*|b| (b the reference's value); a point the rebuild lacks is outside."""
    tolerance = Tolerance(abs_tol, rel_tol)
    judged: Judged = "exact" if tolerance.exact else "tolerance"
    judgement = StepJudgement(tuple(figures(reference, rebuilt, q, judged, tolerance, read=quantity) for q in quantities), len(reference))
    rule = "exactly equal" if tolerance.exact else f"|a-b| <= {abs_tol:g} + {rel_tol:g}*|b|"
    if judgement.compared == 0:
        return Outcome("fail", "the reference trace has no steps in the compared range"), judgement
    outside = judgement.first_outside
    if outside is None:
        return Outcome("pass", f"{'/'.join(quantities)} {rule} at {judgement.compared} (step, rank) points; {largest_words(judgement)}"), judgement
    name, point = outside
    what = "is missing from the rebuild" if point.rebuilt is None else f"outside {rule} (|Δ| {point.difference:.3g})"
    return Outcome(
        "fail", f"{point.where}: {name} {what}; {largest_words(judgement)}", {"first_step": point.step, "rank": point.rank, "quantity": name}
    ), judgement


@dataclass(frozen=True)
class FirstDifference:
    """The first scalar of the trace that differs: the earliest step at which anything differs,
    there the first field in inputs -> outputs order that differs on any rank (so a changed
    learning rate is named before the loss and the weights it goes on to change), and of the ranks
    where it differs the one furthest from the reference (the lowest of equals)."""

    field: str  # lr, batch, metrics.loss_scale, loss, metrics.grad_norm, tensors.<name>, model_state
    role: str  # input or output
    step: int
    rank: int
    reference: Any
    rebuilt: Any
    judged: str = "exact"  # tolerance: an output number held to the contract's tolerance, which it left here

    @property
    def text(self) -> str:
        where = f"step {self.step}, rank {self.rank}"
        if self.rebuilt is None:
            return f"`{self.field}` is missing from the rebuild from {where} (the reference has {_shown(self.reference, self.reference)})"
        how = "is outside the contract's tolerance from" if self.judged == "tolerance" else "differs from"
        return f"`{self.field}` {how} {where}: {_shown(self.rebuilt, self.reference)} in the rebuild vs {_shown(self.reference, self.rebuilt)} in the reference"

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "role": self.role,
            "step": self.step,
            "rank": self.rank,
            "reference": self.reference,
            "rebuilt": self.rebuilt,
            "judged": self.judged,
            "text": self.text,
        }


def _shown(value: Any, other: Any) -> str:
    """A number short enough to read (4 significant digits), unless that would hide the difference."""
    if isinstance(value, float) and isinstance(other, float):
        return f"{value:.4g}" if f"{value:.4g}" != f"{other:.4g}" else repr(value)
    if isinstance(value, str) and len(value) > 24:
        return f"`{value[:20]}…`"
    return repr(value) if not isinstance(value, str) else f"`{value}`"


def _fields(event: StepEvent) -> list[tuple[str, str, Value]]:
    """(field, role, value) of one step event, in inputs -> outputs order."""
    metrics = event.metrics or {}
    tensors = event.tensors or {}
    out: list[tuple[str, str, Value]] = []
    if event.lr is not None:
        out.append(("lr", "input", event.lr))
    out += [(f"metrics.{name}", "input", metrics[name]) for name in sorted(metrics) if name in INPUT_METRICS or name.startswith("lr")]
    if event.batch is not None:
        out.append(("batch", "input", event.batch))
    out += [(name, "output", event.named(name)) for name in OUTPUT_FIELDS if event.has(name)]
    out += [(f"metrics.{name}", "output", metrics[name]) for name in sorted(metrics) if not (name in INPUT_METRICS or name.startswith("lr"))]
    out += [(f"tensors.{name}", "output", tensors[name]) for name in sorted(tensors)]
    if event.model_state is not None:
        out.append(("model_state", "output", event.model_state))
    return out


def _numbers(a: Any, b: Any) -> bool:
    return isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) and not isinstance(b, bool)


def _equal(a: Any, b: Any, role: str, abs_tol: float, rel_tol: float) -> bool:
    """Inputs and digests compare exactly; an output number within the contract's tolerance is equal."""
    if role == "output" and _numbers(a, b):
        return abs(float(a) - float(b)) <= abs_tol + rel_tol * abs(float(a))
    return bool(a == b)


def first_difference(
    reference: Steps,
    rebuilt: Steps,
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    weights: bool = True,
) -> FirstDifference | None:
    """The first scalar the reference trace records that the rebuild does not match; None when
    every recorded scalar matches (the difference then lies in what the trace does not record).
    `weights=False` leaves out the tensor and model-state digests: under a contract that does not
    hold weights bitwise (behavioral, statistical), nondeterministic kernels make them differ from
    the first step, and naming them would hide the difference the contract judges."""
    by_step: dict[int, list[int]] = {}
    for step, rank in sorted(reference):
        by_step.setdefault(step, []).append(rank)
    for step, ranks in by_step.items():
        differing: dict[str, list[FirstDifference]] = {}
        order: list[str] = []
        for rank in ranks:
            theirs = rebuilt.get((step, rank))
            if theirs is None:
                continue  # a step the rebuild never reached: the run stage and the steps test say so
            mine = dict((name, value) for name, _, value in _fields(theirs))
            for name, role, value in _fields(reference[(step, rank)]):
                if not weights and (name == "model_state" or name.startswith("tensors.")):
                    continue
                if name not in order:
                    order.append(name)
                got = mine.get(name)
                if not _equal(value, got, role, abs_tol, rel_tol):
                    held = role == "output" and _numbers(value, got) and (abs_tol > 0 or rel_tol > 0)
                    differing.setdefault(name, []).append(FirstDifference(name, role, step, rank, value, got, "tolerance" if held else "exact"))
        for name in order:
            if name in differing:
                return max(differing[name], key=_distance)  # the first of equals: the lowest rank
    return None


def _distance(found: FirstDifference) -> float:
    """How far a differing value is from the reference's: a missing one furthest, digests all alike
    (the lowest rank then stands for the step), numbers by |rebuilt − reference| — so at a step
    the diagnosis names the rank the loss figures name (step_figures: the one furthest away)."""
    if found.rebuilt is None:
        return math.inf
    if _numbers(found.reference, found.rebuilt):
        return abs(float(found.rebuilt) - float(found.reference))
    return 0.0
