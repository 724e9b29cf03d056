#!/usr/bin/env python
"""Benchmark: simulation-based calibration of the fit, at a small size.

Each replicate draws the parameters from the model's priors, answers from the model,
fits them with the fit's sampler and model (one attempt of 2 chains × (300 + 400) draws,
to keep a replicate to seconds; whether it passed the gate is recorded) and ranks each true quantity among 99 thinned posterior draws
(``bayes.calibration``). The study: 2 models × 2 channels × 24 families (the cells of
``bayes.synthetic``'s shape, K = 4, two cf tasks a family and channel), so a
replicate ranks 8 reliance and 8 cf-accuracy cells and the two family spreads.

Printed: per quantity, a χ² test of uniform ranks over 10 bins, and how many
replicates passed the health gate. Saved: every rank (``--out``, a CSV appended as
replicates finish, so an interrupted run resumes) and the rank histograms
(``--figure``, SVG).

    .venv/bin/python benchmarks/bench_sbc.py [--replicates 200] [--seed 0]
        [--out benchmarks/results/sbc_ranks.csv] [--figure benchmarks/results/sbc_ranks.svg]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
from scipy import stats

from molp2s_stats import performance
from molp2s_stats.bayes import calibration, predictive
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.report import charts

STUDY = Shape("sbc", models=2, channels=2, families=24)


def figure(ranks: pl.DataFrame, path: Path) -> None:
    """Rank histograms per quantity, with the band 99% of uniform histograms fall in."""
    bins = 10
    frame = ranks.with_columns((pl.col("rank") * bins // (pl.col("ranked_draws") + 1)).alias("bin"))
    counts = frame.group_by("quantity", "bin").len().sort("quantity", "bin")
    per_quantity = frame.group_by("quantity").len()
    band = per_quantity.with_columns(
        pl.col("len")
        .map_elements(lambda n: float(stats.binom.ppf(0.005, n, 1 / bins)), return_dtype=pl.Float64)
        .alias("low"),
        pl.col("len")
        .map_elements(lambda n: float(stats.binom.ppf(0.995, n, 1 / bins)), return_dtype=pl.Float64)
        .alias("high"),
    )
    data = counts.join(band, on="quantity").to_pandas()
    base = alt.Chart(data)
    bars = base.mark_bar().encode(x=alt.X("bin:O", title="rank bin (of 10)"), y=alt.Y("len:Q", title="ranks"))
    low = base.mark_rule(strokeDash=[3, 3], color="#d62728").encode(y="low:Q")
    high = base.mark_rule(strokeDash=[3, 3], color="#d62728").encode(y="high:Q")
    chart = (
        alt.layer(bars, low, high)
        .properties(width=160, height=110)
        .facet(facet=alt.Facet("quantity:N", title=None), columns=4)
        .resolve_scale(y="independent")
        .properties(title="SBC rank histograms (dashed: 99% band of a uniform histogram)")
    )
    charts.save(chart, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=400, help="draws per chain of each fit")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sbc_ranks.csv"))
    parser.add_argument("--figure", type=Path, default=Path("benchmarks/results/sbc_ranks.svg"))
    args = parser.parse_args()
    if args.out:
        performance.record(args.out, __file__)
    data, _ = simulate_cells(STUDY, args.seed)
    cells = predictive.Cells.from_data(data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = pl.read_csv(args.out, schema_overrides=calibration.RANK_SCHEMA) if args.out.exists() else None
    finished = set(done.filter(pl.col("seed") == args.seed)["replicate"].to_list()) if done is not None else set()
    started = time.perf_counter()
    for number in range(args.replicates):
        if number in finished:
            continue
        ranks = calibration.replicate(cells, number, seed=args.seed, draws=args.draws, chains=args.chains, budget=0)
        with args.out.open("a") as handle:
            ranks.write_csv(handle, include_header=handle.tell() == 0)
        print(
            f"replicate {number}: {ranks['seconds'][0]:.1f} s, gate {'passed' if ranks['passed'][0] else 'missed'}",
            flush=True,
        )
    ranks = pl.read_csv(args.out, schema_overrides=calibration.RANK_SCHEMA).filter(
        (pl.col("seed") == args.seed) & (pl.col("replicate") < args.replicates)
    )
    per_replicate = ranks.unique("replicate")
    print(
        f"\n{per_replicate.height} replicates ({time.perf_counter() - started:.0f} s this run); "
        f"{per_replicate['passed'].mean():.1%} passed the health gate; median fit "
        f"{np.median(per_replicate['seconds']):.1f} s"
    )
    table = performance.sbc_uniformity(ranks)
    print(f"{'quantity':<20} {'ranks':>6} {'chi2 (9 df)':>12} {'p-value':>8} {'fullest / emptiest bin':>24}")
    for row in table.iter_rows(named=True):
        print(
            f"{row['quantity']:<20} {row['ranks']:>6} {row['chi2']:>12.1f} {row['p_value']:>8.3f} "
            f"{row['bin_max']:>13} / {row['bin_min']}"
        )
    figure(ranks, args.figure)
    print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
