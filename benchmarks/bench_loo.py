#!/usr/bin/env python
"""Benchmark: PSIS-LOO of the default data's size, ArviZ's az.loo against the package's vectorised one.

85,856 observations × 500 draws (4 chains), log-likelihoods like a binomial cell's (most
light-tailed, some heavy), the two run side by side ``--repeats`` times; prints each one's
median seconds, their ratio, and the largest difference in elpd_loo_i and Pareto k.

    .venv/bin/python benchmarks/bench_loo.py [--observations 85856] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import arviz as az
import numpy as np

from molp2s_stats.bayes import psis


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=85_856)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.05, 2.0, args.observations)
    log_lik = -np.abs(rng.standard_t(5, size=(4, 125, args.observations))) * scale
    idata = az.from_dict(posterior={"mu": rng.normal(size=(4, 125))}, log_likelihood={"y": log_lik})
    timings = {"az.loo": [], "psis.loo_pointwise": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = az.loo(idata, pointwise=True)
        timings["az.loo"].append(time.perf_counter() - started)
        started = time.perf_counter()
        loo_i, pareto_k = psis.loo_pointwise(
            log_lik.reshape(-1, args.observations).T, psis.relative_efficiency(idata.posterior)
        )
        timings["psis.loo_pointwise"].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, value in medians.items():
        print(f"{name:<20} median {value:6.2f} s over {args.repeats}")
    print(f"ratio az.loo / vectorised: {medians['az.loo'] / medians['psis.loo_pointwise']:.1f}×")
    print(
        f"largest difference: elpd_loo_i {np.abs(loo_i - expected.loo_i.values).max():.1e}, "
        f"Pareto k {np.abs(pareto_k - expected.pareto_k.values).max():.1e}"
    )


if __name__ == "__main__":
    main()
