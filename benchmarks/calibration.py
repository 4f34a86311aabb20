"""Calibration and power of the metric verdict on real seed sets (a benchmark, not a test).

The corpus is benchmarks/data/mlperf-rcp/seed-sets.json: every distinct set of MLPerf reference
convergence points (epochs or samples to converge, one value per seed of a real training run;
mlcommons/logging, Apache-2.0, tools/mlperf_rcp_corpus.py). A drill draws n reference seeds and
m rebuild seeds from one set's values (with replacement: the set is the seed distribution), so
every failure is a false one; for power the rebuild's draws move by k standard deviations of the
set. Each set declares the resolution `init` derives from its values (core/seedstats.grid_step).

The corpus is split by benchmark (MLPerf's model: resnet, bert, ...; `sd` is stable_diffusion):
a benchmark whose name's sha256 starts with an even byte is in the tuning half, which chose
test: robust's constants (BAND_SHARE); the tables are of the other half (`--half report`, the
default) unless asked for the tuning half or all. Normal noise belongs to both.

Families (sets of at least MIN_RUNS runs with some spread):
  - fine:       the grid is not coarser than the set's sd, |skewness| <= 1
  - skewed:     the grid is not coarser than the set's sd, |skewness| > 1
  - quantised:  the grid is coarser than the set's sd (accuracy to 3 decimals, epochs to converge)
  - non-conv.:  every set, 3 % of seeds not converging (counted at twice the set's median)
  - normal:     N(0, 1) draws, the textbook case (one "set", MIN_NORMAL_SETS times over)
Rules, on the same draws:
  - difference: reprogate's `test: difference` (the t widened by half the resolution; what a
                record that names no test gets), with the rounding floor
  - seeds:      reprogate's `test: seeds` (core/seedstats.choose: the prediction interval widened
                by r²/24 at m = 1, the t at m = 2 or on a coarse grid, the exact mid-p rank-sum
                test at m >= 3 on a fine grid)
  - robust:     reprogate's `test: robust` (the prediction interval, no widening, that also holds
                the reference's central band [x_(j), x_(n+1-j)], j = floor(2α(n+1)), at m = 1;
                from m = 3 the rank-sum test where `seeds` runs it, and on a coarse grid too from
                n = 20; the t otherwise)
  - MLPerf:     MLPerf's RCP rule (rcp_checker.py) mirrored to two sides at the same α: olympic
                means (the lowest and highest seed dropped on each side), the reference's
                population sd, Student's t at n-2 and m-2 seeds; defined from m = 3
  - one-sided:  `robust` with `fail_on: worse`, and MLPerf's own one-sided rule, both failing on
                the side MLPerf's rule fails (fewer epochs than the reference): false fails on
                the same draws, power with the rebuild moved that way
Every decision is vectorised here with numpy; `agreement` re-decides a sample of drills with
reprogate's own functions (rebuild/stats.difference_test, prediction_interval) and counts them.
Then: ties (identical values), and whether stated power is honest (init's declared shift, caught
at 80 % by the rebuild seeds it writes, over simulated records).

    .venv/bin/python benchmarks/calibration.py [--drills 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from reprogate.core.seedstats import BAND_SHARE, RANK_ANY_GRID_SEEDS, SHEPPARD_SHARE, assured_sigma, grid_step, minimum_detectable_shift, shape
from reprogate.rebuild.stats import difference_test, prediction_interval

ALPHA = 0.05
MIN_RUNS = 10
MIN_NORMAL_SETS = 25
NONCONVERGED = 0.03
CORPUS = Path(__file__).resolve().parent / "data" / "mlperf-rcp" / "seed-sets.json"
FALSE_FAIL_CELLS = [(n, m) for m in (1, 3, 5) for n in (5, 10, 20)]
POWER_CELLS = [(n, m) for n in (10, 20) for m in (3, 5)]
FAMILIES = ("normal", "fine", "skewed", "quantised", "non-conv.")
RULES = ("difference", "seeds", "robust", "MLPerf", "robust 1-s", "MLPerf 1-s")
ALIASES = {"sd": "stable_diffusion"}  # one benchmark under two names across rulesets


def half_of(benchmark: str) -> str:
    """The half of the corpus a benchmark's sets are in: `tune` (chose the constants) or `report`."""
    name = ALIASES.get(benchmark, benchmark)
    return "tune" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "report"


