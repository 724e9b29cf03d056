#!/usr/bin/env python
"""Benchmark: do the metric intervals cover the population value over the whole range, 0% and 100% included?

A leaderboard's top rows are models near the ceiling; there the family bootstrap's percentile
interval is often a single point (a model right on every family gets [100, 100]). This script
measures, for every metric the package prints, the coverage of the 95% interval of the
**population** value (over new families, not the cohort's own value) and its mean width, over a grid:

- truth: every condition's rate at 0%, 0.5%, 3%, 50%, 90%, 97%, 99.5% or 100%;
- families per cohort: 10, 20, 30, 136, 389 (each replicate draws new families);
- family spread: a logit-normal family effect of sd 0, 1 or 1.5 shared by a model's conditions
  (with a condition × family deviation of half that sd), or ``mix``: a two-point mixture in
  which a share of families is impossible (right never) and the rest share one rate: a
  simulator unlike the hierarchical model's logit-normal form;
- one or three samples per task (a task's samples share its family's rate);

with K_f drawn from 2–6 candidates per family and K_f − 1 counterfactual tasks. Two simulated
models per cell: ``flat`` answers every condition at the truth (RM's truth 0), ``reliant`` answers
the source and counterfactual tasks at the truth and the shuffled and P0 tasks at half of it.
``net`` is a model pair's net on source tasks (reliant − flat: both at the truth, truth 0).
Truths are the ratio of the expected family sums over 400,000 simulated families' rates.

Each interval is made by the package's kernels (`molp2s_stats.stats.intervals`) from the same family
bootstrap draws, under three rules: ``percentile`` (the bootstrap alone, the package before),
``package`` (percentile in the normal regime, score/MOVER near a bound: what the package prints;
its threshold is a minority of 10 effective families), ``minority_5`` and ``minority_20`` (the same
rule at half and twice that threshold) and ``score`` (score and MOVER everywhere). Printed: coverage (%) and mean width (pp) per metric
and truth, pooled over the cells of that truth, with the lowest and highest cell; then the same
per family count; rows appended to ``--out`` per cell, skipped when there (a run resumes).

    .venv/bin/python benchmarks/bench_intervals.py [--replicates 200] [--draws 1000]
        [--out benchmarks/results/intervals.csv] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy import optimize, special

from molp2s_stats import performance
from molp2s_stats.stats import intervals, resample

TRUTHS = (0.0, 0.005, 0.03, 0.5, 0.9, 0.97, 0.995, 1.0)
FAMILIES = (10, 20, 30, 136, 389)
SPREADS = ("0", "1", "1.5", "mix")
SAMPLES = (1, 3)
# the bootstrap alone; the package's rule; score everywhere; and the package's rule at other thresholds of
# the minority (the default's neighbours, to show the choice is not a knife edge)
RULES = {
    "percentile": None,
    "package": intervals.MIN_MINORITY,
    "score": math.inf,
    "minority_5": 5.0,
    "minority_20": 20.0,
}
RATES = ("acc_p0", "acc_source", "acc_shuffled", "cf_accuracy", "pgr", "cfr", "persist", "other")
DIFFERENCES = ("reliance_margin", "net")
PERSIST_SHARE = 0.6  # of the cf answers that miss the counterfactual, the share that keep the source
SCHEMA = performance.INTERVALS_SCHEMA


# ---------------------------------------------------------------- the simulator


def _logit_rates(target: float, sd: float, shared: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Family rates expit(α + shared + deviation) with α set so that their population mean is ``target``."""
    if target in (0.0, 1.0):
        return np.full(shared.shape, target)
    effect = shared + rng.normal(0.0, sd / 2, shared.shape) if sd > 0 else shared
    if sd == 0:
        return np.full(shared.shape, target)
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    scale = math.sqrt(sd**2 + (sd / 2) ** 2)
    mean = lambda a: (special.expit(a + scale * nodes) * weights).sum() / weights.sum() - target  # noqa: E731
    alpha = optimize.brentq(mean, -40, 40)
    return special.expit(alpha + effect)


def _mixture_rates(target: float, broken: np.ndarray) -> np.ndarray:
    """A share h = (1 − target)/2 of families is never right, the rest right at target/(1 − h)."""
    h = (1 - target) / 2
    return np.where(broken < h, 0.0, target / (1 - h)) if target > 0 else np.zeros(broken.shape)


def family_rates(shape: tuple[int, ...], truth: float, spread: str, rng: np.random.Generator) -> dict:
    """Each family's rates per model and condition, its K_f and cf choice shares."""
    k = rng.integers(2, 7, shape)
    shared = rng.normal(0.0, float(spread), shape) if spread != "mix" else None
    broken = rng.uniform(size=shape) if spread == "mix" else None
    rate = (
        (lambda t: _mixture_rates(t, broken))
        if spread == "mix"
        # noqa: E731
        else (lambda t: _logit_rates(t, float(spread), shared, rng))
    )
    out = {"k": k}
    for model, low in (("flat", 1.0), ("reliant", 0.5)):
        p = {"source": rate(truth), "cf": rate(truth), "shuffled": rate(truth * low), "none": rate(truth * low)}
        miss = 1 - p["cf"]
        p["persist"] = np.where(k > 2, PERSIST_SHARE, 1.0) * miss
        p["other"] = miss - p["persist"]
        out[model] = p
    return out


