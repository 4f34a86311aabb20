"""Calibration and power of the metric verdict on real seed sets (a benchmark, not a test).

The corpus is benchmarks/data/mlperf-rcp/seed-sets.json: every distinct set of MLPerf reference
convergence points (epochs or samples to converge, one value per seed of a real training run;
mlcommons/logging, Apache-2.0, tools/mlperf_rcp_corpus.py). A drill draws n reference seeds and
m rebuild seeds from one set's values (with replacement: the set is the seed distribution), so
every failure is a false one; for power the rebuild's draws move by k standard deviations of the
set. Each set declares the resolution `init` derives from its values (core/seedstats.grid_step).

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
  - MLPerf:     MLPerf's RCP rule (rcp_checker.py) mirrored to two sides at the same α: olympic
                means (the lowest and highest seed dropped on each side), the reference's
                population sd, Student's t at n-2 and m-2 seeds; defined from m = 3
Every decision is vectorised here with numpy; `agreement` re-decides a sample of drills with
reprogate's own functions (rebuild/stats.difference_test, prediction_interval) and counts them.
Then: ties (identical values), and whether stated power is honest (init's declared shift, caught
at 80 % by the rebuild seeds it writes, over simulated records).

    .venv/bin/python benchmarks/calibration.py [--drills 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from reprogate.core.seedstats import SHEPPARD_SHARE, assured_sigma, grid_step, minimum_detectable_shift, shape
from reprogate.rebuild.stats import difference_test, prediction_interval

ALPHA = 0.05
MIN_RUNS = 10
MIN_NORMAL_SETS = 25
NONCONVERGED = 0.03
CORPUS = Path(__file__).resolve().parent / "data" / "mlperf-rcp" / "seed-sets.json"
FALSE_FAIL_CELLS = [(n, m) for m in (1, 3, 5) for n in (5, 10, 20)]
POWER_CELLS = [(n, m) for n in (10, 20) for m in (3, 5)]
FAMILIES = ("normal", "fine", "skewed", "quantised", "non-conv.")


class SeedSet:
    def __init__(self, name: str, values: np.ndarray, family: str, draw: Callable[[np.random.Generator, tuple[int, int]], np.ndarray]) -> None:
        self.name, self.values, self.family, self.draw = name, values, family, draw
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
        sets.append(SeedSet(entry["id"], values, family, lambda rng, size, v=values: rng.choice(v, size=size)))
    for entry in list(sets):
        median = float(np.median(entry.values))

        def draw(rng: np.random.Generator, size: tuple[int, int], v: np.ndarray = entry.values, late: float = 2 * median) -> np.ndarray:
            return np.where(rng.random(size) < NONCONVERGED, late, rng.choice(v, size=size))

        sets.append(SeedSet(entry.name, entry.values, "non-conv.", draw))
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


def rank_sum_midp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """core/seedstats.rank_sum_p, row by row: the exact conditional distribution of the doubled
    mid-rank sum by the same dynamic programme."""
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
    distance = np.abs(scores[:, n:].sum(1) - centre)[:, None]
    spread = np.abs(columns - centre)
    beyond = (ways * (spread > distance)).sum(1)
    at = (ways * (spread == distance)).sum(1)
    return (beyond + at / 2) / math.comb(n + m, m)


def t_fails(x: np.ndarray, y: np.ndarray, resolution: float, widening: str) -> np.ndarray:
    n, m = x.shape[1], y.shape[1]
    squares = ((x - x.mean(1, keepdims=True)) ** 2).sum(1) + (((y - y.mean(1, keepdims=True)) ** 2).sum(1) if m > 1 else 0.0)
    variance = squares / (n + m - 2)
    if widening == "variance" and m == 1:
        variance = variance + SHEPPARD_SHARE * resolution**2 / 12
    limit = stats.t.ppf(1 - ALPHA / 2, n + m - 2) * np.sqrt(variance) * math.sqrt(1 / n + 1 / m)
    if widening == "half-step":
        limit = limit + resolution / 2
    floor = 16 * np.spacing(np.maximum(np.abs(x.mean(1)), np.abs(y.mean(1))))
    return np.abs(y.mean(1) - x.mean(1)) > limit + floor


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
            fails[ranked] = rank_sum_midp(x[ranked], y[ranked]) <= ALPHA
    return fails


def mlperf_fails(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    n, m = x.shape[1], y.shape[1]
    if m < 3:
        return None
    olympic_x, olympic_y = np.sort(x, 1)[:, 1:-1].mean(1), np.sort(y, 1)[:, 1:-1].mean(1)
    limit = stats.t.ppf(1 - ALPHA / 2, n + m - 6) * x.std(1) * math.sqrt(1 / (n - 2) + 1 / (m - 2))
    return np.abs(olympic_y - olympic_x) > limit


def decide(x: np.ndarray, y: np.ndarray, resolution: float) -> dict[str, float]:
    found = {"difference": float(t_fails(x, y, resolution, "half-step").mean()), "seeds": float(seeds_fails(x, y, resolution).mean())}
    ml = mlperf_fails(x, y)
    found["MLPerf"] = float("nan") if ml is None else float(ml.mean())
    return found


def agreement(sets: list[SeedSet], rng: np.random.Generator, per_cell: int = 4) -> tuple[int, int]:
    """Re-decide drills with reprogate's own functions: how many agree with the vectorised rules."""
    same = total = 0
    for entry in sets[:: max(1, len(sets) // 20)]:
        for n, m in FALSE_FAIL_CELLS:
            x, y = entry.draw(rng, (per_cell, n)), entry.draw(rng, (per_cell, m)) + rng.choice([0.0, 2.0 * entry.sd], size=(per_cell, 1))
            fast = {"difference": t_fails(x, y, entry.resolution, "half-step"), "seeds": seeds_fails(x, y, entry.resolution)}
            for i in range(per_cell):
                reference, rebuilt = x[i].tolist(), y[i].tolist()
                for test, vector in fast.items():
                    if m == 1:
                        own = not prediction_interval(reference, ALPHA, entry.resolution, test).contains(rebuilt[0])
                    else:
                        own = not difference_test(reference, rebuilt, ALPHA, entry.resolution, test).passed
                    same += own == bool(vector[i])
                    total += 1
    return same, total


def false_fail_table(sets: list[SeedSet], drills: int, rng: np.random.Generator) -> None:
    print(f"False-fail rate of builds that reproduce, {drills:,} drills a set, α = {ALPHA}: median over sets / largest set")
    print(f"  {'family':<10} {'sets':>4} {'n':>3} {'m':>2}   {'difference':>13} {'seeds':>13} {'MLPerf (2-sided)':>17}")
    for family in FAMILIES:
        members = [s for s in sets if s.family == family]
        for n, m in FALSE_FAIL_CELLS:
            rows = [decide(s.draw(rng, (drills, n)), s.draw(rng, (drills, m)), s.resolution) for s in members]
            cells = []
            for rule in ("difference", "seeds", "MLPerf"):
                rates = [r[rule] for r in rows]
                cells.append("-" if math.isnan(rates[0]) else f"{np.median(rates):.3f} / {max(rates):.3f}")
            print(f"  {family:<10} {len(members):>4} {n:>3} {m:>2}   {cells[0]:>13} {cells[1]:>13} {cells[2]:>17}")


def power_table(sets: list[SeedSet], drills: int, rng: np.random.Generator) -> None:
    print(f"\nPower: the share of drills failed when the rebuild's mean moved by k sd of the set; median over sets / smallest set ({drills:,} drills)")
    print(f"  {'family':<10} {'n':>3} {'m':>2} {'k':>2}   {'difference':>13} {'seeds':>13} {'MLPerf (2-sided)':>17}   seeds - MLPerf")
    for family in FAMILIES[:4]:
        members = [s for s in sets if s.family == family]
        for n, m in POWER_CELLS:
            for k in (2, 3):
                rows = [decide(s.draw(rng, (drills, n)), s.draw(rng, (drills, m)) + k * s.sd, s.resolution) for s in members]
                cells = [f"{np.median([r[rule] for r in rows]):.3f} / {min(r[rule] for r in rows):.3f}" for rule in ("difference", "seeds", "MLPerf")]
                gap = np.median([r["seeds"] - r["MLPerf"] for r in rows])
                print(f"  {family:<10} {n:>3} {m:>2} {k:>2}   {cells[0]:>13} {cells[1]:>13} {cells[2]:>17}   {gap:+.3f}")


def ties(flat: list[dict[str, Any]]) -> None:
    rng = random.Random(5)
    cells = [(n, m) for n in (2, 3, 5, 10, 20) for m in (1, 2, 3, 5)]
    fails = 0
    for _ in range(300):
        value = rng.random()
        for n, m in cells:
            for test in ("difference", "seeds"):
                if m == 1:
                    passed = prediction_interval([value] * n, ALPHA, 0.0, test).contains(value)
                else:
                    passed = difference_test([value] * n, [value] * m, ALPHA, 0.0, test).passed
                fails += not passed
    real = sum(
        not difference_test([float(v) for v in e["values"]][:n], [float(e["values"][0])] * m, ALPHA, 0.0, test).passed
        for e in flat
        for n, m in cells
        if m > 1 and n <= len(e["values"])
        for test in ("difference", "seeds")
    )
    print(f"\nTies: 300 random values in (0, 1), n identical reference and m identical rebuild seeds, {len(cells)} (n, m), both tests: {fails} fail")
    print(f"      {len(flat)} real sets whose runs all took the same epochs, rebuilt identically: {real} fail")


def honest_power(drills: int, rng: np.random.Generator) -> None:
    """Over simulated records (n normal reference seeds each), the share whose declared shift — the
    smallest one m rebuild seeds catch at 80 %, as init writes it for m = 3 — is really caught at
    80 %: with the plug-in power (the reference's s taken as σ) and with the assured power."""
    print("\nStated power over records: the share whose declared shift (the smallest m rebuild seeds catch at 80 %, as init writes it) is caught at 80 %")
    print(f"  {'n':>3} {'m':>2}   {'plug-in':>8} {'assured':>8}   (test: seeds; 2,000 records, the rule's true power by {drills:,} drills a shift)")
    for n, m in ((5, 1), (10, 1), (20, 1), (5, 3), (10, 3), (20, 3), (10, 5)):
        plug = minimum_detectable_shift(n, m, 1.0, ALPHA, 0.8, 0.0, "seeds")
        sure = minimum_detectable_shift(n, m, assured_sigma(n, 1.0, 0.8), ALPHA, 0.8, 0.0, "seeds")
        records = rng.normal(0.0, 1.0, (2000, n)).std(1, ddof=1)
        grid = np.linspace(0.0, 6.0, 25)
        curve = []
        for shift in grid:  # the rule's true power at σ = 1, by simulation (the rank-sum test from m = 3)
            x, y = rng.normal(0.0, 1.0, (drills, n)), rng.normal(shift, 1.0, (drills, m))
            curve.append(seeds_fails(x, y, 0.0).mean())
        curve_arr = np.maximum.accumulate(np.array(curve))

        def true_power(shifts: np.ndarray, curve_arr: np.ndarray = curve_arr, grid: np.ndarray = grid) -> np.ndarray:
            return np.interp(shifts, grid, curve_arr)

        print(f"  {n:>3} {m:>2}   {(true_power(records * plug) >= 0.8).mean():>8.3f} {(true_power(records * sure) >= 0.8).mean():>8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sets, flat = load_sets()
    counts = {f: sum(1 for s in sets if s.family == f) for f in FAMILIES}
    print(f"Corpus: {CORPUS.relative_to(Path.cwd()) if CORPUS.is_relative_to(Path.cwd()) else CORPUS}: " + ", ".join(f"{f} {c}" for f, c in counts.items()))
    same, total = agreement(sets, rng)
    print(f"Agreement of the vectorised rules with reprogate's own functions: {same}/{total} drills\n")
    false_fail_table(sets, args.drills, rng)
    power_table(sets, max(200, args.drills // 2), rng)
    ties(flat)
    honest_power(max(2000, args.drills), rng)


if __name__ == "__main__":
    main()
