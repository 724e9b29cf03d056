#!/usr/bin/env python
"""Benchmark: adding one model to a fitted leaderboard, warm against cold.

For each size (models × channels × families, simulated by ``bayes.synthetic`` as in
bench_fit_cost), the leaderboard without its last model is fitted and saved; then the
whole leaderboard is fitted twice with the defaults and the same seed: cold, and warm
from the saved fit (``molp2s fit --warm-start``). Printed per size: both times, the
time saved, both gates, and how far apart the two posteriors are: the largest
|difference of posterior means| of the model × condition × channel cells over its
Monte Carlo standard error (ArviZ's mcse of each fit, combined).

    .venv/bin/python benchmarks/bench_warm_start.py [--sizes 7x5x136,14x5x389] [--seeds 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import arviz as az

from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health, posterior
from molp2s_stats.bayes.synthetic import Shape, simulate_cells


def largest_z(cold: az.InferenceData, warm: az.InferenceData) -> float:
    difference, error = posterior.mean_differences(cold, warm, "cell")
    return float((difference / error).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7x5x136,14x5x389")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--budget", type=float, default=None, help="seconds (default: the fit's own)")
    args = parser.parse_args()
    print(
        f"{'size':>12} {'seed':>4} {'saved fit s':>11} {'cold s':>7} {'warm s':>7} {'saved':>6} "
        f"{'cold gate':>9} {'warm gate':>9} {'max |z|':>7}",
        flush=True,
    )
    savings = []
    for size in args.sizes.split(","):
        models, channels, families = map(int, size.split("x"))
        for seed in range(1, args.seeds + 1):
            data, _ = simulate_cells(Shape(size, models=models, channels=channels, families=families), seed)
            before = bayes_fit.fit(bayes_data.only_models(data, data.models[:-1]), seed=seed, budget=args.budget)
            started = time.perf_counter()
            cold = bayes_fit.fit(data, seed=seed + 1, budget=args.budget)
            cold_seconds = time.perf_counter() - started
            started = time.perf_counter()
            warm = bayes_fit.fit(data, seed=seed + 1, budget=args.budget, warm_start=before)
            warm_seconds = time.perf_counter() - started
            saved = 1 - warm_seconds / cold_seconds
            savings.append(saved)
            gates = [("passed" if health.diagnostics(f)["passed"][0] else "missed") for f in (cold, warm)]
            print(
                f"{size:>12} {seed:>4} {float(before.posterior.attrs['seconds']):>11.0f} {cold_seconds:>7.0f} "
                f"{warm_seconds:>7.0f} {saved:>6.0%} {gates[0]:>9} {gates[1]:>9} {largest_z(cold, warm):>7.1f}",
                flush=True,
            )
    print(
        f"\nthe warm start saved {statistics.median(savings):.0%} of the cold fit's time (median of {len(savings)}; "
        f"from {min(savings):.0%} to {max(savings):.0%})"
    )


if __name__ == "__main__":
    main()
