#!/usr/bin/env python
"""Benchmark: ranking stability at paper size (issue target: ≤ 5 s on 2 cores).

7 models × 12 channels × 136 families of per-family outcomes (random, seeded), then
``stability.ranking_stability`` for every channel with 5 sizes × 1,000 draws, and the
same for the macro mean; and the 2,000-draw rank intervals. Medians of 3 runs.

    .venv/bin/python benchmarks/bench_stability.py
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import polars as pl

from molp2s_stats.stats import stability

MODELS, CHANNELS, FAMILIES = 7, 12, 136


def outcomes(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = MODELS * CHANNELS * FAMILIES
    skill = np.repeat(rng.uniform(0.3, 0.8, MODELS), CHANNELS * FAMILIES)
    return pl.DataFrame(
        {
            "model": np.repeat([f"m{i}" for i in range(MODELS)], CHANNELS * FAMILIES),
            "channel": np.tile(np.repeat([f"c{j:02d}" for j in range(CHANNELS)], FAMILIES), MODELS),
            "family_id": np.tile([f"F{k:03d}" for k in range(FAMILIES)], MODELS * CHANNELS),
            "y_p0": (rng.uniform(size=n) < skill * 0.6).astype(float),
            "y_source": (rng.uniform(size=n) < skill).astype(float),
            "y_shuffled": (rng.uniform(size=n) < skill * 0.7).astype(float),
            "cf_tasks": np.full(n, 3),
            "cf_correct": rng.binomial(3, skill).astype(float),
            "n_candidates": np.full(n, 4),
        }
    ).with_columns(
        (pl.col("cf_correct") / 3).alias("cf_flip"),
        (1 - pl.col("cf_correct") / 3).alias("cf_persist"),
        pl.lit(0.0).alias("cf_other"),
    )


def median_seconds(run, repeats: int = 3) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args(argv).repeats
    frame = outcomes()
    channels = sorted(frame["channel"].unique().to_list())
    models = sorted(frame["model"].unique().to_list())
    sizes = (25, 50, 75, 100, 125)
    per_channel, t1 = median_seconds(
        lambda: stability.ranking_stability(
            frame, score="reliance_margin", channels=channels, models=models, sizes=sizes, draws=1000, seed=1
        ),
        repeats,
    )
    macro, t2 = median_seconds(
        lambda: stability.ranking_stability(
            frame, score="cfr", channels=channels, models=models, macro=True, sizes=sizes, draws=1000, seed=1
        ),
        repeats,
    )
    ranks, t3 = median_seconds(
        lambda: stability.rank_intervals(frame, score="pgr", channels=channels, models=models, draws=2000, seed=1),
        repeats,
    )
    print(f"paper size: {MODELS} models x {CHANNELS} channels x {FAMILIES} families; medians of 3")
    print(
        f"  stability, every channel, 5 sizes x 1000 draws: {per_channel:.2f} s  {[round(t, 2) for t in t1]}"
        f"  target <= 5 s: {'pass' if per_channel <= 5 else 'FAIL'}"
    )
    print(f"  stability, macro mean, 5 sizes x 1000 draws:    {macro:.2f} s  {[round(t, 2) for t in t2]}")
    print(f"  rank intervals, every channel, 2000 draws:      {ranks:.2f} s  {[round(t, 2) for t in t3]}")
    return 0 if per_channel <= 5 else 1


if __name__ == "__main__":
    sys.exit(main())
