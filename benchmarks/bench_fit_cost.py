#!/usr/bin/env python
"""Benchmark: what `molp2s fit` costs as a leaderboard grows, and whether it passes its gate.

Each size (models × channels × families) is simulated by ``bayes.synthetic`` (family
effects sd 0.8, family × channel sd 0.3, one sample per task, as a full benchmark run)
and fitted with the fit's defaults, sampler seed = data seed, each fit in a process of
its own so that its peak memory is its own. Printed per fit: binomial cells,
parameters, the estimate made before sampling, seconds, the smallest bulk or tail ESS
per second, the gate, attempts and peak resident memory. Then the growth of seconds per
effective draw with the cells: the slope of log(seconds / min ESS) on log(cells), by
least squares (scipy.stats.linregress), with its standard error; 1 is linear.

    .venv/bin/python benchmarks/bench_fit_cost.py [--models 7,14,28,56] [--channels 5,12,15]
        [--families 136,389] [--seeds 1] [--budget SECONDS] [--device gpu] [--out results.csv]

Each fit's row is appended to ``--out`` as it finishes, and fits already there are
skipped, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from molp2s_stats import performance

COLUMNS = (
    "models",
    "channels",
    "families",
    "seed",
    "cells",
    "parameters",
    "estimate",
    "seconds",
    "min_ess",
    "ess_per_second",
    "passed",
    "attempts",
    "draws_per_chain",
    "divergences",
    "r_hat_max",
    "peak_mb",
)


def fit_one(
    models: int, channels: int, families: int, seed: int, budget: float | None, device: str | None = None
) -> dict:
    """One fit with the defaults, in this process: its row."""
    from molp2s_stats.bayes import fit as bayes_fit
    from molp2s_stats.bayes import health
    from molp2s_stats.bayes.synthetic import Shape, simulate_cells

    data, _ = simulate_cells(
        Shape(f"{models}x{channels}x{families}", models=models, channels=channels, families=families), seed
    )
    estimates = []
    started = time.perf_counter()
    idata = bayes_fit.fit(data, seed=seed, budget=budget, on_estimate=estimates.append, device=device)
    seconds = time.perf_counter() - started
    row = health.diagnostics(idata).row(0, named=True)
    min_ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    return {
        "models": models,
        "channels": channels,
        "families": families,
        "seed": seed,
        "cells": data.cells.height + data.p0.height,
        "parameters": estimates[0].parameters,
        "estimate": estimates[0].seconds,
        "seconds": seconds,
        "min_ess": min_ess,
        "ess_per_second": min_ess / seconds,
        "passed": bool(row["passed"]),
        "attempts": int(row["attempts"]),
        "draws_per_chain": int(row["draws_per_chain"]),
        "divergences": int(row["divergences"]),
        "r_hat_max": row["r_hat_max"],
        # ru_maxrss is in KiB on Linux
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="7,14,28,56")
    parser.add_argument("--channels", default="5,12,15")
    parser.add_argument("--families", default="136,389")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=None, help="seconds (default: the fit's own)")
    parser.add_argument("--out", type=Path, default=None, help="CSV of every fit (appended; resumes)")
    parser.add_argument("--device", default=None, help="cpu or gpu: where the gradient runs (default: JAX's default)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # models,channels,families,seed: one fit
    args = parser.parse_args()
    if args.out and not args.one:
        performance.record(args.out, __file__)
    if args.one:
        models, channels, families, seed = map(int, args.one.split(","))
        print(json.dumps(fit_one(models, channels, families, seed, args.budget, args.device)))
        return
    sizes = list(
        itertools.product(*(map(int, getattr(args, name).split(",")) for name in ("models", "channels", "families")))
    )
    done = (
        pl.read_csv(args.out)
        if args.out and args.out.exists()
        else pl.DataFrame(schema={name: pl.Int64 for name in ("models", "channels", "families", "seed")})
    )
    finished = set(done.select("models", "channels", "families", "seed").iter_rows())
    rows = done.to_dicts()
    print(
        f"{'models':>6} {'channels':>8} {'families':>8} {'cells':>9} {'params':>7} {'estimate s':>10} "
        f"{'seconds':>8} {'min ESS/s':>9} {'gate':>6} {'attempts':>8} {'peak MB':>8}",
        flush=True,
    )

    def show(row: dict) -> None:
        print(
            f"{row['models']:>6} {row['channels']:>8} {row['families']:>8} {row['cells']:>9,} "
            f"{row['parameters']:>7,} {row['estimate']:>10.0f} {row['seconds']:>8.0f} "
            f"{row['ess_per_second']:>9.2f} {'passed' if row['passed'] else 'missed':>6} {row['attempts']:>8} "
            f"{row['peak_mb']:>8.0f}",
            flush=True,
        )

    for row in rows:
        show(row)
    for (models, channels, families), seed in itertools.product(
        sizes, range(args.first_seed, args.first_seed + args.seeds)
    ):
        if (models, channels, families, seed) in finished:
            continue
        command = [
            sys.executable,
            __file__,
            "--one",
            f"{models},{channels},{families},{seed}",
            *(["--budget", str(args.budget)] if args.budget is not None else []),
            *(["--device", args.device] if args.device else []),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"fit {models} × {channels} × {families} (seed {seed}) failed:\n{done.stderr[-3000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        show(row)
        if args.out:
            with args.out.open("a") as handle:
                pl.DataFrame([row]).select(COLUMNS).write_csv(handle, include_header=handle.tell() == 0)
    table = pl.DataFrame(rows)
    slope = performance.growth(table)
    if slope is not None:
        print(
            f"\nseconds per effective draw grow as cells^{slope[0]:.2f} (SE {slope[1]:.2f}; 1 is linear), "
            f"over {table.height} fits from {table['cells'].min():,} to {table['cells'].max():,} cells; "
            f"{table['passed'].sum()} of {table.height} passed the gate; the estimate made before sampling "
            f"was {(table['estimate'] / table['seconds']).median():.2f}× the time taken (median)"
        )


if __name__ == "__main__":
    main()