def simulate(reps: int, n: int, truth: float, spread: str, samples: int, rng: np.random.Generator) -> dict:
    """Per-family components (a_f, b_f) of every metric, shape (families, replicates), per model."""
    rates = family_rates((n, reps), truth, spread, rng)
    k = rates["k"]
    cf_draws = (k - 1) * samples
    out = {}
    answers = {}
    for model in ("flat", "reliant"):
        p = rates[model]
        y = {c: rng.binomial(samples, p[c]) / samples for c in ("source", "shuffled", "none")}
        flip = rng.binomial(cf_draws, p["cf"])
        persist = rng.binomial(
            cf_draws - flip, np.divide(p["persist"], 1 - p["cf"], out=np.zeros_like(p["cf"]), where=p["cf"] < 1)
        )
        other = cf_draws - flip - persist
        share = lambda c: c / cf_draws  # noqa: E731
        one = np.ones_like(y["source"])
        cf_tasks = (k - 1).astype(float)
        # a rate is (a, b, the independent tasks a family's share averages over); a difference (gain, loss, b)
        out[model] = {
            "acc_p0": (y["none"], one, None),
            "acc_source": (y["source"], one, None),
            "acc_shuffled": (y["shuffled"], one, None),
            "cf_accuracy": (flip / samples, cf_tasks, None),
            "pgr": (0.5 * y["source"] + 0.5 * share(flip), one, 4 * cf_tasks / (cf_tasks + 1)),
            "cfr": (y["source"] * share(flip), y["source"], cf_tasks),
            "persist": (y["source"] * share(persist), y["source"], cf_tasks),
            "other": (y["source"] * share(other), y["source"], cf_tasks),
            "reliance_margin": (y["source"] * (1 - y["shuffled"]), y["shuffled"] * (1 - y["source"]), one),
        }
        answers[model] = y["source"]
    flat, reliant = answers["flat"], answers["reliant"]
    out["pair"] = {"net": ((1 - flat) * reliant, flat * (1 - reliant), np.ones_like(flat))}
    return out


def population_values(truth: float, spread: str, rng: np.random.Generator, size: int = 400_000) -> dict:
    """Each metric's population value: the ratio of the expected family sums, over ``size`` families' rates."""
    r = family_rates((size,), truth, spread, rng)
    values = {}
    for model in ("flat", "reliant"):
        p = r[model]
        values[(model, "acc_p0")] = p["none"].mean()
        values[(model, "acc_source")] = p["source"].mean()
        values[(model, "acc_shuffled")] = p["shuffled"].mean()
        values[(model, "reliance_margin")] = p["source"].mean() - p["shuffled"].mean()
        values[(model, "cf_accuracy")] = ((r["k"] - 1) * p["cf"]).sum() / (r["k"] - 1).sum()
        values[(model, "pgr")] = (0.5 * p["source"] + 0.5 * p["cf"]).mean()
        for metric, share in (("cfr", p["cf"]), ("persist", p["persist"]), ("other", p["other"])):
            values[(model, metric)] = (p["source"] * share).sum() / p["source"].sum() if p["source"].sum() else np.nan
    values[("pair", "net")] = r["reliant"]["source"].mean() - r["flat"]["source"].mean()
    return values


# ---------------------------------------------------------------- one cell


