#!/usr/bin/env python
"""Benchmark: do the verdicts keep their error rates, equivalence at its margin included?

A verdict says of a paired difference ahead, behind, equivalent within ±margin or undecided. Its
promises, each at 5%: a true difference of 0 is called ahead or behind in at most 5% of studies; a
true difference of exactly ±margin (the edge of equivalence: not equivalent) is called equivalent in
at most 5%. This script simulates pairs of models with known population rates on the same families
and measures both, with the power to call a true difference of 0 equivalent. (At 97% the +5 pp side
has no model and is left out: that cell's edge is −5 pp alone.)

Families carry a logit-normal effect (sd 1) shared by both models, so their answers are correlated
and clustered; each family has one task (``equal``) or 1–6 (``unequal``). Model A's population
rate is 60% (mid-range) or 97% (at the ceiling); model B's is A's plus the true difference: 0 or
±margin, for margins of 2 and 5 pp. Each replicate draws new families and makes the verdict as
`molp2s transitions` does (`resample.bootstrap_difference_levels` at 95% and 90%, then
`compare.verdicts`). Rows are appended to ``--out`` a replicate at a time and skipped when there,
so a run resumes.

    .venv/bin/python benchmarks/bench_equivalence.py [--replicates 400] [--draws 1000]
        [--families 30,136,389] [--out benchmarks/results/equivalence.csv]
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
from molp2s_stats.stats import compare, resample

LEVEL = 0.95
FAMILY_SD = 1.0
BASES = (0.60, 0.97)
MARGINS = (0.02, 0.05)


def logit_shift(rate: float, grid: np.ndarray) -> float:
    """The logit whose population rate (averaged over the family effect) is ``rate``."""
    low, high = -12.0, 12.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if special.expit(mid + grid).mean() < rate else (low, mid)
    return (low + high) / 2


def one_replicate(families, sizes, base, margin, truth, replicate, draws, grid) -> dict:
    """One simulated study of the pair: its verdict. ``truth``: -1, 0 or +1 margins of difference."""
    rng = np.random.default_rng(
        [families, sizes == "unequal", round(base * 100), round(margin * 100), truth + 1, replicate]
    )
    shift_a, shift_b = logit_shift(base, grid), logit_shift(base + truth * margin, grid)
    effect = rng.normal(0.0, FAMILY_SD, families)
    tasks = np.ones(families, dtype=int) if sizes == "equal" else rng.integers(1, 7, families)
    index = np.repeat(np.arange(families), tasks)
    a = rng.random(index.size) < special.expit(shift_a + effect[index])
    b = rng.random(index.size) < special.expit(shift_b + effect[index])
    gain = np.bincount(index, weights=(~a & b), minlength=families)[:, None]
    loss = np.bincount(index, weights=(a & ~b), minlength=families)[:, None]
    found, _, _ = resample.bootstrap_difference_levels(
        gain, loss, tasks.astype(float)[:, None], levels=(LEVEL, 2 * LEVEL - 1), draws=draws, seed=replicate, key="pair"
    )
    (low, high, method), (tost_low, tost_high, _) = found
    verdict = compare.verdicts(low, high, tost_low, tost_high, margin)[0]
    return {
        "families": families,
        "sizes": sizes,
        "base": base,
        "margin": margin,
        "truth": truth,
        "replicate": replicate,
        "draws": draws,
        "verdict": verdict,
        "method": str(method[0]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--families", default="30,136,389")
    parser.add_argument("--sizes", default="equal,unequal")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/equivalence.csv"))
    args = parser.parse_args(argv)
    if argv is None:
        performance.record(args.out, __file__, sys.argv[1:])
    grid = np.random.default_rng(0).normal(0.0, FAMILY_SD, 20000)
    done = pl.read_csv(args.out) if args.out.exists() else None
    key = ["families", "sizes", "base", "margin", "truth", "replicate"]
    seen = set() if done is None else set(done.select(key).iter_rows())
    started = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    cells = itertools.product(
        [int(f) for f in args.families.split(",")], args.sizes.split(","), BASES, MARGINS, (-1, 0, 1)
    )
    for families, sizes, base, margin, truth in cells:
        if not 0 < base + truth * margin < 1:  # 97% + 5 pp: no such model (only the −margin side there)
            continue
        rows = [
            one_replicate(families, sizes, base, margin, truth, r, args.draws, grid)
            for r in range(args.replicates)
            if (families, sizes, base, margin, truth, r) not in seen
        ]
        if rows:  # a cell at a time (a second or two): an interrupted run loses at most one
            with args.out.open("a") as out:
                pl.DataFrame(rows).write_csv(out, include_header=not out.tell())
    table = performance.verdict_errors(pl.read_csv(args.out))
    print(f"verdicts at {LEVEL:.0%} ({time.perf_counter() - started:.0f} s)")
    print("equivalent at a true difference of ±margin (target <= 5%), ahead/behind at 0 (target <= 5%), power:")
    for row in table.iter_rows(named=True):
        flag = "  HIGH" if min(row["equivalent_at_margin_low"], row["difference_at_zero_low"]) > 5.0 else ""
        print(
            f"  F={row['families']:>3} {row['sizes']:<7} base {row['base']:.0f}% margin {row['margin']:.0f} pp: "
            f"equivalent at ±margin {row['equivalent_at_margin']:4.1f}% "
            f"[{row['equivalent_at_margin_low']:.1f}, {row['equivalent_at_margin_high']:.1f}]  "
            f"ahead/behind at 0 {row['difference_at_zero']:4.1f}%  "
            f"equivalent at 0 {row['equivalent_at_zero']:5.1f}%  ({row['replicates']} a truth){flag}"
        )
    print(
        f"worst cell: equivalent at ±margin {table['equivalent_at_margin'].max():.1f}%, "
        f"ahead/behind at 0 {table['difference_at_zero'].max():.1f}%"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
