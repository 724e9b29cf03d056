#!/usr/bin/env python
"""Benchmark: LOO's model without family effects sampled on every family's cells against the cells
summed over families (``bayes.data.pooled_over_families``, what a fit's LOO samples).

Without family effects a cell's η does not depend on its family, so both are the same posterior;
the summed one has a few hundred cells instead of one per family. For each data set (the default
data, and simulated leaderboards of ``bayes.synthetic`` shapes, ``+edges`` with one model near
100% and one at chance) and seed, both are sampled as a
fit's LOO samples them (4 chains × (300 warm-up + 125 draws)), side by side; printed: each one's
seconds, the model's elpd_loo over every cell (``loo.blocked_loo``, the same observations either
way), and the largest |difference of posterior means| of the cells over its Monte Carlo standard
error. The yardstick for the elpd: the same model on every family's cells sampled again with
another seed (its own Monte Carlo spread). Then the medians: seconds, their ratio, and both elpd
differences' spread.

    .venv/bin/python benchmarks/bench_loo_plain.py [--data default,7x5x136,7x5x136+edges,14x5x389] [--seeds 3]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
from pathlib import Path

import arviz as az

from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import loo, posterior
from molp2s_stats.bayes.sampler import sample
from molp2s_stats.bayes.synthetic import Shape, simulate_cells

SETTINGS = {"draws": 125, "tune": 300, "chains": 4, "target_accept": 0.8, "low_rank": False}  # a fit's LOO run


def read(name: str, seed: int, channels: tuple[str, ...] | None) -> bayes_data.ModelData:
    """The data set ``name`` ('default', or a simulated shape drawn with ``seed``)."""
    if name == "default":
        return default_data(channels)
    size, _, edges = name.partition("+")
    models, n_channels, families = map(int, size.split("x"))
    at_edges = {"at_ceiling": 1, "at_chance": 1} if edges else {}
    data, _ = simulate_cells(Shape(name, models=models, channels=n_channels, families=families, **at_edges), seed)
    return data


@functools.cache  # the same for every seed: loaded once
def default_data(channels: tuple[str, ...] | None) -> bayes_data.ModelData:
    from molp2s_stats import store
    from molp2s_stats.ingest.default_data import load_default_data

    with tempfile.TemporaryDirectory() as tmp:
        con = store.connect(Path(tmp) / "default.duckdb")
        load_default_data(con)
        data = bayes_data.read_model_data(con, channels=list(channels) if channels else None)
        con.close()
    return data


def largest_z(a: az.InferenceData, b: az.InferenceData) -> float:
    difference, error = posterior.mean_differences(a, b, "cell")
    return float((difference / error).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default="default,7x5x136,7x5x136+edges,14x5x389",
        help="'default' and/or models×channels×families (+edges: one model near 100%%, one at chance)",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--channels", default=None, help="the default data's channels (comma-separated; default all)")
    args = parser.parse_args()
    channels = tuple(args.channels.split(",")) if args.channels else None
    print(
        f"{'data':>12} {'seed':>4} {'cells':>7} {'summed':>6} {'cells s':>7} {'summed s':>8} "
        f"{'elpd cells':>11} {'elpd summed':>11} {'elpd again':>11} {'max |z|':>7}",
        flush=True,
    )
    seconds: dict[str, list[float]] = {"cells": [], "summed": []}
    elpd_differences, reseeded = [], []
    for name in args.data.split(","):
        for seed in range(1, args.seeds + 1):
            data = read(name, seed, channels)
            pooled = bayes_data.pooled_over_families(data)
            runs = {}
            for label, sampled_on in (("cells", data), ("summed", pooled)):
                started = time.perf_counter()
                runs[label] = sample(sampled_on, family_effects=False, seed=seed, **SETTINGS)
                seconds[label].append(time.perf_counter() - started)
            runs["again"] = sample(data, family_effects=False, seed=seed + 1000, **SETTINGS)
            elpd = {label: float(loo.blocked_loo(run, data)[0].sum()) for label, run in runs.items()}
            elpd_differences.append(elpd["summed"] - elpd["cells"])
            reseeded.append(elpd["again"] - elpd["cells"])
            print(
                f"{name:>12} {seed:>4} {data.cells.height + data.p0.height:>7} {pooled.cells.height + pooled.p0.height:>6} "
                f"{seconds['cells'][-1]:>7.1f} {seconds['summed'][-1]:>8.1f} {elpd['cells']:>11.1f} "
                f"{elpd['summed']:>11.1f} {elpd['again']:>11.1f} {largest_z(runs['cells'], runs['summed']):>7.1f}",
                flush=True,
            )
    cells, summed = statistics.median(seconds["cells"]), statistics.median(seconds["summed"])
    print(
        f"\nsampling LOO's model without family effects: {cells:.1f} s on every family's cells, {summed:.1f} s "
        f"summed over families (medians of {len(seconds['cells'])}; {cells / summed:.1f}× faster); "
        f"elpd summed − cells: median {statistics.median(elpd_differences):+.1f}, "
        f"from {min(elpd_differences):+.1f} to {max(elpd_differences):+.1f}; the cells' own, sampled again "
        f"with another seed: median {statistics.median(reseeded):+.1f}, from {min(reseeded):+.1f} to {max(reseeded):+.1f}"
    )


if __name__ == "__main__":
    main()
