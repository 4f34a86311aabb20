"""`reprogate interval RECORD --plan`: what a rebuild can see, and what seeing more costs.

Each rebuild seed is one more training run on the rebuild's GPUs, paid on every rebuild; each
reference seed one more run, paid once. From the record's reference seeds (their spread is the
noise a shift must stand out of) the planner prints, for each number of reference seeds n and
rebuild seeds m, the test the record's rule runs, the smallest shift it catches at the target
power (assured: reached with at least that probability given the reference's own spread), and
its price in GPU-hours from the record's reference run (`reference.run`: seconds and GPUs of one
run; `execution.nodes`), times `--gpu-hour-cost` when given. It recommends the cheapest (n, m)
that catches the declared shift (contract.metric.detect): the fewest rebuild seeds, since they
are paid on every rebuild, and of those the fewest reference seeds; never one rebuild seed
against fewer reference seeds than the band needs, which skewed seed sets fail falsely. A shift no m up to
MAX_PLANNED_SEEDS catches says that the reference has too few seeds: more rebuild seeds cannot
make up for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from reprogate.core.record import RunRecord
from reprogate.core.seedstats import (
    MAX_PLANNED_SEEDS,
    assured_sigma,
    band_minimum,
    choose,
    declared_shift,
    failing_side,
    holds_tails,
    mean_sd,
    metric_test,
    minimum_detectable_shift,
    percent,
    runs_for_judged,
    seeds_needed,
    target_power,
    trace_replays,
)
from reprogate.rebuild.interval import IntervalError, checked_alpha, reference_values

SHOWN_M = (1, 2, 3, 5, 10, 20)
SHOWN_N = (5, 10, 20, 40)


@dataclass(frozen=True)
class RunCost:
    """What one run of the reference costs: its wall-clock seconds, the GPUs it held, its nodes."""

    seconds: float | None  # None: the record does not say (reference.run.seconds)
    gpus: int
    nodes: int
    price: float | None  # per GPU-hour (--gpu-hour-cost; per node-hour for a run on CPUs only), in the user's currency

    @property
    def unit(self) -> str:
        """What the plan counts: GPU-hours, or node-hours for a run on CPUs only."""
        return "GPU-h" if self.gpus else "node-h"

    def gpu_hours(self, runs: int) -> float | None:
        """`runs` runs' GPU-hours (node-hours for a run on CPUs only, which holds no GPU)."""
        return None if self.seconds is None else runs * self.seconds / 3600 * (self.gpus or self.nodes)

    def money(self, runs: int) -> float | None:
        hours = self.gpu_hours(runs)
        return None if hours is None or self.price is None else hours * self.price


@dataclass(frozen=True)
class Cell:
    """One (n, m): the test the rule runs there, the smallest shift it catches, and its price."""

    n: int
    m: int
    test: str
    detectable: float
    per_rebuild_gpu_hours: float | None
    per_rebuild_cost: float | None
    extra_reference_runs: int  # reference seeds to run once beyond the record's
    extra_reference_gpu_hours: float | None
    catches_declared: bool | None  # None: no shift declared
    runs: int = 0  # training runs per rebuild: m, plus the trace replay's of a bitwise or behavioral contract
    holds_tails: bool = True  # False: one rebuild seed and too few reference seeds for the band (core/seedstats.holds_tails)

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "m": self.m,
            "test": self.test,
            "minimum_detectable_shift": None if math.isinf(self.detectable) else self.detectable,
            "gpu_hours_per_rebuild": self.per_rebuild_gpu_hours,
            "cost_per_rebuild": self.per_rebuild_cost,
            "extra_reference_runs": self.extra_reference_runs,
            "extra_reference_gpu_hours": self.extra_reference_gpu_hours,
            "catches_declared_shift": self.catches_declared,
            "runs_per_rebuild": self.runs,
            "holds_skewed_seeds": self.holds_tails,
        }


@dataclass(frozen=True)
class Need:
    label: str
    shift: float
    m: int | None  # rebuild seeds needed with the record's n; None: no m up to MAX_PLANNED_SEEDS
    n_for_m: dict[int, int | None]  # reference seeds -> rebuild seeds needed with that many


