"""Calibration of the metric verdict by simulation (a benchmark, not a test): the share of
simulated drills each rule fails, on seed noise shaped as real training runs produce it.

Seed distributions (reference and rebuild drawn from the same one: every failure is false):
  - normal:     N(2.4, 0.02), a validation loss
  - quantised:  a convergence epoch, N(40, 3) rounded to an evaluation grid of 5 epochs (grid > sd);
                reprogate is given resolution = 5, as `init` derives it from the grid
  - skewed:     lognormal (log-sd 0.5), as epochs-to-target are
  - outliers:   N(1, 0.02) with 3 % of seeds not converging (11x the median), as real sets show
Rules:
  - reprogate:  the two-sample t on the means at alpha = 0.05 (at m = 1 the prediction interval),
                its critical value from reprogate.core.seedstats.bound
  - TOST 1 sd:  Welch TOST within a margin of one reference sd (the pre-0.3 default for m >= 2)
  - +-1 %:      the rebuild mean within 1 % of the reference mean
Then power (share of drills failed when the rebuild's mean moved by 1, 2, 3 sd) on normal noise,
next to reprogate's exact power (core/seedstats.power).

    .venv/bin/python benchmarks/calibration.py [--drills 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from scipy import stats

from reprogate.core.seedstats import bound, power

ALPHA = 0.05
Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]

DISTRIBUTIONS: dict[str, tuple[Draw, float]] = {  # name -> (draw, resolution reprogate is given)
    "normal": (lambda rng, shape: rng.normal(2.4, 0.02, shape), 0.0),
    "quantised": (lambda rng, shape: 5.0 * np.round(rng.normal(40.0, 3.0, shape) / 5.0), 5.0),
    "skewed": (lambda rng, shape: rng.lognormal(0.0, 0.5, shape), 0.0),
    "outliers": (lambda rng, shape: np.where(rng.random(shape) < 0.03, 11.0, rng.normal(1.0, 0.02, shape)), 0.0),
}


def reprogate_fail(x: np.ndarray, y: np.ndarray, resolution: float) -> np.ndarray:
    n, m = x.shape[1], y.shape[1]
    ss = ((x - x.mean(1, keepdims=True)) ** 2).sum(1) + (((y - y.mean(1, keepdims=True)) ** 2).sum(1) if m > 1 else 0.0)
    pooled = np.sqrt(ss / (n + m - 2))
    unit = bound(n, m, 1.0, ALPHA)  # t(1 - α/2, n + m - 2) * sqrt(1/n + 1/m), from reprogate's own t quantile
    return np.abs(y.mean(1) - x.mean(1)) > unit * pooled + resolution / 2


def tost_fail(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, m = x.shape[1], y.shape[1]
    if m < 2:
        return np.full(x.shape[0], np.nan)
    margin = x.std(1, ddof=1)
    vx, vy = x.var(1, ddof=1) / n, y.var(1, ddof=1) / m
    se = np.sqrt(vx + vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vx + vy) ** 2 / (vx**2 / (n - 1) + vy**2 / (m - 1))
        diff = y.mean(1) - x.mean(1)
        p = np.maximum(stats.t.sf((diff + margin) / se, df), stats.t.cdf((diff - margin) / se, df))
    return ~(p < ALPHA)


def percent_fail(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.abs(y.mean(1) - x.mean(1)) > 0.01 * np.abs(x.mean(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drills", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    band = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / args.drills)

    print(f"False fails of builds that reproduce, {args.drills:,} drills each, alpha {ALPHA} (binomial 95 % band ±{band:.3f}):")
    print(f"  {'distribution':<12} {'n':>3} {'m':>3} {'reprogate':>10} {'TOST 1 sd':>10} {'±1 %':>7}")
    for name, (draw, resolution) in DISTRIBUTIONS.items():
        for n in (5, 10, 20):
            for m in (1, 3, 5):
                x, y = draw(rng, (args.drills, n)), draw(rng, (args.drills, m))
                tost = tost_fail(x, y).mean()
                print(
                    f"  {name:<12} {n:>3} {m:>3} {reprogate_fail(x, y, resolution).mean():>10.3f} "
                    f"{'-' if np.isnan(tost) else f'{tost:.3f}':>10} {percent_fail(x, y).mean():>7.3f}"
                )

    print("\nPower on normal noise (share of drills failed when the rebuild's mean moved), simulated / exact:")
    print(f"  {'n':>3} {'m':>3} " + " ".join(f"{f'{k} sd':>15}" for k in (1, 2, 3)))
    for n in (5, 20):
        for m in (1, 3, 5, 15):
            cells = []
            for k in (1, 2, 3):
                x, y = rng.normal(2.4, 0.02, (args.drills, n)), rng.normal(2.4 + 0.02 * k, 0.02, (args.drills, m))
                cells.append(f"{reprogate_fail(x, y, 0.0).mean():.3f} / {power(n, m, float(k), 1.0, ALPHA):.3f}")
            print(f"  {n:>3} {m:>3} " + " ".join(f"{c:>15}" for c in cells))


if __name__ == "__main__":
    main()
