#!/usr/bin/env python
"""Benchmark: the hierarchical model at paper size, samplers side by side in one run.

The fit's default (nutpie, diagonal mass matrix), nutpie with its low-rank mass
matrix, and plain PyMC NUTS.

7 simulated models (the first seven of simulate.DEFAULT_MODELS) × 12 channels × 136 families
(simulate.synthetic_benchmark), the fit's default chains, tuning and draws, seeded. For each
sampler: wall time, max R-hat, min bulk and tail ESS, min bulk ESS per second,
divergences; and the recovery of the simulator's reliance (share of the 84 model ×
channel cells whose 90% HDI covers the truth, and the correlation of posterior means
with the truth). The target: the health gate (R-hat <= 1.01, bulk and tail ESS >= 400,
no divergence) passed within 60 s for the whole `molp2s fit` process: `--process N`
then runs `molp2s fit` N times on the same database as a user would (imports, reading the
cells, compiling, sampling, saving), seeds 1..N, and prints each run and the median.

    .venv/bin/python benchmarks/bench_bayes.py [--samplers nutpie,nutpie-low-rank,pymc]
        [--draws N] [--tune N] [--seed N] [--process N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import arviz as az
import numpy as np
import polars as pl

from molp2s_stats import bayes, simulate, store
from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health, posterior
from molp2s_stats.ingest import load, read_benchmark

PYMC_TARGET_ACCEPT = 0.8  # PyMC's own default: "plain PyMC NUTS"
# name -> (sampler, low-rank mass matrix): the fit's default (nutpie, diagonal mass
# matrix), nutpie with its low-rank mass matrix, and PyMC's own NUTS
SAMPLER_SETTINGS = {"nutpie": ("nutpie", bayes.LOW_RANK), "nutpie-low-rank": ("nutpie", True), "pymc": ("pymc", False)}
CHANNELS = (
    "dipole_norm",
    "dipole_vector",
    "gap",
    "uvvis",
    "ir",
    "raman",
    "h1_peaks",
    "h1_peaks_int",
    "h1_atomwise",
    "c13_peaks",
    "c13_peaks_deg",
    "c13_atomwise",
)


def paper_size_data(
    root: Path, seed: int, *, families: int = 136, models: int = 7
) -> tuple[bayes_data.ModelData, pl.DataFrame]:
    """The simulated benchmark and responses, loaded into ``root/db.duckdb``; its cells and the truth."""
    folder = root / "bench"
    folder.mkdir()
    for name, frame in simulate.synthetic_benchmark(families=families, channels=CHANNELS).items():
        frame.write_parquet(folder / f"{name}.parquet")
    chosen = simulate.DEFAULT_MODELS[:models]
    responses, truth = simulate.simulate(read_benchmark(folder), models=chosen, seed=seed)
    paths = simulate.write(responses, truth, root / "responses", models=chosen, seed=seed, samples=1)
    con = store.connect(root / "db.duckdb")
    load(con, benchmark=folder, responses=paths)
    data = bayes_data.read_model_data(con)
    con.close()
    return data, truth


def whole_process(root: Path, args: argparse.Namespace, truth: pl.DataFrame) -> None:
    """``molp2s fit`` as a user runs it, ``args.process`` times (seeds 1..N): wall time and the gate."""
    runs = args.process
    command = [
        str(Path(sys.executable).with_name("molp2s")),
        "fit",
        "--db",
        str(root / "db.duckdb"),
        "--allow-unconverged",
        *(["--draws", str(args.draws)] if args.draws else []),
        "--tune",
        str(args.tune),
        "--chains",
        str(args.chains),
        "--budget",
        str(args.budget),
    ]
    print(f"\nwhole process: {' '.join(command[1:])} --seed N", flush=True)
    walls = []
    for seed in range(1, runs + 1):
        started = time.perf_counter()
        out = root / f"fit-{seed}.nc"
        done = subprocess.run([*command, "--seed", str(seed), "--out", str(out)], capture_output=True, text=True)
        walls.append(time.perf_counter() - started)
        if done.returncode:
            raise SystemExit(f"molp2s fit --seed {seed} failed:\n{done.stderr}")
        idata = az.from_netcdf(out)
        row = health.diagnostics(idata).row(0, named=True)
        check = posterior.truth_check(idata, truth)
        print(
            f"  seed {seed}: {walls[-1]:5.1f} s  r_hat {row['r_hat_max']:.3f}  bulk {row['ess_bulk_min']:.0f}  "
            f"tail {row['ess_tail_min']:.0f}  divergences {row['divergences']}  passed {row['passed']}  "
            f"attempts {row['attempts']}  cover90 {float(check['covered'].mean()):.2f}",
            flush=True,
        )
    print(
        f"  median {statistics.median(walls):.1f} s (target <= 60 s): "
        f"{'ok' if statistics.median(walls) <= 60 else 'FAIL'}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--samplers", default="nutpie,nutpie-low-rank,pymc", help=f"comma-separated, of: {', '.join(SAMPLER_SETTINGS)}"
    )
    parser.add_argument(
        "--draws", type=int, default=None, help="draws per chain (default: the fit's own, until the gate passes)"
    )
    parser.add_argument("--tune", type=int, default=bayes.DEFAULT_TUNE)
    parser.add_argument("--chains", type=int, default=bayes.DEFAULT_CHAINS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target-accept", type=float, default=bayes.TARGET_ACCEPT)
    parser.add_argument("--families", type=int, default=136, help="families (the paper: 136)")
    parser.add_argument("--models", type=int, default=7, help="simulated models (the paper: 7)")
    parser.add_argument(
        "--budget",
        type=float,
        default=bayes.DEFAULT_BUDGET,
        help="the whole process's --budget (the samplers side by side make one attempt each)",
    )
    parser.add_argument(
        "--process",
        type=int,
        default=0,
        metavar="N",
        help="then run the whole `molp2s fit` process N times (default 0: not)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, truth = paper_size_data(Path(tmp), args.seed, families=args.families, models=args.models)
        run_samplers(args, data, truth)
        if args.process:
            whole_process(Path(tmp), args, truth)


def run_samplers(args: argparse.Namespace, data: bayes_data.ModelData, truth: pl.DataFrame) -> None:
    if not args.samplers:
        return
    print(
        f"{data.cells.height + data.p0.height} binomial cells; {len(data.models)} models, {len(data.channels)} "
        f"channels, {len(data.families)} families; {args.chains} chains x ({args.tune} + {args.draws or 'until the gate passes'})",
        flush=True,
    )
    print(
        f"{'sampler':15} {'wall s':>7} {'r_hat':>6} {'ess_bulk':>8} {'ess_tail':>8} {'ess/s':>6} {'div':>4} "
        f"{'cover90':>7} {'r':>5}",
        flush=True,
    )
    for name in args.samplers.split(","):
        sampler, low_rank = SAMPLER_SETTINGS[name]
        started = time.perf_counter()
        idata = bayes_fit.fit(
            data,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            seed=args.seed,
            sampler=sampler,
            low_rank=low_rank,
            loo=False,
            budget=0,
            target_accept=args.target_accept if sampler == "nutpie" else PYMC_TARGET_ACCEPT,
        )
        wall = time.perf_counter() - started
        row = health.diagnostics(idata).row(0, named=True)
        check = posterior.truth_check(idata, truth)
        cover = float(check["covered"].mean())
        r = float(np.corrcoef(check["estimate"], check["truth"])[0, 1])
        print(
            f"{name:15} {wall:7.0f} {row['r_hat_max']:6.3f} {row['ess_bulk_min']:8.0f} {row['ess_tail_min']:8.0f} "
            f"{row['ess_bulk_min'] / wall:6.2f} {row['divergences']:4d} {cover:7.2f} {r:5.2f}  "
            f"slowest: {row['ess_bulk_min_parameter']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
