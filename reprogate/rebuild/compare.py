"""Comparing a rebuilt step trace with the reference: batches, tensors, step values, metrics.

Shared by the rebuild's batches / model-state / steps / metric stages and `reprogate compare`.
Events are keyed by (step, rank), so multi-rank traces compare rank by rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reprogate.rebuild.stats import StepComparison, compare_steps
from reprogate.runtime.trace import TraceError

Key = tuple[int, int]  # (step, rank)


@dataclass
class Outcome:
    status: str  # pass, fail, skipped
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


def step_events(events: Iterable[dict[str, Any]], first: int, last: int | None) -> dict[Key, dict[str, Any]]:
    """Step events with first <= step <= last (last None: no upper bound)."""
    return {(e["step"], e.get("rank", 0)): e for e in events if e.get("type") == "step" and e["step"] >= first and (last is None or e["step"] <= last)}


def metrics(events: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Metric values reported by rank 0 (the last one reported wins)."""
    out: dict[str, float] = {}
    for e in events:
        if e.get("type") == "metric" and e.get("rank", 0) == 0:
            out[e["name"]] = float(e["value"])
    return out


def loss_curve(events: Iterable[dict[str, Any]]) -> list[tuple[int, float]]:
    """Mean loss over ranks per step."""
    sums: dict[int, list[float]] = {}
    for e in events:
        if e.get("type") == "step" and "loss" in e:
            sums.setdefault(e["step"], []).append(float(e["loss"]))
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


def compare_batches(reference: dict[Key, dict[str, Any]], rebuilt: dict[Key, dict[str, Any]]) -> Outcome:
    keyed = {k: e["batch"] for k, e in reference.items() if "batch" in e}
    if not keyed:
        return Outcome("skipped", "the reference trace records no batch digests")
    for key in sorted(keyed):
        got = rebuilt.get(key, {}).get("batch")
        if got != keyed[key]:
            step, rank = key
            if other_algorithms(keyed[key], got):
                return Outcome("fail", f"step {step}, rank {rank}: {other_algorithms(keyed[key], got)}", {"first_step": step, "rank": rank})
            what = "is missing from the rebuild" if got is None else "differs (data order or content changed)"
            return Outcome("fail", f"step {step}, rank {rank}: the input batch {what}", {"first_step": step, "rank": rank})
    steps = sorted({k[0] for k in keyed})
    return Outcome("pass", f"batch digests equal at {len(keyed)} (step, rank) points, steps {steps[0]}-{steps[-1]}", {"compared": len(keyed)})


def compare_tensors(reference: dict[Key, dict[str, Any]], rebuilt: dict[Key, dict[str, Any]], names: list[str]) -> Outcome:
    """Bitwise: digests of the named tensors (`model_state` = the whole state) must be equal."""
    compared = 0
    for key in sorted(reference):
        ref = reference[key]
        new = rebuilt.get(key, {})
        for name in names:
            expected = ref.get("model_state") if name == "model_state" else ref.get("tensors", {}).get(name)
            if expected is None:
                continue
            got = new.get("model_state") if name == "model_state" else new.get("tensors", {}).get(name)
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


def first_loss_difference(reference: dict[Key, dict[str, Any]], rebuilt: dict[Key, dict[str, Any]]) -> str | None:
    """Where the loss first differs at all, in words: shown beside a digest difference, which
    the trace records only every few steps, so the first numeric divergence is not hidden."""
    for key in sorted(reference):
        a, b = reference[key].get("loss"), rebuilt.get(key, {}).get("loss")
        if a is not None and b is not None and float(a) != float(b):
            step, rank = key
            return f"the loss first differs at step {step}, rank {rank} ({float(b)!r} vs {float(a)!r} in the reference, |Δ| {abs(float(a) - float(b)):.3g})"
    return None


class QuantityError(TraceError):
    """A compared step value that is not a number; `side` says whose trace (reference, rebuilt)."""

    def __init__(self, message: str, side: str) -> None:
        super().__init__(message)
        self.side = side


def _quantity(event: dict[str, Any], name: str, key: Key, side: str) -> float:
    """A compared step value as a number; a trace is written by training code, so a string, a
    list or a boolean there is a TraceError naming the side, step, rank and field."""
    value = event[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise QuantityError(f"the {side} trace, step {key[0]}, rank {key[1]}: {name} is a number, not {str(value)[:40]!r}", side)
    return float(value)


def compare_values(
    reference: dict[Key, dict[str, Any]], rebuilt: dict[Key, dict[str, Any]], quantities: list[str], abs_tol: float, rel_tol: float
) -> tuple[Outcome, StepComparison]:
    ref = {k: {q: _quantity(e, q, k, "reference") for q in quantities if q in e} for k, e in reference.items()}
    new = {k: {q: _quantity(e, q, k, "rebuilt") for q in quantities if q in e} for k, e in rebuilt.items()}
    result = compare_steps(ref, new, quantities, abs_tol, rel_tol)  # type: ignore[arg-type]
    exact = abs_tol == 0 and rel_tol == 0
    rule = "exactly equal" if exact else f"|a-b| <= {abs_tol:g} + {rel_tol:g}*|b|"
    if result.compared == 0:
        return Outcome("fail", "the reference trace has no steps in the compared range"), result
    if result.passed:
        return Outcome(
            "pass", f"{'/'.join(quantities)} {rule} at {result.compared} (step, rank) points; max deviation {result.max_deviation:.3g}", result.as_dict()
        ), result
    step, rank = result.first_outside  # type: ignore[misc]
    return Outcome(
        "fail",
        f"step {step}, rank {rank}: {result.quantity} outside {rule} (max deviation {result.max_deviation:.3g} "
        f"at step {result.max_deviation_step[0] if result.max_deviation_step else '?'})",
        {**result.as_dict(), "first_step": step, "rank": rank},
    ), result
