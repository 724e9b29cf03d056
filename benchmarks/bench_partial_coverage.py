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
(`subsample.score_interval`). Two shapes leave the simple random sample of a rate with known
denominators: ``stratified`` samples the harder half of the families (by the complete models) at
1.5 f and the easier at 0.5 f, and ``unknown_b`` estimates a CFR-like ratio whose denominator
depends on the model's own answers (of 3 cf tasks, those whose source it got right; the numerator
the ones it then followed), so that the denominator is predicted too. Truths: ``population``, the rate over new families (the expected
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

#: the new model's logit offset from the complete models' mean, whether tasks per family vary, and the design
SHAPES = {
    "middle": (0.0, False, "simple"),
    "ceiling": (4.5, False, "simple"),
    "near_zero": (-4.0, False, "simple"),
    "unbalanced": (0.5, True, "simple"),
    "stratified": (0.5, True, "stratified"),
    "unknown_b": (1.0, False, "unknown_b"),
}
FAMILIES = (60, 300)
SHARES = (0.1, 0.3, 0.6, 0.9, 1.0)
SPREAD = 1.5  # sd of the family difficulty on the logit scale
COMPLETE = 4


def draw_families(rng: np.random.Generator, n: int, offsets: np.ndarray, unbalanced: bool, design: str):
    """(a, b) per family and model (families × models) for ``n`` new families: successes of the family's
    tasks, or for ``unknown_b`` the followed cf answers of the right sources."""
    tasks = rng.integers(1, 6, n) if unbalanced else np.full(n, 3)
    difficulty = rng.normal(0, SPREAD, n)
    p = special.expit(offsets[None, :] - difficulty[:, None])
    successes = rng.binomial(tasks[:, None], p)
    if design == "unknown_b":
        return rng.binomial(successes, follows(difficulty)[:, None]).astype(float), successes.astype(float)
    return successes.astype(float), np.repeat(tasks[:, None], len(offsets), axis=1).astype(float)


def draw_sample(rng, pooled: np.ndarray, fraction: float, design: str) -> tuple[np.ndarray, np.ndarray]:
    """(answered, stratum) for one share: a simple random sample, or, ``stratified``, the harder half of the
    families (by the complete models) at 1.5 × the share and the easier at 0.5 × (at least 2 a stratum)."""
    n_families = len(pooled)
    stratum = (pooled < np.median(pooled)).astype(int) if design == "stratified" else np.zeros(n_families, dtype=int)
    scale = {0: 0.5, 1: 1.5} if design == "stratified" else {0: 1.0}
    sampled = np.zeros(n_families, dtype=bool)
    for label, factor in scale.items():
        members = np.flatnonzero(stratum == label)
        take = min(len(members), max(2, round(min(1.0, fraction * factor) * len(members))))
        sampled[rng.choice(members, take, replace=False)] = True
    return sampled, stratum


def follows(difficulty: np.ndarray) -> np.ndarray:
    """``unknown_b``: the chance that a cf answer follows the counterfactual, given a right source: higher on
    the families the models read well."""
    return special.expit(0.5 - 0.5 * difficulty)


def population_rate(offset: float, unbalanced: bool, design: str, rng: np.random.Generator) -> float:
    tasks = rng.integers(1, 6, 400_000) if unbalanced else np.full(400_000, 3)
    difficulty = rng.normal(0, SPREAD, 400_000)
    p = special.expit(offset - difficulty)
    if design == "unknown_b":  # E[a] / E[b] with b ~ Bin(m, p) right sources and a | b ~ Bin(b, q)
        return float((tasks * p * follows(difficulty)).sum() / (tasks * p).sum())
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


def one_replicate(rng, shape: str, n_families: int, offsets: np.ndarray, unbalanced: bool, design: str) -> list[tuple]:
    a_all, b_all = draw_families(rng, n_families, offsets, unbalanced, design)
    a, b = a_all[:, -1], b_all[:, -1]
    known = design != "unknown_b"
    cohort_truth = a.sum() / b.sum()
    complete_a, complete_b = a_all[:, :-1], b_all[:, :-1]
    # the complete models' mean share of the family (0.5 where none has a denominator there)
    right = (complete_b > 0).sum(axis=1)
    shares = np.where(complete_b > 0, complete_a / np.where(complete_b > 0, complete_b, 1), 0.0).sum(axis=1)
    pooled = np.where(right > 0, shares / np.maximum(right, 1), 0.5)
    pooled_matrix = np.repeat(pooled[:, None], COMPLETE, axis=1)
    rows = []
    for fraction in SHARES:
        sampled, stratum = draw_sample(rng, pooled, fraction, design)
        n = int(sampled.sum())
        regress = subsample.regression_pays(complete_a, complete_b, pooled_matrix, n, known)
        b_use = b if known else np.where(sampled, b, 0.0)
        result = subsample.aipw_ratio(
            np.where(sampled, a, 0.0),
            b_use,
            sampled,
            stratum,
            complete_a.mean(axis=1),
            None if known else complete_b.mean(axis=1),
            pooled,
            regress,
        )
        counted = sampled & (b_use > 0)
        df = min(result.df, int(counted.sum()) - 1)
        sizes = np.bincount(stratum)
        w = np.where(sampled, (sizes / np.maximum(np.bincount(stratum, weights=sampled), 1))[stratum], 0.0)
        package = subsample.score_interval(
            result.estimate,
            result.se,
            df,
            families=float(intervals.kish_families(b_use[counted][:, None])[0]),
            capacity=subsample.cohort_capacity(b_use, None, w, counted),
            conf_level=0.95,
        )
        before = design_only((result, n), df, int(counted.sum()), n / n_families)
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
        offset, unbalanced, design = SHAPES[shape]
        rng = np.random.default_rng([args.seed, list(SHAPES).index(shape)])
        complete = rng.normal(0, 0.5, COMPLETE)
        offsets = np.append(complete, complete.mean() + offset)
        truths[shape] = population_rate(offsets[-1], unbalanced, design, rng)
        for n_families in map(int, args.families.split(",")):
            for _ in range(args.replicates):
                rows += one_replicate(rng, shape, n_families, offsets, unbalanced, design)
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