def run_cell(truth: float, n: int, spread: str, samples: int, reps: int, draws: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng([seed, int(truth * 1e4), n, SPREADS.index(spread), samples])
    values = population_values(truth, spread, rng)
    data = simulate(reps, n, truth, spread, samples, rng)
    weights = resample.family_weights(n, draws, rng)
    rows = []
    for model, metrics in data.items():
        for metric, parts in metrics.items():
            value = values[(model, metric)]
            if metric in DIFFERENCES:
                gain, loss, b = parts
                estimate = (gain - loss).sum(axis=0) / b.sum(axis=0)
                replicates = resample.ratio_of_sums(weights, gain - loss, b)
                results = {
                    rule: intervals.difference_intervals(gain, loss, b, replicates, 0.95, min_minority=m)
                    for rule, m in RULES.items()
                    if rule != "percentile"
                }
            else:
                a, b, trials = parts
                with np.errstate(invalid="ignore", divide="ignore"):
                    estimate = a.sum(axis=0) / b.sum(axis=0)
                replicates = resample.ratio_of_sums(weights, a, b)
                results = {
                    rule: intervals.rate_intervals(a, b, replicates, 0.95, min_minority=m, trials=trials)
                    for rule, m in RULES.items()
                    if rule != "percentile"
                }
            low, high, _ = intervals.percentile_interval(replicates, 0.95)  # the package before: the bootstrap alone
            results["percentile"] = (low, high, np.full(len(low), intervals.PERCENTILE, dtype=object))
            if not np.isfinite(value):
                continue
            for rule, (low, high, method) in results.items():
                defined = np.isfinite(low) & np.isfinite(estimate)
                eps = 1e-12  # a truth of exactly 0 or 1 sits on an end computed to rounding
                covered = (low[defined] - eps <= value) & (value <= high[defined] + eps)
                width = (high - low)[defined]
                rows.append(
                    (
                        truth,
                        n,
                        spread,
                        samples,
                        model,
                        metric,
                        float(value),
                        rule,
                        int(defined.sum()),
                        int(covered.sum()),
                        float(width.mean() * 100) if defined.any() else np.nan,
                        int((width <= 1e-12).sum()),
                        float((method[defined] != intervals.PERCENTILE).mean()) if defined.any() else np.nan,
                    )
                )
    return rows


# ---------------------------------------------------------------- summaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=200, help="replicates (new families each) per cell")
    parser.add_argument("--draws", type=int, default=1000, help="family-bootstrap draws per interval")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--families", default=",".join(map(str, FAMILIES)), help="families per cohort, comma-separated")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "intervals.csv")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a small grid (136 families, spreads 0 and 1.5, one sample, 40 replicates): seconds, for the smoke test",
    )
    args = parser.parse_args(argv)
    if not args.quick:
        performance.record(args.out, __file__, argv)
    families = tuple(int(f) for f in args.families.split(","))
    grid = list(itertools.product(TRUTHS, families, SPREADS, SAMPLES))
    reps = args.replicates
    if args.quick:
        grid = list(itertools.product((0.5, 0.995, 1.0), (136,), ("0", "1.5"), (1,)))
        reps = min(reps, 40)
    done = set()
    if args.out.exists() and not args.quick:
        previous = pl.read_csv(args.out, schema_overrides=SCHEMA)
        done = set(previous.select("truth", "families", "spread", "samples").unique().iter_rows())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    collected = []
    for cell in grid:
        if cell in done:
            continue
        rows = run_cell(*cell, reps, args.draws, args.seed)
        frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
        collected.append(frame)
        if not args.quick:
            with open(args.out, "a") as handle:
                frame.write_csv(handle, include_header=handle.tell() == 0)
        print(
            f"cell truth={cell[0]} families={cell[1]} spread={cell[2]} samples={cell[3]}: "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    frame = pl.concat(collected) if args.quick else pl.read_csv(args.out, schema_overrides=SCHEMA)
    pl.Config.set_tbl_rows(400), pl.Config.set_tbl_width_chars(250), pl.Config.set_fmt_str_lengths(60)
    print("Coverage of the population value, % [lowest–highest cell], and mean width w (pp), by truth:")
    print(performance.interval_coverage_wide(performance.interval_coverage(frame, "truth"), "truth"))
    print("\nBy families per cohort:")
    print(performance.interval_coverage_wide(performance.interval_coverage(frame, "families"), "families"))
    inside = frame.filter((pl.col("truth") > 0) & (pl.col("truth") < 1)).with_columns(
        (100 * pl.col("covered") / pl.col("replicates")).alias("cell_coverage")
    )
    print(
        "\nPer rule, every metric and cell with a truth strictly inside (0, 100%): pooled coverage, cells under "
        "90% and over 98% coverage, zero-width intervals, mean width (pp):"
    )
    print(
        inside.group_by("rule")
        .agg(
            (100 * pl.col("covered").sum() / pl.col("replicates").sum()).round(1).alias("coverage"),
            (pl.col("cell_coverage") < 90).sum().alias("cells_under_90"),
            (pl.col("cell_coverage") > 98).sum().alias("cells_over_98"),
            pl.len().alias("cells"),
            pl.col("points").sum().alias("zero_width"),
            ((pl.col("mean_width") * pl.col("replicates")).sum() / pl.col("replicates").sum()).round(2).alias("width"),
        )
        .sort("rule")
    )
    # mid-range: the cells whose truth is 50%, per family count; the package's width over the bootstrap's
    mid = frame.filter(pl.col("truth") == 0.5, pl.col("rule").is_in(["package", "percentile"]))
    widths = (
        mid.group_by("metric", "families", "rule")
        .agg(
            pl.col("mean_width").mean().round(2).alias("width"),
            (100 * pl.col("covered").sum() / pl.col("replicates").sum()).round(1).alias("coverage"),
        )
        .pivot(on="rule", index=["metric", "families"], values=["width", "coverage"])
        .with_columns((pl.col("width_package") / pl.col("width_percentile")).round(3).alias("width_ratio"))
        .sort("metric", "families")
    )
    print("\nMid-range (truth 50%): mean width (pp) and coverage (%), the package against the bootstrap alone:")
    print(widths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
