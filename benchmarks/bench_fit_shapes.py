#!/usr/bin/env python
"""Benchmark: does `molp2s fit`, with no options, pass its health gate on every study shape?

Each shape (``SHAPES``) is simulated by ``bayes.synthetic`` (a logistic model with
family and family × channel effects whose assumptions are not the fitted model's
priors), one dataset per seed, and fitted with the fit's defaults, sampler seed = data
seed. Printed per fit: pass or fail, attempts, wall time, the slowest parameter, the
diagnostics, and the share of the model × channel reliance and cf-accuracy cells
whose 90% HDI covers the truth. Per shape: the pass rate, median and maximum time.

    .venv/bin/python benchmarks/bench_fit_shapes.py [--seeds 10] [--first-seed 1]
        [--shapes paper,small,...] [--budget SECONDS] [--out results.csv]

Leaderboard shapes (``lb-MxCxF``: 7, 14, 28 or 56 models × 2, 5, 12 or 15 channels × 136
or 389 families) take their effects from the seed, in turn (``VARIANTS``): the full
benchmark's (family sd 0.8, family × channel sd 0.3), no family effects at all, large ones
(1.5 and 1.0), and the full benchmark's with one model at chance and one at the ceiling.
``--shapes leaderboard`` names all 32.

Fits run seed by seed over the shapes. Each fit's row is appended to ``--out`` as it
finishes (a CSV), and fits already there are skipped, so an interrupted run resumes where
it stopped, having measured every shape about equally often.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import sys
import time
from pathlib import Path

import polars as pl

from molp2s_stats import performance
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health, posterior
from molp2s_stats.bayes.synthetic import Shape, simulate_cells

SHAPES = {
    shape.name: shape
    for shape in (
        # the shapes
        Shape("paper", models=7, channels=12, families=136),
        Shape("five-by-four", models=5, channels=4, families=136),
        Shape("small-study", models=3, channels=2, families=40),
        Shape(
            "extremes",
            models=4,
            channels=4,
            families=136,
            family_sd=1.5,
            family_channel_sd=0.0,
            at_ceiling=1,
            at_chance=1,
        ),
        Shape("three-samples", models=4, channels=4, families=136, samples=3),
        Shape("unbalanced", models=4, channels=3, families=200, families_per_channel=(200, 60, 30)),
        # and what else users bring
        Shape("one-model", models=1, channels=3, families=100),
        Shape("many-models", models=20, channels=3, families=80),
        Shape("fifteen-channels", models=3, channels=15, families=60, family_channel_sd=0.6),
        Shape("large-family-channel", models=5, channels=4, families=136, family_channel_sd=1.2),
        Shape(
            "no-family-spread", models=4, channels=4, families=136, family_sd=0.0, family_channel_sd=0.0, channel_sd=0.0
        ),
        Shape("four-hundred", models=3, channels=2, families=400),
        # and data unlike the fitted model: a model right at the ceiling (99.97%: most of its cells all
        # right), and each model with its own family effects (the fitted model shares them)
        Shape("at-the-ceiling", models=4, channels=4, families=136, ability=(8.0, 1.0, 0.0, -1.0), at_chance=1),
        Shape("own-family-effects", models=4, channels=4, families=136, family_sd_by_model=(0.3, 0.8, 1.5, 2.0)),
        # and variation within a family: each task its own difficulty, and repeated samples of a task that
        # mostly agree (each model's own take on a task, sd 2 on the logit: a model near temperature 0)
        Shape("task-effects", models=5, channels=4, families=136, task_sd=1.0),
        Shape("agreeing-samples", models=4, channels=4, families=136, samples=3, task_sd=0.5, model_task_sd=2.0),
    )
}
# leaderboards as the field's grow: every size the fit must pass its gate on, the effects varying by seed
# (sizes, names and effects are molp2s_stats.performance's, which reads the results for the docs)
LEADERBOARD = {
    shape.name: shape
    for shape in (
        Shape(performance.leaderboard_shape(m, c, f), models=m, channels=c, families=f)
        for m, c, f in itertools.product(*performance.LEADERBOARD_SIZES)
    )
}
VARIANTS = tuple(options for _, options in performance.LEADERBOARD_EFFECTS)
SHAPES |= LEADERBOARD
COLUMNS = (
    "shape",
    "seed",
    "passed",
    "attempts",
    "seconds",
    "r_hat_max",
    "ess_bulk_min",
    "ess_tail_min",
    "divergences",
    "ess_bulk_min_parameter",
    "draws_per_chain",
    "covered_reliance",
    "covered_responsiveness",
)


def fit_one(shape: Shape, seed: int, budget: float | None) -> dict:
    if shape.name in LEADERBOARD:
        shape = dataclasses.replace(shape, **VARIANTS[(seed - 1) % len(VARIANTS)])
    data, truth = simulate_cells(shape, seed)
    started = time.perf_counter()
    idata = bayes_fit.fit(data, seed=seed, budget=budget)
    seconds = time.perf_counter() - started
    row = health.diagnostics(idata).row(0, named=True)
    covered = {}
    for metric in ("reliance", "responsiveness"):
        known = truth.filter(pl.col("metric") == metric).rename({"metric": "quantity", "truth": "value"})
        check = posterior.truth_check(
            idata,
            known.with_columns(pl.col("value") * 100).select("model", "channel", "quantity", "value"),
            metric=metric,
            hdi_prob=0.9,
        )
        covered[metric] = float(check["covered"].mean())
    return {
        "shape": shape.name,
        "seed": seed,
        "passed": bool(row["passed"]),
        "attempts": int(row.get("attempts") or 1),
        "seconds": seconds,
        "r_hat_max": row["r_hat_max"],
        "ess_bulk_min": row["ess_bulk_min"],
        "ess_tail_min": row["ess_tail_min"],
        "divergences": row["divergences"],
        "ess_bulk_min_parameter": row["ess_bulk_min_parameter"],
        "draws_per_chain": row["draws_per_chain"],
        "covered_reliance": covered["reliance"],
        "covered_responsiveness": covered["responsiveness"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--budget", type=float, default=None, help="seconds (default: the fit's own)")
    parser.add_argument("--out", type=Path, default=None, help="CSV of every fit (appended; resumes)")
    args = parser.parse_args()
    if args.out:
        performance.record(args.out, __file__)
    names = [n for name in args.shapes.split(",") for n in (list(LEADERBOARD) if name == "leaderboard" else [name])]
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        sys.exit(f"unknown shape(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    done = (
        pl.read_csv(args.out)
        if args.out and args.out.exists()
        else pl.DataFrame(schema={"shape": pl.String, "seed": pl.Int64})
    )
    finished = set(done.select("shape", "seed").iter_rows())
    rows = done.to_dicts()
    # Seed by seed over the shapes, not shape by shape, so that a run stopped part-way has
    # measured every shape about equally often.
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for name in names:
            if (name, seed) in finished:
                continue
            row = fit_one(SHAPES[name], seed, args.budget)
            rows.append(row)
            print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
            if args.out:
                frame = pl.DataFrame([row])
                with args.out.open("a") as handle:
                    frame.write_csv(handle, include_header=handle.tell() == 0)
    table = pl.DataFrame(rows).filter(pl.col("shape").is_in(names))
    print()
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True
    ):
        print(performance.fit_shapes(table).filter(pl.col("shape").is_in(names)))
    print(
        f"\nall shapes: {table['passed'].mean():.1%} of {table.height} fits passed the gate; "
        f"90% HDIs covered the truth in {table['covered_reliance'].mean():.0%} (reliance) and "
        f"{table['covered_responsiveness'].mean():.0%} (cf accuracy) of cells"
    )


if __name__ == "__main__":
    main()
