#!/usr/bin/env python
"""Benchmark: does a partial model's interval cover what a complete model's does, at every share answered?

A leaderboard puts a partial model's estimate beside complete models' scores. A complete model's
interval is about its score over families like the benchmark's (the family bootstrap: the cohort
one draw of them); a partial model's must be about the same thing, or a model that answered 90%
of the families looks surer than one that answered all of them, and one that answered every family
gets a single point. This script draws a population of families (a logit-normal difficulty shared
by the models, 3 tasks a family or 1–5 with ``unbalanced``), four complete models and a new one,
answers a share ``f`` of the families with the new model, and estimates its rate by the package's
estimator (`subsample.aipw_ratio`, the prediction where `regression_pays`) and interval
(`subsample.score_interval`). Truths: ``population``, the rate over new families (the expected
sums over 400,000 simulated families), and ``cohort``, the rate over every family of the drawn
benchmark (what answering the rest would have given). Rules:

- ``package``: the design's error plus the cohort's own spread (``se``), Wilson's interval on the
  effective size under a complete model's rules;
- ``design_only``: the rule before, the design's error alone (``design_se``, finite-population
  corrected), n_eff at a bound the answered families over 1 − f, a point at f = 1.

Printed per shape, families and share: the coverage (%) of each truth by each rule and the mean
width (pp); rows to ``--out`` (one per shape × families × share × rule).

    .venv/bin/python benchmarks/bench_partial_coverage.py [--replicates 400] [--seed 0]
        [--out benchmarks/results/partial_coverage.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl
from scipy import special, stats

from molp2s_stats import performance
from molp2s_stats.stats import intervals, subsample

#: the new model's logit offset from the complete models' mean, and whether tasks per family vary
SHAPES = {
    "middle": (0.0, False),
    "ceiling": (4.5, False),
    "near_zero": (-4.0, False),
    "unbalanced": (0.5, True),
}
FAMILIES = (60, 300)
SHARES = (0.1, 0.3, 0.6, 0.9, 1.0)
SPREAD = 1.5  # sd of the family difficulty on the logit scale
COMPLETE = 4


def draw_families(rng: np.random.Generator, n: int, offsets: np.ndarray, unbalanced: bool):
    """(successes (families, models), tasks (families,)) for ``n`` new families."""
    tasks = rng.integers(1, 6, n) if unbalanced else np.full(n, 3)
    difficulty = rng.normal(0, SPREAD, n)
    p = special.expit(offsets[None, :] - difficulty[:, None])
    return rng.binomial(tasks[:, None], p), tasks


def population_rate(offset: float, unbalanced: bool, rng: np.random.Generator) -> float:
    tasks = rng.integers(1, 6, 400_000) if unbalanced else np.full(400_000, 3)
    p = special.expit(offset - rng.normal(0, SPREAD, 400_000))
    return float((tasks * p).sum() / tasks.sum())


def design_only(estimate, df, n, fraction) -> tuple[float, float]:
    """The rule before: the design's standard error alone, n_eff at a bound n / (1 − f), a point at f = 1."""
    result, families = estimate
    p = min(max(result.estimate, 0.0), 1.0)
    if fraction >= 1:
        return p, p
    quantile = stats.t.ppf(0.975, max(df, 1))
    at_bound = n / (1 - fraction)
    se = result.design_se
    n_eff = p * (1 - p) / se**2 if se > 1e-9 and 1e-9 < p < 1 - 1e-9 else at_bound
    low, high = intervals.wilson(np.array([p]), np.array([n_eff]), quantile)
    at_one, _ = intervals.wilson(np.array([1.0]), np.array([at_bound]), quantile)
    _, at_zero = intervals.wilson(np.array([0.0]), np.array([at_bound]), quantile)
    return float(min(low[0], at_one[0])), float(max(high[0], at_zero[0]))


