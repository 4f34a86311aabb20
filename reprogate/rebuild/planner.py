"""`reprogate interval RECORD --plan`: what a rebuild can see, and what seeing more costs.

Each rebuild seed is one more training run on the rebuild's GPUs; each reference seed one more
run, once. From the record's reference seeds (their spread is the noise a shift must stand out
of) the planner prints the smallest shift each m catches at the target power, and the m (and the
n) a shift needs: for the shift the record declares (contract.metric.detect), and for 1, 2 and
3 standard deviations. A shift no m up to MAX_PLANNED_SEEDS catches says that the reference has
too few seeds: more rebuild seeds cannot make up for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reprogate.core.seedstats import (
    MAX_PLANNED_SEEDS,
    declared_shift,
    mean_sd,
    minimum_detectable_shift,
    percent,
    seeds_needed,
    target_power,
)
from reprogate.rebuild.interval import IntervalError, checked_alpha, reference_values

SHOWN_M = (1, 2, 3, 5, 10, 20)
SHOWN_N = (5, 10, 20, 40)


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
    detectable: dict[int, float]  # m -> minimum detectable shift at `power`
    needs: list[Need]
    equivalence: bool = False  # the record asks for Welch TOST at m >= 2

    def lines(self) -> list[str]:
        out = [
            f"reference: n={self.n} seeds, mean {self.mean:.6g}, sd {self.sigma:.4g}; test: two-sample t on the means, "
            f"α={self.alpha:g} (its false-fail rate at every m, averaged over reference draws: with few reference seeds one record's "
            f"rate can be far from it), power target {percent(self.power)}" + (f", resolution {self.resolution:g}" if self.resolution else ""),
            "",
            f"smallest shift caught at {percent(self.power)} power, by rebuild seeds m (each seed is one training run per rebuild):",
        ]
        if self.equivalence:
            out[1:1] = ["note: the record asks for test: equivalence (Welch TOST at m >= 2); this plans the two-sample t, the default test", ""]
        out += [
            f"  m={m:<3} {shift:.4g}  ({shift / self.sigma:.2f} sd)" if self.sigma > 0 else f"  m={m:<3} {shift:.4g}" for m, shift in self.detectable.items()
        ]
        out += ["", "rebuild seeds m needed to catch a shift (runs per rebuild; with more reference seeds n, run once):"]
        for need in self.needs:
            here = f"m={need.m}" if need.m is not None else f"no m up to {MAX_PLANNED_SEEDS}"
            others = ", ".join(f"n={n}: {'m=' + str(m) if m is not None else 'none'}" for n, m in need.n_for_m.items())
            out.append(f"  {need.label} ({need.shift:.4g}): {here} with n={self.n}; {others}")
        declared = next((need for need in self.needs if need.label == "declared shift"), None)
        if declared is not None and declared.m is not None:
            out += ["", f"to have every rebuild (the gate's included) catch the declared shift: contract.metric.rebuild_seeds: {declared.m}"]
        return out


def plan(data: dict[str, Any], alpha_override: float | None = None) -> Plan:
    metric = (data.get("contract") or {}).get("metric")
    if not isinstance(metric, dict):
        raise IntervalError("contract.metric is not declared")
    values = reference_values(data)
    alpha = checked_alpha(*((alpha_override, "--alpha") if alpha_override is not None else (metric.get("alpha", 0.05), "contract.metric.alpha")))
    resolution = float(metric.get("resolution") or 0.0)
    target = target_power(metric)
    n = len(values)
    mean, sigma = mean_sd(values)
    detectable = {m: minimum_detectable_shift(n, m, sigma, alpha, target, resolution) for m in SHOWN_M}
    shifts: list[tuple[str, float]] = []
    declared = declared_shift(metric, mean)
    if declared is not None:
        shifts.append(("declared shift", declared))
    if sigma > 0:
        shifts += [(f"{k} sd", k * sigma) for k in (1, 2, 3)]
    needs = [
        Need(
            label,
            shift,
            seeds_needed(n, sigma, shift, alpha, target, resolution),
            {k: seeds_needed(k, sigma, shift, alpha, target, resolution) for k in SHOWN_N if k != n},
        )
        for label, shift in shifts
    ]
    return Plan(n, mean, sigma, alpha, target, resolution, detectable, needs, metric.get("test") == "equivalence")


__all__ = ["Plan", "plan"]
