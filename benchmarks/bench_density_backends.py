#!/usr/bin/env python
"""Benchmark: the JAX and numba gradients of the model's log density, by size, and where one overtakes the other.

For each size (models × channels × families, simulated by ``bayes.synthetic``), both
implementations of the same density (``density.log_density_function`` in float32 on JAX,
``numba_density.log_density_function`` in float64) are timed as nutpie runs them: one thread
a chain, every chain evaluating gradients at once (``Compiled.step_seconds``), with 1 and with
4 chains. Each figure is the median of ``--repeats`` measurements, the two backends measured in
turn within each repeat. Then, at ``--fit-size``, whole runs of 4 chains × (300 warm-up +
``--draws`` draws) with each backend, the same seed, each compiled first: seconds, and the leapfrog
steps of the kept draws a second of the run.

``compile_density`` picks numba below ``bayes.NUMBA_CELLS`` binomial cells.

    .venv/bin/python benchmarks/bench_density_backends.py [--sizes 3x2x40,5x4x60,...] [--repeats 5]
        [--fit-size 3x2x40] [--draws 500] [--out benchmarks/results/density_backends.csv]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import polars as pl

from molp2s_stats import bayes, performance
from molp2s_stats.bayes import density, native, numba_density, sampler
from molp2s_stats.bayes.synthetic import Shape, simulate_cells


def _data(size: str, seed: int = 21):
    models, channels, families = map(int, size.split("x"))
    data, _ = simulate_cells(Shape(size, models=models, channels=channels, families=families), seed)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3x2x40,5x4x60,8x4x100,8x4x150,8x8x150,8x15x389")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit-size", default="3x2x40")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--out")
    args = parser.parse_args()
    print(f"numba below {bayes.NUMBA_CELLS:,} cells (compile_density's rule)")
    print(
        f"{'size':>9} {'cells':>7} {'params':>6} {'jax 1 ch':>9} {'numba 1':>8} {'jax 4 ch':>9} {'numba 4':>8} "
        f"{'jax/numba (4)':>13}   (µs a leapfrog step a chain, medians)",
        flush=True,
    )
    rows = []
    for size in args.sizes.split(","):
        model = density.density(_data(size))
        backends = {
            "jax": density.Compiled(model, density.log_density_function(model), "jax"),
            "numba": density.Compiled(model, numba_density.log_density_function(model), "numba", native.Kernel(model)),
        }
        times = {(name, chains): [] for name in backends for chains in (1, 4)}
        for _ in range(args.repeats):
            for (name, chains), found in times.items():
                found.append(backends[name].step_seconds(chains) * 1e6)
        median = {key: statistics.median(found) for key, found in times.items()}
        cells = numba_density.cell_count(model)
        ratio = median["jax", 4] / median["numba", 4]
        print(
            f"{size:>9} {cells:>7,} {model.ndim:>6} {median['jax', 1]:>9.0f} {median['numba', 1]:>8.0f} "
            f"{median['jax', 4]:>9.0f} {median['numba', 4]:>8.0f} {ratio:>13.2f}",
            flush=True,
        )
        rows += [
            {
                "size": size,
                "cells": cells,
                "parameters": model.ndim,
                "gradient": name,
                "chains": chains,
                "step_us": value,
                "run_seconds": None,
            }
            for (name, chains), value in median.items()
        ]
    data = _data(args.fit_size)
    print(f"\nwhole runs at {args.fit_size}: 4 chains × (300 warm-up + {args.draws} draws), seed 1")
    for name in ("jax", "numba"):
        model = density.density(data)
        if name == "jax":
            compiled = density.Compiled(model, density.log_density_function(model), name)
        else:
            compiled = density.Compiled(model, numba_density.log_density_function(model), name, native.Kernel(model))
        compiled.evaluate(density.initial_point(model, 0))  # compiled before the clock starts
        started = time.perf_counter()
        trace = sampler.sample(data, draws=args.draws, tune=300, chains=4, seed=1, compiled=compiled)
        seconds = time.perf_counter() - started
        steps = int(trace.sample_stats["n_steps"].sum())
        print(
            f"{name:>6}: {seconds:6.1f} s, {steps / seconds:8.0f} leapfrog steps of the kept draws a second of the run",
            flush=True,
        )
        rows.append(
            {
                "size": args.fit_size,
                "cells": numba_density.cell_count(model),
                "parameters": model.ndim,
                "gradient": name,
                "chains": 4,
                "step_us": None,
                "run_seconds": seconds,
            }
        )
    if args.out:
        pl.DataFrame(rows).write_csv(args.out)
        performance.record(args.out, Path(__file__).name)


if __name__ == "__main__":
    main()
