#!/usr/bin/env python
"""Benchmark: do `molp2s estimate`'s intervals cover every metric, near the bounds too?

`bench_adaptive.py` measures PGR, the headline figure, in the middle of its range. A leaderboard
row has every metric, and some of them live at a bound: a strong model's source and P0 accuracy
near 100%, a ceiling model's RM near 0 pp, its "other" cf answers near 0%, a chance-level model's
persist near 0%. There a sample of families often holds no failure at all; a t interval around a
zero standard error is then a point, and covers the full-benchmark value only when that value is
exactly the bound.

Each held-out model (``--models``; default all) of each data set (``bench_adaptive``'s: the embedded
data's simulated models, ``disagree`` with its ceiling and chance-level models and unequal cohorts,
``agree``) is planned at each budget with its own plan seeds, as in ``bench_adaptive``, and every
metric is estimated. Printed per data set, metric and budget: the runs (held-out models × seeds ×
channels), the coverage of the 95% intervals of the full-benchmark value, the share of intervals
that are a single point, and the mean half-width; then the same for the cells whose full value
lies near a bound (a rate under 5% or over 95%, RM where either of its rates does).

    .venv/bin/python benchmarks/bench_estimate_metrics.py [--seeds 10] [--data disagree,agree,default]
        [--budgets 0.10,0.15,0.30] [--models ceiling,chance] [--out benchmarks/results/estimate_metrics.csv]

Rows are appended to ``--out`` as each (data, model, budget, seed) finishes and skipped when already
there, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_adaptive
import polars as pl

from molp2s_stats import performance
from molp2s_stats.glossary import METRICS
from molp2s_stats.stats import metrics, subsample

ESTIMATED = tuple(m for m in METRICS if m != "random_baseline")  # the baseline needs no answers
SCHEMA = {
    "data": pl.String,
    "held_out": pl.String,
    "budget": pl.Float64,
    "seed": pl.Int64,
    "channel": pl.String,
    "metric": pl.String,
    "truth": pl.Float64,
    "near_bound": pl.Boolean,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
}
BOUND = 5.0  # pp from 0 or 100: "near a bound"


def truths(outcomes: pl.DataFrame) -> dict[tuple[str, str, str], tuple[float, bool]]:
    """Per (model, channel, metric): the full-benchmark value (% or pp) and whether it lies near a bound."""
    full = metrics.compute_metrics(outcomes, draws=0, metrics=ESTIMATED)
    value = {(m, c, k): e for m, c, k, e in full.select("model", "channel", "metric", "estimate").iter_rows()}

    def near(rate: float | None) -> bool:
        return rate is not None and (rate < BOUND or rate > 100 - BOUND)

    out = {}
    for (model, channel, metric), estimate in value.items():
        if metric in subsample.DIFFERENCES:
            close = any(near(value.get((model, channel, part))) for part in subsample.DIFFERENCES[metric])
        else:
            close = near(estimate)
        out[(model, channel, metric)] = (estimate, close)
    return out


def run(outcomes: pl.DataFrame, held: str, budget: float, seed: int, known, truth: dict) -> list[tuple]:
    complete = sorted(m for m in outcomes["model"].unique() if m != held)
    channels = outcomes["channel"].unique(maintain_order=True).to_list()
    others = outcomes.filter(pl.col("model") != held)
    members = subsample.universe(others, channels)
    n = max(2, round(budget * len(members)))
    plan = subsample.make_plan(
        others, models=complete, channels=channels, families=n, seed=bench_adaptive.plan_seed(seed, held), known=known
    )
    chosen = set(plan.filter("selected")["family_id"])
    seen = outcomes.filter((pl.col("model") != held) | pl.col("family_id").is_in(chosen))
    estimate = subsample.estimate_model(seen, plan, model=held, complete=complete, channels=channels, metrics=ESTIMATED)
    rows = []
    for row in estimate.iter_rows(named=True):
        value, close = truth.get((held, row["channel"], row["metric"]), (None, False))
        rows.append(
            (
                held,
                budget,
                seed,
                row["channel"],
                row["metric"],
                value,
                close,
                row["estimate"],
                row["conf_low"],
                row["conf_high"],
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--data", default="disagree,agree,default")
    parser.add_argument("--budgets", default="0.10,0.15,0.30")
    parser.add_argument("--models", default="", help="comma-separated held-out models (default: every model)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/estimate_metrics.csv"))
    args = parser.parse_args(argv)
    if args.out:
        performance.record(args.out, __file__, argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    done = pl.read_csv(args.out, schema=SCHEMA) if args.out.exists() else pl.DataFrame(schema=SCHEMA)
    keys = set(done.select("data", "held_out", "budget", "seed").iter_rows())
    makers = {
        "default": bench_adaptive.default_outcomes,
        "disagree": bench_adaptive.disagreeing_outcomes,
        "agree": bench_adaptive.agreeing_outcomes,
    }
    for name in args.data.split(","):
        outcomes = makers[name]()
        truth = truths(outcomes)
        models = sorted(outcomes["model"].unique())
        held_out = [m for m in args.models.split(",") if m in models] if args.models else models
        for held in held_out:
            complete = [m for m in models if m != held]
            others = outcomes.filter(pl.col("model") != held)
            known = None
            for budget in budgets:
                for seed in range(args.seeds):
                    if (name, held, budget, seed) in keys:
                        continue
                    known = known or subsample.predictability(
                        others, complete, others["channel"].unique(maintain_order=True).to_list()
                    )
                    started = time.perf_counter()
                    frame = pl.DataFrame(
                        [(name, *r) for r in run(outcomes, held, budget, seed, known, truth)],
                        schema=SCHEMA,
                        orient="row",
                    )
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.out, "a", encoding="utf-8") as handle:  # 4 decimals of pp, as bench_adaptive
                        handle.write(
                            frame.with_columns(pl.col(pl.Float64).round(4)).write_csv(include_header=handle.tell() == 0)
                        )
                    print(
                        f"{name} {held} {budget:.0%} seed {seed}: {time.perf_counter() - started:.1f} s",
                        file=sys.stderr,
                    )
    results = pl.read_csv(args.out, schema=SCHEMA).filter(pl.col("data").is_in(args.data.split(",")))
    pl.Config.set_tbl_rows(300)
    pl.Config.set_tbl_cols(20)
    pl.Config.set_tbl_width_chars(200)
    print(
        "every cell: coverage of the full-benchmark value by the 95% intervals (%), point intervals (%), "
        "mean half-width (pp or %)"
    )
    print(performance.estimate_coverage(results).with_columns(pl.col(pl.Float64).round(2)))
    print(f"\ncells whose full value lies within {BOUND:g} of a bound (RM: where either of its rates does)")
    print(performance.estimate_coverage(results.filter("near_bound")).with_columns(pl.col(pl.Float64).round(2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
