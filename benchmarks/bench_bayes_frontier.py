#!/usr/bin/env python
"""Benchmark: does the hierarchical model stay honest for frontier models near 100%?

The frequentist intervals are checked at the bounds by ``bench_intervals.py``. This script asks
the same of the posterior, on frontier leaderboards simulated by ``bayes.synthetic`` (not the
fitted model's priors): five models of abilities 2.5, 3.0, 3.5, 4.0 and 4.0 on the logit scale
(source accuracy about 96–99.5%, counterfactual accuracy near the ceiling), two channels, 136
families, family effects of sd 0.8 (family × channel 0.3). The last two models share their
ability, so they sit at the ceiling together and differ only by their channel effects.

Each seed simulates new data and fits it with the fit's defaults (sampler seed = data seed).
Printed:

- the share of model × channel cells whose 90% HDI covers the truth, for reliance and for
  responsiveness (the cohort-averaged values the posterior estimates);
- for every ordered pair of models and channel, how often P(reliance_A > reliance_B) is at least
  0.975 (the posterior "certain" A is ahead), and how often it is so while the truth has A behind
  (a false certainty); the same for the two ceiling models alone, with their true difference;
- whether each fit passed its health gate.

    .venv/bin/python benchmarks/bench_bayes_frontier.py [--seeds 10] [--out benchmarks/results/bayes_frontier.csv]

A row per seed × cell (and per pair) is appended to ``--out`` as each fit finishes; seeds already
there are skipped, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl

from molp2s_stats import performance
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health, posterior
from molp2s_stats.bayes.synthetic import Shape, simulate_cells

FRONTIER = Shape("frontier", models=5, channels=2, families=136, ability=(2.5, 3.0, 3.5, 4.0, 4.0))
CEILING_PAIR = ("m03", "m04")
CERTAIN = 0.975
SCHEMA = {
    "seed": pl.Int64,
    "kind": pl.String,
    "model": pl.String,
    "other": pl.String,
    "channel": pl.String,
    "metric": pl.String,
    "truth": pl.Float64,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "covered": pl.Boolean,
    "probability": pl.Float64,
    "passed": pl.Boolean,
    "seconds": pl.Float64,
}


def run_seed(seed: int, shape: Shape = FRONTIER, **fit_options) -> pl.DataFrame:
    """One simulated frontier leaderboard, fitted: its coverage rows and its pair rows."""
    data, truth = simulate_cells(shape, seed)
    started = time.perf_counter()
    idata = bayes_fit.fit(data, seed=seed, loo=False, **fit_options)
    seconds = time.perf_counter() - started
    passed = bool(health.gate(idata)["passed"])
    truth_pct = truth.select("model", "channel", "metric", pl.col("truth") * 100)
    rows = []
    for metric in ("reliance", "responsiveness"):
        check = posterior.truth_check(idata, truth_pct, metric=metric, hdi_prob=0.9)
        for r in check.iter_rows(named=True):
            rows.append(
                (
                    seed,
                    "cell",
                    r["model"],
                    None,
                    r["channel"],
                    metric,
                    r["truth"],
                    r["estimate"],
                    r["conf_low"],
                    r["conf_high"],
                    r["covered"],
                    None,
                    passed,
                    seconds,
                )
            )
    known = {(m, c): v for m, c, q, v, *_ in truth.iter_rows() if q == "reliance"}
    for r in posterior.contrasts(idata, "reliance").iter_rows(named=True):
        difference = known[(r["model_a"], r["channel"])] - known[(r["model_b"], r["channel"])]
        rows.append(
            (
                seed,
                "pair",
                r["model_a"],
                r["model_b"],
                r["channel"],
                "reliance",
                difference * 100,
                None,
                None,
                None,
                None,
                r["probability"],
                passed,
                seconds,
            )
        )
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def summarise(frame: pl.DataFrame) -> None:
    fits = frame.unique("seed")
    print(f"fits: {fits.height}, passed the gate: {int(fits['passed'].sum())}, median {fits['seconds'].median():.0f} s")
    print("\n90% HDI coverage of the truth, per metric:")
    print(performance.frontier_coverage(frame))
    pairs = frame.filter(pl.col("kind") == "pair")
    certain = pairs.filter(pl.col("probability") >= CERTAIN)
    false = certain.filter(pl.col("truth") < 0)
    print(
        f"\nordered pairs × channels: {pairs.height}; P(A > B) ≥ {CERTAIN}: {certain.height}, "
        f"of which the truth has A behind: {false.height}"
    )
    ceiling = pairs.filter((pl.col("model") == CEILING_PAIR[0]) & (pl.col("other") == CEILING_PAIR[1]))
    print(
        f"\nthe two ceiling models {CEILING_PAIR}: P(reliance_A > reliance_B) per seed and channel, with the "
        "true difference (pp):"
    )
    print(
        ceiling.select(
            "seed", "channel", pl.col("truth").round(2).alias("true_difference_pp"), pl.col("probability").round(3)
        ).sort("seed", "channel")
    )
    decided = ceiling.filter((pl.col("probability") >= CERTAIN) | (pl.col("probability") <= 1 - CERTAIN))
    wrong = decided.filter((pl.col("probability") >= CERTAIN) != (pl.col("truth") > 0))
    print(f"ceiling pair called certain: {decided.height} of {ceiling.height}; in the wrong direction: {wrong.height}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--families", type=int, default=FRONTIER.families)
    parser.add_argument("--budget", type=float, default=None, help="the fit's time budget (default: the fit's)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bayes_frontier.csv")
    args = parser.parse_args(argv)
    if args.out:
        performance.record(args.out, __file__, argv)
    shape = Shape(
        FRONTIER.name,
        models=FRONTIER.models,
        channels=FRONTIER.channels,
        families=args.families,
        ability=FRONTIER.ability,
    )
    options = {} if args.budget is None else {"budget": args.budget}
    done = set(pl.read_csv(args.out, schema_overrides=SCHEMA)["seed"].to_list()) if args.out.exists() else set()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        if seed in done:
            continue
        frame = run_seed(seed, shape, **options)
        with open(args.out, "a") as handle:
            frame.write_csv(handle, include_header=handle.tell() == 0)
        print(
            f"seed {seed}: {frame['seconds'][0]:.0f} s, gate {'passed' if frame['passed'][0] else 'failed'}",
            file=sys.stderr,
            flush=True,
        )
    frame = pl.read_csv(args.out, schema_overrides=SCHEMA)
    pl.Config.set_tbl_rows(200)
    summarise(frame)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
