#!/usr/bin/env python
"""Benchmark: why some leaderboard shapes diverge at the first attempt's step size, and what a smaller step costs.

For each size (models × channels × families, simulated by ``bayes.synthetic``: family sd
0.8, family × channel sd 0.3) and target acceptance, one run of 4 chains × (300 warm-up
+ 600 draws) of nutpie on the model's density, the data's seed as the sampler's. Printed
per run: seconds, divergences, the mean leapfrog steps a draw, the share of draws whose
tree reached depth 8 or more (255+ steps: trajectories that do not turn back), the share
of model × condition blocks whose channel effects are sampled wholly non-centred
(λ = 0, a signed spread), the gate's R-hat and smallest bulk and tail ESS.

    .venv/bin/python benchmarks/bench_fit_geometry.py [--sizes 7x12x136,14x5x389,28x5x389]
        [--accepts 0.8,0.9] [--seeds 1] [--draws 600]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health
from molp2s_stats.bayes import model as bayes_model
from molp2s_stats.bayes.synthetic import Shape, simulate_cells

DEEP = 8  # tree depth from which a draw counts as a trajectory that would not turn back


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7x12x136,7x5x389,14x5x389,28x5x389,28x12x389")
    parser.add_argument("--accepts", default="0.8,0.9")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--draws", type=int, default=600)
    parser.add_argument("--tune", type=int, default=300)
    args = parser.parse_args()
    print(
        f"{'size':>10} {'seed':>4} {'accept':>6} {'seconds':>7} {'divergent':>9} {'steps/draw':>10} "
        f"{'depth>=8':>8} {'signed blocks':>13} {'r_hat':>6} {'bulk':>5} {'tail':>5}",
        flush=True,
    )
    rows = []
    for size, seed in itertools.product(args.sizes.split(","), range(1, args.seeds + 1)):
        models, channels, families = map(int, size.split("x"))
        data, _ = simulate_cells(Shape(size, models=models, channels=channels, families=families), seed)
        signed = float((bayes_model.centredness(bayes_model.grid(data)) == 0).mean())
        for accept in map(float, args.accepts.split(",")):
            started = time.perf_counter()
            trace = bayes_fit.sample(data, draws=args.draws, tune=args.tune, chains=4, seed=seed, target_accept=accept)
            seconds = time.perf_counter() - started
            stats, gate = trace.sample_stats, health.gate(trace)
            row = (
                size,
                seed,
                accept,
                seconds,
                int(stats["diverging"].sum()),
                float(stats["n_steps"].mean()),
                float((stats["depth"] >= DEEP).mean()),
                signed,
            )
            rows.append(row)
            print(
                f"{size:>10} {seed:>4} {accept:>6} {seconds:>7.0f} {row[4]:>9} {row[5]:>10.0f} {row[6]:>8.1%} "
                f"{signed:>13.0%} {gate['r_hat_max']:>6.3f} {gate['ess_bulk_min']:>5.0f} "
                f"{gate['ess_tail_min']:>5.0f}",
                flush=True,
            )
    for accept in map(float, args.accepts.split(",")):
        part = [r for r in rows if r[2] == accept]
        print(
            f"target acceptance {accept}: {sum(r[4] > 0 for r in part)} of {len(part)} runs diverged; "
            f"median {np.median([r[5] for r in part]):.0f} leapfrog steps a draw"
        )


if __name__ == "__main__":
    main()