def one_replicate(rng, shape: str, n_families: int, offsets: np.ndarray, unbalanced: bool) -> list[tuple]:
    successes, tasks = draw_families(rng, n_families, offsets, unbalanced)
    b = tasks.astype(float)
    new = successes[:, -1].astype(float)
    cohort_truth = new.sum() / b.sum()
    complete = successes[:, :-1] / b[:, None]
    predict_a = complete.mean(axis=1) * b
    pooled = complete.mean(axis=1)
    rows = []
    for fraction in SHARES:
        n = max(2, round(fraction * n_families))
        sampled = np.zeros(n_families, dtype=bool)
        sampled[rng.choice(n_families, n, replace=False)] = True
        stratum = np.zeros(n_families, dtype=int)
        regress = subsample.regression_pays(
            successes[:, :-1].astype(float), np.repeat(b[:, None], COMPLETE, axis=1), complete, n
        )
        result = subsample.aipw_ratio(
            np.where(sampled, new, 0.0), b, sampled, stratum, predict_a, None, pooled, regress
        )
        df = min(result.df, n - 1)
        w = np.where(sampled, n_families / n, 0.0)
        package = subsample.score_interval(
            result.estimate,
            result.se,
            df,
            families=float(intervals.kish_families(b[sampled][:, None])[0]),
            capacity=subsample.cohort_capacity(b, None, w, sampled),
            conf_level=0.95,
        )
        before = design_only((result, n), df, n, n / n_families)
        for rule, (low, high) in (("package", package), ("design_only", before)):
            rows.append((shape, n_families, fraction, rule, result.estimate, low, high, cohort_truth))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--families", default=",".join(map(str, FAMILIES)))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = []
    truths = {}
    for shape in args.shapes.split(","):
        offset, unbalanced = SHAPES[shape]
        rng = np.random.default_rng([args.seed, list(SHAPES).index(shape)])
        complete = rng.normal(0, 0.5, COMPLETE)
        offsets = np.append(complete, complete.mean() + offset)
        truths[shape] = population_rate(offsets[-1], unbalanced, rng)
        for n_families in map(int, args.families.split(",")):
            for _ in range(args.replicates):
                rows += one_replicate(rng, shape, n_families, offsets, unbalanced)
    frame = pl.DataFrame(
        rows,
        schema=["shape", "families", "share", "rule", "estimate", "conf_low", "conf_high", "cohort_truth"],
        orient="row",
    ).with_columns(population_truth=pl.col("shape").replace_strict(truths, return_dtype=pl.Float64))

    def covers(truth: str) -> pl.Expr:  # a rounding error's slack: the rule before's point at f = 1 is the truth
        return (pl.col("conf_low") <= pl.col(truth) + 1e-9) & (pl.col(truth) <= pl.col("conf_high") + 1e-9)

    summary = (
        frame.group_by("shape", "families", "share", "rule", maintain_order=True)
        .agg(
            replicates=pl.len(),
            population_coverage=100 * covers("population_truth").mean(),
            cohort_coverage=100 * covers("cohort_truth").mean(),
            width=100 * (pl.col("conf_high") - pl.col("conf_low")).mean(),
            points=100 * (pl.col("conf_high") == pl.col("conf_low")).mean(),
        )
        .with_columns(pl.lit(args.seed).alias("seed"))
    )
    with pl.Config(tbl_rows=200, tbl_cols=20, tbl_width_chars=160, float_precision=1, tbl_hide_dataframe_shape=True):
        print("partial-model intervals: coverage (%) of the rate over new families and of the cohort's own, by rule")
        print(summary.drop("seed"))
    package = summary.filter(pl.col("rule") == "package")
    print(
        f"package rule: population coverage {package['population_coverage'].min():.1f}–"
        f"{package['population_coverage'].max():.1f}% over shapes × families × shares; "
        f"single points {package['points'].max():.1f}%"
    )
    if args.out is not None:
        summary.write_csv(args.out)
        performance.record(args.out, Path(__file__).name, sys.argv[1:] if argv is None else argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