@dataclass(frozen=True)
class Plan:
    n: int
    mean: float
    sigma: float
    alpha: float
    power: float
    resolution: float
    test: str | None
    detectable: dict[int, float]  # m -> minimum detectable shift at `power`, with the record's n
    needs: list[Need]
    cost: RunCost
    cells: list[Cell]
    recommended: Cell | None  # the cheapest (n, m) that catches the declared shift
    as_is: Cell | None  # the cheapest that catches it with the record's own reference seeds
    declared: float | None
    equivalence: bool = False  # the record asks for Welch TOST at m >= 2
    one_sided: bool = False  # fail_on: worse: the shifts are the worse way, caught by the one-sided test
    level: str | None = None  # the contract's level: bitwise and behavioral add a run that replays the trace's seed

    def _hours(self, hours: float | None, cost: float | None) -> str:
        if hours is None:
            return "-"
        return f"{hours:.4g} {self.cost.unit}" + (f" ({cost:.4g})" if cost is not None else "")

    def lines(self) -> list[str]:
        out = [
            f"reference: n={self.n} seeds, mean {self.mean:.6g}, sd {self.sigma:.4g}; test: {self.test or 'difference'} "
            f"({'one-sided, fail_on: worse: shifts the worse way' if self.one_sided else 'two-sided'}; "
            f"α={self.alpha:g}, its false-fail rate), power target {percent(self.power)}, assured: reached with at least that "
            "probability given the reference seeds' spread" + (f"; resolution {self.resolution:g}" if self.resolution else ""),
        ]
        if self.cost.seconds is None:
            out.append("price: the record states no reference.run.seconds (init records it): runs are counted, GPU-hours are not")
        else:
            priced = f", {self.cost.money(1):.4g} at {self.cost.price:g} an hour" if self.cost.price is not None else ""
            out.append(
                f"price: one run takes {self.cost.seconds:.4g} s on {self.cost.gpus} GPU(s), {self.cost.nodes} node(s): "
                f"{self.cost.gpu_hours(1):.4g} {self.cost.unit} a run{priced}"
            )
        if self.equivalence:
            out += ["note: the record asks for test: equivalence (Welch TOST at m >= 2); this plans the two-sample t, the default test"]
        replay = trace_replays(self.level)
        each = "each seed is one training run per rebuild" + (
            f", and one more run replays the reference's seed for the {self.level} trace comparison" if replay else ""
        )
        out += ["", f"smallest shift caught at {percent(self.power)} power, by rebuild seeds m ({each}):"]
        out += [
            f"  m={m:<3} {shift:.4g}  ({shift / self.sigma:.2f} sd)" if self.sigma > 0 else f"  m={m:<3} {shift:.4g}" for m, shift in self.detectable.items()
        ]
        out += ["", "rebuild seeds m needed to catch a shift (runs per rebuild; with more reference seeds n, run once):"]
        for need in self.needs:
            here = f"m={need.m}" if need.m is not None else f"no m up to {MAX_PLANNED_SEEDS}"
            others = ", ".join(f"n={n}: {'m=' + str(m) if m is not None else 'none'}" for n, m in need.n_for_m.items())
            out.append(f"  {need.label} ({need.shift:.4g}): {here} with n={self.n}; {others}")
        out += ["", "price of each (n, m): per rebuild, and once for the reference seeds beyond the record's:"]
        out.append(f"  {'n':>4} {'m':>4}  {'test':<10} {'shift caught':>14}  {'per rebuild':>22}  {'once':>14}")
        for cell in self.cells:
            shift = "none" if math.isinf(cell.detectable) else f"{cell.detectable:.4g}"
            mark = ("  catches the declared shift" if cell.catches_declared else "") + (
                "" if cell.holds_tails else f"  (one seed, n < {band_minimum(self.alpha)}: α not held on skewed seeds)"
            )
            once = (
                "-"
                if not cell.extra_reference_runs
                else f"{cell.extra_reference_runs} runs"
                + (f", {cell.extra_reference_gpu_hours:.4g} {self.cost.unit}" if cell.extra_reference_gpu_hours is not None else "")
            )
            paid = self._hours(cell.per_rebuild_gpu_hours, cell.per_rebuild_cost)
            out.append(f"  {cell.n:>4} {cell.m:>4}  {cell.test:<10} {shift:>14}  {paid:>22}  {once:>14}{mark}")
        out.append("")
        if self.declared is None:
            out.append("no shift declared (contract.metric.detect): nothing to recommend")
        elif self.recommended is None:
            out.append(f"no (n, m) up to n={max(SHOWN_N)}, m={MAX_PLANNED_SEEDS} catches the declared shift {self.declared:.4g}: run more reference seeds")
        else:
            cell = self.recommended
            paid = f", {self._hours(cell.per_rebuild_gpu_hours, cell.per_rebuild_cost)} per rebuild" if cell.per_rebuild_gpu_hours is not None else ""
            once = f" after {cell.extra_reference_runs} more reference seeds (once)" if cell.extra_reference_runs else ""
            out.append(f"cheapest that catches the declared shift {self.declared:.4g}: n={cell.n}, m={cell.m}{once}{paid}")
            if self.as_is is not None and self.as_is is not cell:
                kept = self._hours(self.as_is.per_rebuild_gpu_hours, self.as_is.per_rebuild_cost)
                out.append(f"  with the record's {self.n} reference seeds as they are: m={self.as_is.m}" + (f", {kept} per rebuild" if kept != "-" else ""))
            settle = self.as_is or cell
            out.append(
                f"  to have every rebuild (the gate's included) run it: contract.metric.rebuild_seeds: {runs_for_judged(self.level, settle.m)}"
                + ("" if settle is cell else f" (or {runs_for_judged(self.level, cell.m)} once the reference has n={cell.n})")
                + (" (m + 1: the trace replay's run counts)" if replay else "")
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "mean": self.mean,
            "sd": self.sigma,
            "alpha": self.alpha,
            "power": self.power,
            "resolution": self.resolution,
            "test": self.test or "difference",
            "sided": "one" if self.one_sided else "two",
            "declared_shift": self.declared,
            "trace_replay_runs": trace_replays(self.level),
            "run": {"seconds": self.cost.seconds, "gpus": self.cost.gpus, "nodes": self.cost.nodes, "gpu_hour_cost": self.cost.price, "hours": self.cost.unit},
            "minimum_detectable_shift": {str(m): (None if math.isinf(v) else v) for m, v in self.detectable.items()},
            "needs": [{"label": need.label, "shift": need.shift, "m": need.m, "m_by_n": {str(k): v for k, v in need.n_for_m.items()}} for need in self.needs],
            "cells": [cell.to_json() for cell in self.cells],
            "recommended": None if self.recommended is None else self.recommended.to_json(),
            "recommended_with_the_reference_as_is": None if self.as_is is None else self.as_is.to_json(),
        }