class SeedSet:
    def __init__(
        self, name: str, values: np.ndarray, family: str, draw: Callable[[np.random.Generator, tuple[int, int]], np.ndarray], half: str = "both"
    ) -> None:
        self.name, self.values, self.family, self.draw, self.half = name, values, family, draw, half
        self.sd = float(values.std(ddof=1)) if len(values) > 1 else 1.0
        self.resolution = grid_step([float(v) for v in values]) if family != "normal" else 0.0


def load_sets() -> tuple[list[SeedSet], list[dict[str, Any]]]:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    sets: list[SeedSet] = []
    flat: list[dict[str, Any]] = []
    for entry in corpus["sets"]:
        values = np.array(entry["values"], dtype=float)
        if len(values) < MIN_RUNS:
            continue
        if len(set(values.tolist())) == 1:
            flat.append(entry)
            continue
        resolution = grid_step(values.tolist())
        sd = values.std(ddof=1)
        family = "quantised" if resolution > sd else ("skewed" if abs(shape(values.tolist()).skew) > 1 else "fine")
        sets.append(SeedSet(entry["id"], values, family, lambda rng, size, v=values: rng.choice(v, size=size), half_of(entry["benchmark"])))
    for entry in list(sets):
        median = float(np.median(entry.values))

        def draw(rng: np.random.Generator, size: tuple[int, int], v: np.ndarray = entry.values, late: float = 2 * median) -> np.ndarray:
            return np.where(rng.random(size) < NONCONVERGED, late, rng.choice(v, size=size))

        sets.append(SeedSet(entry.name, entry.values, "non-conv.", draw, entry.half))
    for i in range(MIN_NORMAL_SETS):
        sets.append(SeedSet(f"normal-{i}", np.array([0.0, 1.0]), "normal", lambda rng, size: rng.normal(0.0, 1.0, size)))
    for entry in sets:
        if entry.family == "normal":
            entry.sd = 1.0
    return sets, flat


def doubled_midranks(z: np.ndarray) -> np.ndarray:
    below = (z[:, None, :] < z[:, :, None]).sum(2)
    at_most = (z[:, None, :] <= z[:, :, None]).sum(2)
    return below + at_most + 1


