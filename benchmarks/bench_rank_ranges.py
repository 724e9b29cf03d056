#!/usr/bin/env python
"""Benchmark: do the rank ranges keep their stated error rate, and what do they separate?

A leaderboard's rank ranges say which models the families tell apart, simultaneously within a
channel at 95%. This script measures, on simulated leaderboards with known truth, the share of
replicates in which **any** pair is called separated that is not (two models with the same
population rate, or the order reversed): the family-wise error, which should be at most 5%;
and the power: the share of pairs at least 5 pp apart that are separated.

Each leaderboard has M models in tied blocks: a block of tied models at the ceiling (97%), a
tied block mid-table (60%), and the rest spread between 30% and 90% in steps of at least 5 pp.
Families carry a logit-normal effect (sd 1) shared by every model, so answers are clustered
within families; each family has one task (``equal``) or 1–6 tasks (``unequal``: very unequal
family sizes). Per cell (M, F, sizes) the script draws new families each replicate and calls
the package's pair tests (`stability.pairwise_p_values`) on the family bootstrap (the same
kernels as `molp2s ranks`). Rows are appended to ``--out`` per replicate and skipped when there,
so a run resumes.

    .venv/bin/python benchmarks/bench_rank_ranges.py [--replicates 100] [--draws 1000]
        [--models 8,16,28] [--families 30,136,389] [--out benchmarks/results/rank_ranges.csv]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy import special

from molp2s_stats import performance
from molp2s_stats.stats import stability

LEVEL = 0.95
FAMILY_SD = 1.0
CEILING, MIDDLE = 0.97, 0.60


def true_rates(models: int) -> np.ndarray:
    """Population rates: a quarter of the models tied at the ceiling, a quarter tied mid-table, the
    rest spread from 30% to 90% (at least 5 pp apart, none equal to the tied blocks)."""
    tied = max(2, models // 4)
    rest = models - 2 * tied
    spread = np.linspace(0.30, 0.90, rest) if rest > 1 else np.array([0.80] * rest)
    spread = spread[np.abs(spread - MIDDLE) > 0.02]
    rates = np.concatenate([[CEILING] * tied, [MIDDLE] * (models - tied - len(spread)), spread])
    return rates[:models]


def logit_shift(rate: float, grid: np.ndarray) -> float:
    """The model effect whose population rate (averaged over the family effect) is ``rate``."""
    low, high = -12.0, 12.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if special.expit(mid + grid).mean() < rate else (low, mid)
    return (low + high) / 2


def simulate(rates: np.ndarray, families: int, sizes: str, rng: np.random.Generator, grid: np.ndarray):
    shifts = np.array([logit_shift(r, grid) for r in rates])
    effect = rng.normal(0.0, FAMILY_SD, families)
    tasks = np.ones(families) if sizes == "equal" else rng.integers(1, 7, families).astype(float)
    p = special.expit(shifts[None, :] + effect[:, None])
    a = rng.binomial(tasks[:, None].astype(int), p).astype(float)
    return a, np.repeat(tasks[:, None], len(rates), axis=1)


def one_replicate(models: int, families: int, sizes: str, replicate: int, draws: int, grid: np.ndarray) -> dict:
    rng = np.random.default_rng([models, families, sizes == "unequal", replicate])
    rates = true_rates(models)
    a, b = simulate(rates, families, sizes, rng, grid)
    weights = rng.multinomial(families, np.full(families, 1 / families), size=draws).astype(float)
    p = stability.pairwise_p_values(weights, a, b)
    estimates = a.sum(axis=0) / b.sum(axis=0)
    separated = (p < 1 - LEVEL) & (estimates[:, None] > estimates[None, :])
    truly_ahead = rates[:, None] > rates[None, :]
    false = separated & ~truly_ahead  # tied, or reversed
    apart = np.triu(np.abs(rates[:, None] - rates[None, :]) >= 0.05, 1)
    found = (separated | separated.T)[apart]
    tied_top = np.flatnonzero(rates == CEILING)
    return {
        "models": models,
        "families": families,
        "sizes": sizes,
        "replicate": replicate,
        "draws": draws,
        "any_false": bool(false.any()),
        "false_pairs": int(false.sum()),
        "pairs_apart": int(apart.sum()),
        "separated_apart": int(found.sum()),
        "top_tied_separated": bool(separated[np.ix_(tied_top, tied_top)].any()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--models", default="8,16,28")
    parser.add_argument("--families", default="30,136,389")
    parser.add_argument("--sizes", default="equal,unequal")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rank_ranges.csv"))
    args = parser.parse_args(argv)
    if argv is None:
        performance.record(args.out, __file__, sys.argv[1:])
    grid = np.random.default_rng(0).normal(0.0, FAMILY_SD, 20000)
    done = pl.read_csv(args.out) if args.out.exists() else None
    seen = set() if done is None else set(done.select("models", "families", "sizes", "replicate").iter_rows())
    started = time.perf_counter()
    cells = itertools.product(
        [int(m) for m in args.models.split(",")], [int(f) for f in args.families.split(",")], args.sizes.split(",")
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for models, families, sizes in cells:
        for r in range(args.replicates):
            if (models, families, sizes, r) in seen:
                continue
            row = pl.DataFrame([one_replicate(models, families, sizes, r, args.draws, grid)])
            with args.out.open("a") as out:  # a replicate at a time: an interrupted run loses at most one
                row.write_csv(out, include_header=not out.tell())
    table = performance.rank_range_errors(pl.read_csv(args.out))
    print(f"rank ranges at {LEVEL:.0%}, simultaneous within a channel ({time.perf_counter() - started:.0f} s)")
    print("any false separation (target <= 5%, with its 95% interval) and power on pairs >= 5 pp apart:")
    for row in table.iter_rows(named=True):
        flag = "  HIGH" if row["any_false_low"] > 5.0 else ""
        print(
            f"  M={row['models']:>2} F={row['families']:>3} {row['sizes']:<7} any false {row['any_false']:5.1f}% "
            f"[{row['any_false_low']:.1f}, {row['any_false_high']:.1f}]  power {row['power']:5.1f}%  "
            f"({row['replicates']} replicates){flag}"
        )
    print(f"worst cell: any false separation {table['any_false'].max():.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
