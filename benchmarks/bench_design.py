#!/usr/bin/env python
"""Benchmark: are `molp2s design`'s predictions honest?

Per shape and seed: simulate a pilot study with known structure, read its variance components,
ask for the cheapest design that meets a target (PGR half-width, a 10 pp PGR difference between
two models at 80% power, a reliance-margin half-width), then simulate that design ``--replicates``
times with new families from the same truth and measure what it delivers: the realised half-width
(z × the standard deviation of a model's score over the replicates, root mean over the models)
and the realised power (from the standard deviation of the two models' difference, over the
model pairs). The ratio realised / predicted half-width should lie within ±15%, the realised
power within ±5 pp of the target.

The simulator is not the package's: success probabilities are linear in the effects (clipped to
[0.01, 0.99]) or pushed through a steep logistic, with the shapes

- ``additive``: family, family × channel, task and Bernoulli answers; 2 answers a task;
- ``one-answer``: the same with one answer a task (the design keeps one);
- ``agreeing``: answers to a task nearly always agree (probabilities near 0 or 1), 3 a task;
- ``model-family``: each model has its own family effects (no common difficulty);
- ``ceiling``: models at 90–98%, where the Bernoulli variance is small;
- ``unbalanced``: 1–5 cf tasks a family and a quarter of the families missing from each channel;
- ``no-family``: no family effect at all (every difference comes from the answers).

Rows are appended to ``--out`` per (shape, seed) and skipped when there, so a run resumes.

    .venv/bin/python benchmarks/bench_design.py [--seeds 20] [--replicates 1000]
        [--out benchmarks/results/design.csv]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy import special, stats

from molp2s_stats import performance
from molp2s_stats.stats import planning

CHANNELS = ("ch_a", "ch_b")
MODELS = 4
PILOT_FAMILIES = 150
TARGETS = (
    ("pgr", planning.Target("half_width", 4.0)),
    ("pgr", planning.Target("difference", 10.0)),
    ("reliance_margin", planning.Target("half_width", 8.0)),
)


@dataclass(frozen=True)
class Shape:
    name: str
    samples: int = 2
    family_sd: float = 0.12
    channel_sd: float = 0.08
    task_sd: float = 0.10
    steep: bool = False  # probabilities through a steep logistic: answers to a task agree
    model_family: bool = False
    base: tuple[float, float, float] = (0.65, 0.50, 0.40)  # source, shuffled, cf (the first model; others spread)
    cf_range: tuple[int, int] = (3, 3)
    missing: float = 0.0


SHAPES = {
    s.name: s
    for s in (
        Shape("additive"),
        Shape("one-answer", samples=1),
        Shape("agreeing", samples=3, steep=True),
        Shape("model-family", model_family=True),
        Shape("ceiling", base=(0.96, 0.93, 0.90), family_sd=0.03, channel_sd=0.02, task_sd=0.02),
        Shape("unbalanced", cf_range=(1, 5), missing=0.25),
        Shape("no-family", family_sd=0.0, channel_sd=0.0),
    )
}


def draw_study(shape: Shape, families: int, samples: int, cf_tasks: int | None, rng: np.random.Generator):
    """Arrays of one study: y (answers' mean), per model × channel × family × slot; slot 0 P0, 1 source,
    2 shuffled, 3.. cf (NaN where a family has fewer cf tasks or is missing from the channel)."""
    top = cf_tasks if cf_tasks is not None else shape.cf_range[1]
    slots = 3 + top
    family = rng.normal(0, shape.family_sd, (MODELS if shape.model_family else 1, 1, families, 1))
    channel = rng.normal(0, shape.channel_sd, (1, len(CHANNELS), families, 1))
    task = rng.normal(0, shape.task_sd, (1, len(CHANNELS), families, slots))
    base = np.array([0.55, *shape.base, *[shape.base[2]] * (top - 1)])
    spread = np.linspace(0.0, -0.12, MODELS) if shape.base[0] < 0.9 else np.linspace(0.0, -0.04, MODELS)
    p = base[None, None, None, :] + spread[:, None, None, None] + family + channel + task
    if shape.steep:
        p = special.expit(12 * (p - 0.5))
    p = np.clip(p, 0.01, 0.99)
    y = rng.binomial(samples, p) / samples
    if cf_tasks is None:
        counts = rng.integers(shape.cf_range[0], shape.cf_range[1] + 1, families)
    else:
        counts = np.full(families, cf_tasks)
    y[..., 3:] = np.where(np.arange(top)[None, None, None, :] < counts[None, None, :, None], y[..., 3:], np.nan)
    if shape.missing and cf_tasks is None:  # the pilot's channels miss families; a design counts cohort families
        gone = rng.uniform(size=(1, len(CHANNELS), families, 1)) < shape.missing
        y = np.where(gone, np.nan, y)
    return y


def scores(y: np.ndarray, metric: str) -> np.ndarray:
    """Each model × channel's score (proportion), the package's definitions on the arrays."""
    if metric == "pgr":
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a family missing from the channel: all NaN
            g = 0.5 * y[..., 1] + 0.5 * np.nanmean(y[..., 3:], axis=-1)
    else:
        g = y[..., 1] - y[..., 2]
    return np.nanmean(g, axis=-1)


def as_tasks(y: np.ndarray, samples: int) -> pl.DataFrame:
    """The study as ``cohort_tasks`` rows."""
    m, c, f, s = np.indices(y.shape)
    keep = np.isfinite(y)
    condition = np.array(["none", "source", "shuffled"] + ["cf"] * (y.shape[-1] - 3))
    return pl.DataFrame(
        {
            "model": np.char.add("m", m[keep].astype(str)),
            "channel": np.array(CHANNELS)[c[keep]],
            "family_id": np.char.add("F", f[keep].astype(str)),
            "condition": condition[s[keep]],
            "samples": np.full(keep.sum(), samples),
            "y": y[keep],
        }
    )


def one_seed(shape: Shape, seed: int, replicates: int) -> list[dict]:
    rng = np.random.default_rng([seed, sum(map(ord, shape.name))])
    pilot = draw_study(shape, PILOT_FAMILIES, shape.samples, None, rng)
    tasks = as_tasks(pilot, shape.samples)
    rows = []
    for metric, target in TARGETS:
        inputs = planning.channel_inputs(tasks, metric, channels=["ch_a"])
        cost = planning.Cost(models=MODELS)
        chosen = planning.design(inputs, target, cost, max_samples=3).filter("cheapest").row(0, named=True)
        realised = []
        for _ in range(replicates):
            y = draw_study(shape, chosen["families"], chosen["samples"], chosen["cf_tasks"], rng)
            realised.append(scores(y[:, :1], metric)[:, 0])
        realised = np.array(realised)  # replicates × models
        z = stats.norm.ppf(0.975)
        if target.kind == "half_width":
            predicted, planned = chosen["half_width"], chosen["half_width_planned"]
            achieved = 100 * z * np.sqrt(np.mean(np.var(realised, axis=0, ddof=1)))
        else:
            predicted, planned = 100 * chosen["power"], 100 * chosen["power_planned"]
            pair_var = [
                np.var(realised[:, a] - realised[:, b], ddof=1) for a in range(MODELS) for b in range(a + 1, MODELS)
            ]
            se = np.sqrt(np.mean(pair_var))
            achieved = 100 * stats.norm.cdf(target.value / 100 / se - z)
        rows.append(
            {
                "shape": shape.name,
                "seed": seed,
                "metric": metric,
                "target": target.kind,
                "target_value": target.value,
                "families": chosen["families"],
                "samples": chosen["samples"],
                "cf_tasks": chosen["cf_tasks"],
                "predicted": predicted,
                "planned": planned,
                "realised": float(achieved),
                "replicates": replicates,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "design.csv")
    args = parser.parse_args(argv)
    done = pl.read_csv(args.out) if args.out.exists() else None
    start = time.perf_counter()
    for name in args.shapes.split(","):
        for seed in range(args.seeds):
            if done is not None and done.filter((pl.col("shape") == name) & (pl.col("seed") == seed)).height:
                continue
            frame = pl.DataFrame(one_seed(SHAPES[name], seed, args.replicates))
            header = not args.out.exists()
            with args.out.open("a") as handle:
                frame.write_csv(handle, include_header=header)
    performance.record(args.out, "bench_design.py", sys.argv[1:] if argv is None else argv)
    results = pl.read_csv(args.out)
    with pl.Config(tbl_rows=100, tbl_width_chars=160, float_precision=2):
        print(performance.design_honesty(results))
    print(f"prediction honesty over {results['seed'].n_unique()} seeds in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