def rank_sum_midp(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """core/seedstats.rank_sum_p, row by row: the exact conditional distribution of the doubled
    mid-rank sum by the same dynamic programme; the two-sided mid-p and the one-sided one of a
    rebuild lower than the reference."""
    drills, n = x.shape
    m = y.shape[1]
    scores = doubled_midranks(np.concatenate([x, y], 1))
    top = int(np.sort(scores, 1)[:, -m:].sum(1).max()) + 1
    counts = np.zeros((drills, m + 1, top))
    counts[:, 0, 0] = 1
    columns = np.arange(top)[None, :]
    for i in range(n + m):
        index = columns - scores[:, i : i + 1]
        valid = index >= 0
        index = np.clip(index, 0, top - 1)
        for j in range(min(i + 1, m), 0, -1):
            counts[:, j, :] += np.where(valid, np.take_along_axis(counts[:, j - 1, :], index, 1), 0.0)
    ways = counts[:, m, :]
    centre = m * (n + m + 1)
    observed = scores[:, n:].sum(1)[:, None]
    distance = np.abs(observed - centre)
    spread = np.abs(columns - centre)
    beyond = (ways * (spread > distance)).sum(1)
    at = (ways * (spread == distance)).sum(1)
    below = (ways * (columns < observed)).sum(1) + (ways * (columns == observed)).sum(1) / 2
    total = math.comb(n + m, m)
    return (beyond + at / 2) / total, below / total


def t_fails(x: np.ndarray, y: np.ndarray, resolution: float, widening: str, side: int = 0, band: bool = False) -> np.ndarray:
    """The t (at m = 1 the prediction interval): two-sided, or (side -1 / +1) failing only a
    lower / higher rebuild; `band`: the interval also holds the reference's central band."""
    n, m = x.shape[1], y.shape[1]
    squares = ((x - x.mean(1, keepdims=True)) ** 2).sum(1) + (((y - y.mean(1, keepdims=True)) ** 2).sum(1) if m > 1 else 0.0)
    variance = squares / (n + m - 2)
    if widening == "variance" and m == 1:
        variance = variance + SHEPPARD_SHARE * resolution**2 / 12
    limit = stats.t.ppf(1 - ALPHA / (1 if side else 2), n + m - 2) * np.sqrt(variance) * math.sqrt(1 / n + 1 / m)
    if widening == "half-step":
        limit = limit + resolution / 2
    floor = 16 * np.spacing(np.maximum(np.abs(x.mean(1)), np.abs(y.mean(1))))
    difference = y.mean(1) - x.mean(1)
    fails = (side * difference if side else np.abs(difference)) > limit + floor
    j = math.floor(BAND_SHARE * ALPHA * (n + 1) + 1e-9)
    if band and m == 1 and j >= 1:
        ordered = np.sort(x, 1)
        low, high = ordered[:, j - 1], ordered[:, n - j]
        outside = (y[:, 0] < low) if side < 0 else ((y[:, 0] > high) if side > 0 else (y[:, 0] < low) | (y[:, 0] > high))
        fails &= outside
    return fails


def seeds_fails(x: np.ndarray, y: np.ndarray, resolution: float) -> np.ndarray:
    m = y.shape[1]
    if m == 1:
        return t_fails(x, y, resolution, "variance")
    fails = t_fails(x, y, resolution, "none")
    if m >= 3:
        spread = x.std(1, ddof=1)
        ranked = (spread > 0) & (resolution <= spread)  # the rule reads the reference's sd, never the rebuild's values
        if ranked.any():
            fails = fails.copy()
            fails[ranked] = rank_sum_midp(x[ranked], y[ranked])[0] <= ALPHA
    return fails


def robust_fails(x: np.ndarray, y: np.ndarray, resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """`test: robust`, two-sided and one-sided (failing a lower rebuild), on the same draws."""
    n, m = x.shape[1], y.shape[1]
    two, low = t_fails(x, y, resolution, "none", 0, True), t_fails(x, y, resolution, "none", -1, True)
    if m >= 3:
        spread = x.std(1, ddof=1)  # the rule reads the reference, never the rebuild's values
        ranked = (spread > 0) & ((resolution <= spread) | (n >= RANK_ANY_GRID_SEEDS))
        if ranked.any():
            both, lower = rank_sum_midp(x[ranked], y[ranked])
            two, low = two.copy(), low.copy()
            two[ranked], low[ranked] = both <= ALPHA, lower <= ALPHA
    return two, low


def mlperf_fails(x: np.ndarray, y: np.ndarray, side: int = 0) -> np.ndarray | None:
    """MLPerf's rule: mirrored to two sides (side 0), or its own one-sided rule (side -1: a
    submission that converged in fewer epochs than the reference allows fails)."""
    n, m = x.shape[1], y.shape[1]
    if m < 3:
        return None
    olympic_x, olympic_y = np.sort(x, 1)[:, 1:-1].mean(1), np.sort(y, 1)[:, 1:-1].mean(1)
    limit = stats.t.ppf(1 - ALPHA / (1 if side else 2), n + m - 6) * x.std(1) * math.sqrt(1 / (n - 2) + 1 / (m - 2))
    difference = olympic_y - olympic_x
    return (side * difference if side else np.abs(difference)) > limit


def decide(x: np.ndarray, y: np.ndarray, resolution: float) -> dict[str, float]:
    two, low = robust_fails(x, y, resolution)
    found = {
        "difference": float(t_fails(x, y, resolution, "half-step").mean()),
        "seeds": float(seeds_fails(x, y, resolution).mean()),
        "robust": float(two.mean()),
        "robust 1-s": float(low.mean()),
    }
    for rule, side in (("MLPerf", 0), ("MLPerf 1-s", -1)):
        ml = mlperf_fails(x, y, side)
        found[rule] = float("nan") if ml is None else float(ml.mean())
    return found


def agreement(sets: list[SeedSet], rng: np.random.Generator, per_cell: int = 4) -> tuple[int, int]:
    """Re-decide drills with reprogate's own functions: how many agree with the vectorised rules."""
    same = total = 0
    for entry in sets[:: max(1, len(sets) // 20)]:
        for n, m in FALSE_FAIL_CELLS:
            x, y = entry.draw(rng, (per_cell, n)), entry.draw(rng, (per_cell, m)) + rng.choice([0.0, 2.0 * entry.sd], size=(per_cell, 1))
            two, low = robust_fails(x, y, entry.resolution)
            fast = {
                ("difference", "both"): t_fails(x, y, entry.resolution, "half-step"),
                ("seeds", "both"): seeds_fails(x, y, entry.resolution),
                ("robust", "both"): two,
                ("robust", "lower"): low,
            }
            for i in range(per_cell):
                reference, rebuilt = x[i].tolist(), y[i].tolist()
                for (test, side), vector in fast.items():
                    if m == 1:
                        own = not prediction_interval(reference, ALPHA, entry.resolution, test, side).contains(rebuilt[0])  # type: ignore[arg-type]
                    else:
                        own = not difference_test(reference, rebuilt, ALPHA, entry.resolution, test, side).passed  # type: ignore[arg-type]
                    same += own == bool(vector[i])
                    total += 1
    return same, total


def _cell(rates: list[float], worst: Callable[[list[float]], float]) -> str:
    return "-" if math.isnan(rates[0]) else f"{np.median(rates):.3f} / {worst(rates):.3f}"


def false_fail_table(sets: list[SeedSet], drills: int, rng: np.random.Generator) -> None:
    print(f"False-fail rate of builds that reproduce, {drills:,} drills a set, α = {ALPHA}: median over sets / largest set")
    print(f"  {'family':<10} {'sets':>4} {'n':>3} {'m':>2}   " + " ".join(f"{rule:>13}" for rule in RULES))
    for family in FAMILIES:
        members = [s for s in sets if s.family == family]
        for n, m in FALSE_FAIL_CELLS:
            rows = [decide(s.draw(rng, (drills, n)), s.draw(rng, (drills, m)), s.resolution) for s in members]
            cells = [_cell([r[rule] for r in rows], max) for rule in RULES]
            print(f"  {family:<10} {len(members):>4} {n:>3} {m:>2}   " + " ".join(f"{c:>13}" for c in cells), flush=True)


def power_table(sets: list[SeedSet], drills: int, rng: np.random.Generator) -> None:
    """Two-sided rules with the rebuild moved up by k sd; one-sided ones with it moved down (the
    side MLPerf's own rule fails), on draws of their own."""
    print(f"\nPower: the share of drills failed when the rebuild's mean moved by k sd of the set; median over sets / smallest set ({drills:,} drills)")
    print("  (two-sided rules: moved up; one-sided rules: moved down, the side MLPerf's own rule fails)")
    print(f"  {'family':<10} {'n':>3} {'m':>2} {'k':>2}   " + " ".join(f"{rule:>13}" for rule in RULES) + "   robust-MLPerf  1-s")
    for family in FAMILIES[:4]:
        members = [s for s in sets if s.family == family]
        for n, m in POWER_CELLS:
            for k in (2, 3):
                up = [decide(s.draw(rng, (drills, n)), s.draw(rng, (drills, m)) + k * s.sd, s.resolution) for s in members]
                down = [decide(s.draw(rng, (drills, n)), s.draw(rng, (drills, m)) - k * s.sd, s.resolution) for s in members]
                rows = [{**u, "robust 1-s": d["robust 1-s"], "MLPerf 1-s": d["MLPerf 1-s"]} for u, d in zip(up, down, strict=True)]
                cells = [_cell([r[rule] for r in rows], min) for rule in RULES]
                gap = np.median([r["robust"] - r["MLPerf"] for r in rows])
                gap_one = np.median([r["robust 1-s"] - r["MLPerf 1-s"] for r in rows])
                print(f"  {family:<10} {n:>3} {m:>2} {k:>2}   " + " ".join(f"{c:>13}" for c in cells) + f"   {gap:+.3f}  {gap_one:+.3f}", flush=True)


def ties(flat: list[dict[str, Any]]) -> None:
    rng = random.Random(5)
    cells = [(n, m) for n in (2, 3, 5, 10, 20) for m in (1, 2, 3, 5)]
    fails = 0
    for _ in range(300):
        value = rng.random()
        for n, m in cells:
            for test, side in (("difference", "both"), ("seeds", "both"), ("robust", "both"), ("robust", "higher"), ("robust", "lower")):
                if m == 1:
                    passed = prediction_interval([value] * n, ALPHA, 0.0, test, side).contains(value)  # type: ignore[arg-type]
                else:
                    passed = difference_test([value] * n, [value] * m, ALPHA, 0.0, test, side).passed  # type: ignore[arg-type]
                fails += not passed
    real = sum(
        not difference_test([float(v) for v in e["values"]][:n], [float(e["values"][0])] * m, ALPHA, 0.0, test).passed
        for e in flat
        for n, m in cells
        if m > 1 and n <= len(e["values"])
        for test in ("difference", "seeds", "robust")
    )
    print(
        f"\nTies: 300 random values in (0, 1), n identical reference and m identical rebuild seeds, {len(cells)} (n, m), "
        f"difference, seeds, robust (two- and one-sided): {fails} fail"
    )
    print(f"      {len(flat)} real sets whose runs all took the same epochs, rebuilt identically: {real} fail")


def honest_power(drills: int, rng: np.random.Generator) -> None:
    """Over simulated records (n normal reference seeds each), the share whose declared shift — the
    smallest one m rebuild seeds catch at 80 %, as init writes it — is really caught at 80 %: with
    the plug-in power (the reference's s taken as σ) and with the assured power. The rule's true
    80 % shift at σ = 1 (the band at m = 1, the rank-sum test from m = 3) is found by bisection on
    one set of draws (the rebuild's moved by the shift: common random numbers, so the power is
    monotone in it); a record reaches its stated power when its declared shift is at least that."""
    records = 200_000
    print("\nStated power over records: the share whose declared shift (the smallest m rebuild seeds catch at 80 %, as init writes it) is caught at 80 %")
    print(
        f"  {'n':>3} {'m':>2}   {'plug-in':>8} {'assured':>8}   "
        f"(test: robust; {records:,} records; the rule's true 80 % shift by bisection on {drills:,} drills)"
    )
    for n, m in ((5, 1), (10, 1), (20, 1), (5, 3), (10, 3), (20, 3), (10, 5)):
        plug = minimum_detectable_shift(n, m, 1.0, ALPHA, 0.8, 0.0, "robust")
        sure = minimum_detectable_shift(n, m, assured_sigma(n, 1.0, 0.8), ALPHA, 0.8, 0.0, "robust")
        x, z = rng.normal(0.0, 1.0, (drills, n)), rng.normal(0.0, 1.0, (drills, m))
        low, high = 0.0, 8.0
        while high - low > 1e-4:
            middle = (low + high) / 2
            low, high = (low, middle) if robust_fails(x, z + middle, 0.0)[0].mean() >= 0.8 else (middle, high)
        spreads = rng.normal(0.0, 1.0, (records, n)).std(1, ddof=1)
        print(f"  {n:>3} {m:>2}   {(spreads * plug >= high).mean():>8.3f} {(spreads * sure >= high).mean():>8.3f}   (true 80 % shift {high:.3f} sd)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--half", choices=("report", "tune", "all"), default="report", help="which half of the corpus the tables are of")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sets, flat = load_sets()
    if args.half != "all":
        sets = [s for s in sets if s.half in (args.half, "both")]
    counts = {f: sum(1 for s in sets if s.family == f) for f in FAMILIES}
    where = CORPUS.relative_to(Path.cwd()) if CORPUS.is_relative_to(Path.cwd()) else CORPUS
    print(f"Corpus: {where}, {args.half} half: " + ", ".join(f"{f} {c}" for f, c in counts.items()))
    same, total = agreement(sets, rng)
    print(f"Agreement of the vectorised rules with reprogate's own functions: {same}/{total} drills\n")
    false_fail_table(sets, args.drills, rng)
    power_table(sets, max(200, args.drills // 2), rng)
    ties(flat)
    honest_power(max(20_000, 20 * args.drills), rng)


if __name__ == "__main__":
    main()