def run_cost(record: RunRecord, price: float | None) -> RunCost:
    """One reference run's price from the record: reference.run.seconds and .gpus (else the
    ranks, one GPU each, when the record lists GPUs; none on a CPU), execution.nodes."""
    run = record.reference.run if record.reference is not None else None
    seconds = run.seconds if run is not None else None
    seconds = float(seconds) if seconds is not None and math.isfinite(seconds) and seconds > 0 else None
    execution = record.execution
    nodes = execution.nodes if execution is not None and execution.nodes is not None and execution.nodes > 0 else 1
    gpus = run.gpus if run is not None else None
    if gpus is None:
        listed = record.devices.gpus if record.devices is not None else None
        gpus = (execution.world_size if execution is not None else 1) if listed else 0
    return RunCost(seconds, gpus, nodes, price)


def plan(record: RunRecord, alpha_override: float | None = None, gpu_hour_cost: float | None = None) -> Plan:
    contract = record.contract
    metric = contract.metric if contract is not None else None
    if contract is None or metric is None:
        raise IntervalError("contract.metric is not declared")
    values = reference_values(record)
    alpha = checked_alpha(
        *((alpha_override, "--alpha") if alpha_override is not None else (metric.alpha if metric.alpha is not None else 0.05, "contract.metric.alpha"))
    )
    resolution = float(metric.resolution or 0.0)
    target = target_power(metric)
    test = metric_test(metric)
    one_sided = failing_side(metric) != "both"
    n = len(values)
    mean, sigma = mean_sd(values)
    cost = run_cost(record, gpu_hour_cost)
    level: str | None = contract.level

    def detectable(k: int, m: int) -> float:
        return minimum_detectable_shift(k, m, assured_sigma(k, sigma, target), alpha, target, resolution, test, sigma, one_sided)

    def needed(k: int, shift: float) -> int | None:
        return seeds_needed(k, assured_sigma(k, sigma, target), shift, alpha, target, resolution, test=test, reference_sd=sigma, one_sided=one_sided)

    shown_n = sorted({n, *(k for k in SHOWN_N if k > n)})
    declared = declared_shift(metric, mean)
    shifts: list[tuple[str, float]] = []
    if declared is not None:
        shifts.append(("declared shift", declared))
    if sigma > 0:
        shifts += [(f"{k} sd", k * sigma) for k in (1, 2, 3)]
    needs = [Need(label, shift, needed(n, shift), {k: needed(k, shift) for k in SHOWN_N if k != n}) for label, shift in shifts]
    cells = []
    for k in shown_n:
        ms = sorted(set(SHOWN_M) | ({m} if declared is not None and (m := needed(k, declared)) is not None else set()))
        for m in ms:
            caught = detectable(k, m)
            cells.append(
                Cell(
                    k,
                    m,
                    choose(test, m, sigma, resolution, k).kind,
                    caught,
                    cost.gpu_hours(runs_for_judged(level, m)),
                    cost.money(runs_for_judged(level, m)),
                    k - n,
                    cost.gpu_hours(k - n) if k > n else None,
                    None if declared is None else caught <= declared,
                    runs_for_judged(level, m),
                    holds_tails(k, m, alpha),
                )
            )
    catching = [cell for cell in cells if cell.catches_declared and cell.holds_tails]  # none is recommended that a skewed seed set fails falsely
    recommended = min(catching, key=lambda cell: (cell.m, cell.n)) if catching else None
    kept = [cell for cell in catching if cell.n == n]
    as_is = min(kept, key=lambda cell: cell.m) if kept else None
    return Plan(
        n,
        mean,
        sigma,
        alpha,
        target,
        resolution,
        test,
        {m: detectable(n, m) for m in SHOWN_M},
        needs,
        cost,
        cells,
        recommended,
        as_is,
        declared,
        metric.test == "equivalence",
        one_sided,
        level,
    )


__all__ = ["Cell", "Plan", "RunCost", "plan", "run_cost"]
