#!/usr/bin/env python
"""Benchmark: how well does a plan of 10%, 15% or 30% of the families estimate a model's PGR?

Each complete model is held out in turn (leave one model out), and, reported apart, the
strongest one (highest mean PGR): the others are the complete models, `molp2s plan`'s design
is drawn from them, and the held-out model's answers on the planned families go to `molp2s
estimate`'s estimator. Printed per data set, budget and channel, over the held-out models
and seeds: the mean absolute error against the model's full-benchmark PGR, the coverage of
the 95% intervals, the mean half-width against the half-width `plan` predicted, and the
mean squared error against that of a plain random sample of as many families (its
estimate Σa/Σb over the sample, with a family-bootstrap interval), the baseline to beat:
both as drawn beside each plan (``mse_ratio``) and against its expected value computed from
the whole cohort (``mse_ratio_expected``, which is free of the baseline's own sampling noise);
then that expected-MSE ratio pooled over runs and channels, with a 95% interval from
resampling whole runs (``pooled_mse_ratio``).

Data sets: ``default``, the embedded data's simulated models; ``disagree``, a simulator
of this script's own in which each model finds its own families hard (a model × family
effect as large as the shared family difficulty), with a strong, a chance-level and a
ceiling model among them and cohorts of unequal size; and ``agree``, one in which the
models share a strong family difficulty and a cf answer follows the counterfactual more
often on a family the model reads well, so that the complete models do predict a new one
(the case the estimator's prediction is for). For each data set the script prints how much
of a held-out model's per-family variance the estimator's regression explains when fitted
on the whole cohort (``regression_bound``): what a perfectly fitted prediction of that form
would save against a random sample.

    .venv/bin/python benchmarks/bench_adaptive.py [--seeds 20] [--data default,disagree,agree]
        [--budgets 0.10,0.15,0.30] [--models N | --only-strongest] [--out benchmarks/results/adaptive.csv]

Each held-out model's plans have their own seeds (``plan_seed``), so that its runs and
another model's are independent samples of families. Rows are appended to ``--out`` as
each (data, model, budget, seed) finishes and skipped when
already there, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from molp2s_stats import performance
from molp2s_stats.stats import metrics, resample, subsample

SCHEMA = performance.ADAPTIVE_SCHEMA


# ---------------------------------------------------------------------------- data sets


def default_outcomes() -> pl.DataFrame:
    """family_outcomes of the embedded data (the database `make report` builds)."""
    from molp2s_stats import store
    from molp2s_stats.ingest.default_data import load_default_data

    with tempfile.TemporaryDirectory() as tmp:
        con = store.connect(Path(tmp) / "default.duckdb")
        load_default_data(con)
        outcomes = con.sql("SELECT * FROM family_outcomes").pl()
        con.close()
    return outcomes


def disagreeing_outcomes(seed: int = 7, families: int = 300, channels: int = 6) -> pl.DataFrame:
    """family_outcomes of models that disagree about which families are hard.

    Logit of a right answer: skill_m − d_f − e_mf (+ reliance_mc on source tasks), d_f ~ N(0, 1)
    shared, e_mf ~ N(0, 1) the model's own; cf answers follow the properties with probability
    responsiveness_mc, else are drawn as a shuffled answer. Channel c's cohort holds a random
    share of the families (90% down to 40%), so the cohorts are unequal.
    """
    rng = np.random.default_rng(seed)
    skills = {"strong": 2.5, "good": 1.2, "mid": 0.4, "weak": -0.6, "chance": -6.0, "ceiling": 6.0, "mixed": 0.8}
    d = rng.normal(0, 1, families)
    k = rng.integers(3, 7, families)
    shares = np.linspace(0.9, 0.4, channels)
    rows = []
    own = {m: rng.normal(0, 1, families) for m in skills}
    for c in range(channels):
        cohort = rng.random(families) < shares[c]
        for m, skill in skills.items():
            reliance, responsive = rng.uniform(0.0, 1.5), rng.uniform(0.1, 0.8)
            for f in np.flatnonzero(cohort):
                base = skill - d[f] - own[m][f]
                p = 1 / (1 + np.exp(-base))
                p_src = 1 / (1 + np.exp(-(base + reliance)))
                guess = 1 / k[f]
                y = lambda q: float(rng.random() < max(q, guess))  # noqa: E731, B023 (called in this iteration)
                cf = k[f] - 1
                follow = rng.random(cf) < responsive
                persist = ~follow & (rng.random(cf) < p)
                other = ~follow & ~persist
                rows.append(
                    (
                        m,
                        f"c{c}",
                        f"F{f:03d}",
                        y(p),
                        y(p_src),
                        y(p),
                        int(cf),
                        float(follow.sum()),
                        float(follow.mean()),
                        float(persist.mean()),
                        float(other.mean()),
                        int(k[f]),
                    )
                )
    return pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "model",
            "channel",
            "family_id",
            "y_p0",
            "y_source",
            "y_shuffled",
            "cf_tasks",
            "cf_correct",
            "cf_flip",
            "cf_persist",
            "cf_other",
            "n_candidates",
        ],
    )


def agreeing_outcomes(seed: int = 11, families: int = 389, channels: int = 6) -> pl.DataFrame:
    """family_outcomes of models that agree about which families are hard.

    Logit of a right answer: skill_m − d_f − e_mf (+ reliance_mc on source tasks), with a large
    shared d_f ~ N(0, 1.5) and a small own e_mf ~ N(0, 0.3); K = 4 candidates and three cf tasks
    a family, as in the embedded data. A cf answer follows the counterfactual with probability
    responsiveness_mc × σ(source logit): a model follows the properties on a family it reads,
    so a family's PGR rises with its ease (in the embedded data the two halves of PGR move
    against each other). The rest persist on the source or go elsewhere, half and half.
    Every family is in every channel's cohort, 389 of them, as many as the embedded data's.
    """
    rng = np.random.default_rng(seed)
    skills = {"strong": 2.0, "good": 1.2, "mixed": 0.8, "mid": 0.5, "fair": 0.2, "weak": -0.3, "poor": -1.0}
    d = rng.normal(0, 1.5, families)
    k, cf = 4, 3
    own = {m: rng.normal(0, 0.3, families) for m in skills}
    frames = []
    for c in range(channels):
        for m, skill in skills.items():
            reliance, responsive = rng.uniform(0.0, 1.5), rng.uniform(0.3, 0.9)
            base = skill - d - own[m]
            p, p_source = 1 / (1 + np.exp(-base)), 1 / (1 + np.exp(-(base + reliance)))
            follow = rng.random((families, cf)) < (responsive * p_source)[:, None]
            persist = ~follow & (rng.random((families, cf)) < 0.5)
            right = lambda q: (rng.random(families) < np.maximum(q, 1 / k)).astype(float)  # noqa: E731
            frames.append(
                pl.DataFrame(
                    {
                        "model": m,
                        "channel": f"c{c}",
                        "family_id": [f"F{f:03d}" for f in range(families)],
                        "y_p0": right(p),
                        "y_source": right(p_source),
                        "y_shuffled": right(p),
                        "cf_tasks": cf,
                        "cf_correct": follow.sum(1).astype(float),
                        "cf_flip": follow.mean(1),
                        "cf_persist": persist.mean(1),
                        "cf_other": (~follow & ~persist).mean(1),
                        "n_candidates": k,
                    }
                )
            )
    return pl.concat(frames).with_columns(pl.col("cf_tasks", "n_candidates").cast(pl.Int64))


def regression_bound(outcomes: pl.DataFrame) -> np.ndarray:
    """Per held-out model and channel, the share of its PGR's linearised per-family residual
    u = a − θ b that the estimator's regression (intercept, the other models' mean of a, their
    pooled correctness) explains when fitted on every family: the most that prediction, fitted
    perfectly, could cut a random sample's squared error by. Fitted on a sample, it saves less."""
    models = sorted(outcomes["model"].unique())
    channels = outcomes["channel"].unique(maintain_order=True).to_list()
    shares = []
    for held in models:
        complete = [m for m in models if m != held]
        for channel in channels:
            data = subsample.channel_data(outcomes, channel, [*complete, held], ("pgr",))
            a, b = data.a["pgr"], data.b["pgr"]
            pooled = subsample.pooled_difficulty(outcomes, complete, data.families)
            ok = np.isfinite(a[:, -1]) & np.isfinite(b[:, -1])
            with np.errstate(invalid="ignore"):
                x = subsample.design_matrix(np.nanmean(a[:, :-1], axis=1), np.nanmean(pooled, axis=1))[ok]
            y, weight = a[ok, -1], b[ok, -1]
            u = y - y.sum() / weight.sum() * weight
            fine = np.isfinite(x).all(axis=1)
            beta, *_ = np.linalg.lstsq(x[fine], u[fine], rcond=None)
            shares.append(1 - np.var(u[fine] - x[fine] @ beta) / np.var(u[fine]))
    return np.array(shares)


def oracle_share(families: int = 200_000, seed: int = 0) -> np.ndarray:
    """How much of a family's PGR variance its true difficulty explains under the simulator that
    made the embedded data (d_f ~ N(0, FAMILY_SD), K = 4, three cf tasks), per default model and a
    few channels: the most any prediction from the complete models could cut a random sample's
    squared error by, since they can at best learn d_f."""
    from scipy.special import expit

    from molp2s_stats.simulate import DEFAULT_MODELS, FAMILY_SD

    rng = np.random.default_rng(seed)
    d = rng.normal(0, FAMILY_SD, families)
    k, cf = 4, 3
    shares = []
    for model in DEFAULT_MODELS:
        for channel in ("ir", "dipole_norm", "h1_peaks", "all"):
            reliance = model.for_channel(model.reliance, channel)
            responsive = model.for_channel(model.responsiveness, channel)
            valid = 1 - model.invalid
            source = valid * expit(model.skill + reliance - d)
            # a cf answer follows the counterfactual, or is drawn as a shuffled answer: wrong with
            # probability 1 − σ(skill − d), then uniform over the K − 1 others, the counterfactual one
            flip = valid * (responsive + (1 - responsive) * (1 - expit(model.skill - d)) / (k - 1))
            drawn = 0.5 * (rng.random(families) < source) + 0.5 * (rng.random((families, cf)) < flip[:, None]).mean(1)
            shares.append(np.var(0.5 * source + 0.5 * flip) / np.var(drawn))
    return np.array(shares)


# ------------------------------------------------------------------------------ one run


def plan_seed(seed: int, held: str) -> int:
    """The plan's seed for this run: its own for each held-out model. A plan of one stratum
    depends only on the families and the seed, so with the seed alone every held-out model drew
    the same families and 7 models × 30 seeds were 30 samples, not 210 (their errors move
    together, since the models share a family difficulty)."""
    return int(resample.stream_seed(seed, held).generate_state(1)[0])


def run(outcomes: pl.DataFrame, held: str, budget: float, seed: int, known, truths: dict) -> list[tuple]:
    complete = sorted(m for m in outcomes["model"].unique() if m != held)
    channels = [c for c in outcomes["channel"].unique(maintain_order=True)]
    others = outcomes.filter(pl.col("model") != held)
    members = subsample.universe(others, channels)
    n = max(2, round(budget * len(members)))
    plan = subsample.make_plan(
        others, models=complete, channels=channels, families=n, seed=plan_seed(seed, held), known=known
    )
    predicted = dict(
        subsample.predicted_half_widths(known, members, plan["spread"].to_numpy(), [n])
        .select("channel", "half_width")
        .iter_rows()
    )
    chosen = set(plan.filter("selected")["family_id"])
    seen = outcomes.filter((pl.col("model") != held) | pl.col("family_id").is_in(chosen))
    estimate = subsample.estimate_model(seen, plan, model=held, complete=complete, channels=channels, metrics=("pgr",))
    # the baseline: as many families drawn at random, the plain ratio and its family bootstrap
    rng = resample.rng_for(seed, f"random-sample-{held}")
    sample = set(rng.choice(members, size=n, replace=False).tolist())
    rows = []
    for row in estimate.iter_rows(named=True):
        channel = row["channel"]
        data = subsample.channel_data(outcomes, channel, [held], ("pgr",))
        mask = np.array([f in sample for f in data.families])
        a, b = data.a["pgr"][mask], data.b["pgr"][mask]
        plain = a.sum() / b.sum() * 100 if b.sum() > 0 else np.nan
        low, high, *_ = resample.bootstrap_ratio(a, b, draws=500, seed=seed, key=channel, conf_level=0.95)
        rows.append(
            (
                held,
                budget,
                n,
                seed,
                channel,
                truths[(held, channel)],
                row["estimate"],
                row["conf_low"],
                row["conf_high"],
                predicted.get(channel),
                plain,
                (high[0] - low[0]) * 50,
                random_sample_mse(data.a["pgr"][:, 0], data.b["pgr"][:, 0], n * len(data.families) / len(members)),
                row["method"],
            )
        )
    return rows


def random_sample_mse(a: np.ndarray, b: np.ndarray, n: float) -> float:
    """The mean squared error (pp²) of the plain ratio Σa/Σb over a simple random sample of ``n``
    of these families, from the whole cohort: (1 − n/N) S²_u / n / b̄² with u = a − θ b, the
    textbook linearisation (Cochran 1977, §6.3). The empirical baseline's noise-free twin."""
    theta = a.sum() / b.sum()
    u = a - theta * b
    return float((1 - n / len(a)) * u.var(ddof=1) / n / b.mean() ** 2 * 100**2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--data", default="default,disagree,agree")
    parser.add_argument("--budgets", default="0.10,0.15,0.30")
    parser.add_argument("--models", type=int, default=0, help="hold out only the first N models (0: all)")
    parser.add_argument("--only-strongest", action="store_true", help="hold out the strongest model alone")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/adaptive.csv"))
    args = parser.parse_args(argv)
    if args.out:
        performance.record(args.out, __file__, argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    done = pl.read_csv(args.out, schema=SCHEMA) if args.out.exists() else pl.DataFrame(schema=SCHEMA)
    keys = set(done.select("data", "held_out", "budget", "seed").iter_rows())
    ranges, bounds = [], []
    for name in args.data.split(","):
        outcomes = {"default": default_outcomes, "disagree": disagreeing_outcomes, "agree": agreeing_outcomes}[name]()
        bounds.append((name, regression_bound(outcomes)))
        models = sorted(outcomes["model"].unique())
        full = metrics.compute_metrics(outcomes, draws=0, metrics=("pgr",))
        truths = {(m, c): e for m, c, e in full.select("model", "channel", "estimate").iter_rows()}
        mean_pgr = full.group_by("model").agg(pl.col("estimate").mean()).sort("estimate", descending=True)
        strongest = mean_pgr["model"][0]
        held_out = [] if args.only_strongest else models[: args.models] if args.models else models
        if strongest not in held_out:
            held_out.append(strongest)
        for held in held_out:
            complete = [m for m in models if m != held]
            others = outcomes.filter(pl.col("model") != held)
            channels = others["channel"].unique(maintain_order=True).to_list()
            known = None
            if held == strongest:  # the range `plan` prints, steadiest to noisiest complete model (seed 0's strata)
                known = subsample.predictability(others, complete, channels)
                members = subsample.universe(others, channels)
                for budget in budgets:
                    n = max(2, round(budget * len(members)))
                    plan = subsample.make_plan(
                        others, models=complete, channels=channels, families=n, seed=0, known=known
                    )
                    widths = subsample.predicted_half_widths(known, members, plan["spread"].to_numpy(), [n])
                    for channel, low, high in widths.select("channel", "half_width_low", "half_width_high").iter_rows():
                        ranges.append((name, budget, channel, low, high))
            for budget in budgets:
                for seed in range(args.seeds):
                    if (name, held, budget, seed) in keys:
                        continue
                    known = known or subsample.predictability(others, complete, channels)
                    started = time.perf_counter()
                    rows = run(outcomes, held, budget, seed, known, truths)
                    frame = pl.DataFrame(
                        [(name, r[0], r[0] == strongest, *r[1:]) for r in rows], schema=SCHEMA, orient="row"
                    )
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    with open(args.out, "a", encoding="utf-8") as handle:  # 4 decimals of pp: ample, and small
                        handle.write(
                            frame.with_columns(pl.col(pl.Float64).round(4)).write_csv(include_header=handle.tell() == 0)
                        )
                    print(
                        f"{name} {held} {budget:.0%} seed {seed}: {time.perf_counter() - started:.1f} s",
                        file=sys.stderr,
                    )
    shares = oracle_share()
    print(
        f"oracle bound (embedded data's simulator): a family's true difficulty explains {np.median(shares):.1%} of "
        f"its PGR variance (median over models and channels; {shares.min():.1%}–{shares.max():.1%}), so no "
        f"prediction can cut a random sample's MSE by more than that"
    )
    for name, share in bounds:
        print(
            f"regression bound ({name}): the estimator's regression, fitted on every family, explains "
            f"{np.median(share):.1%} of a held-out model's PGR residual (median over models and channels; "
            f"{share.min():.1%}–{share.max():.1%})"
        )
    results = pl.read_csv(args.out, schema=SCHEMA)
    pl.Config.set_tbl_rows(200)
    pl.Config.set_tbl_cols(20)
    pl.Config.set_tbl_width_chars(200)
    for label, part in (("leave one model out", results), ("strongest model held out", results.filter("strongest"))):
        table = performance.adaptive_by_channel(part).with_columns(pl.col(pl.Float64).round(2))
        print(f"\n{label}: per data set, budget and channel (PGR, pp; coverage in %)")
        print(table)
        overall = performance.adaptive_over_channels(part).with_columns(pl.col(pl.Float64).round(3))
        print(f"\n{label}: summary over channels")
        print(overall)
        print(
            f"\n{label}: MSE against a random sample's expected MSE, pooled over runs and channels "
            "(95% interval: runs resampled, seed 0)"
        )
        print(performance.pooled_mse_ratio(part).with_columns(pl.col(pl.Float64).round(3)))
    if ranges:
        span = pl.DataFrame(
            ranges, schema=["data", "budget", "channel", "predicted_low", "predicted_high"], orient="row"
        )
        realised = performance.adaptive_by_channel(results.filter("strongest")).join(
            span, on=["data", "budget", "channel"]
        )
        within = realised.with_columns(
            place=pl.when(pl.col("half_width") < pl.col("predicted_low"))
            .then(pl.lit("below"))
            .when(pl.col("half_width") > pl.col("predicted_high"))
            .then(pl.lit("above"))
            .otherwise(pl.lit("within"))
        )
        print(
            "\nstrongest model held out: realised half-width against the range `plan` prints "
            "(steadiest to noisiest complete model), channels per place"
        )
        print(
            within.group_by("data", "budget", maintain_order=True)
            .agg(
                channels=pl.len(),
                within=(pl.col("place") == "within").sum(),
                below=(pl.col("place") == "below").sum(),
                above=(pl.col("place") == "above").sum(),
                realised_over_low_min=(pl.col("half_width") / pl.col("predicted_low")).min(),
                realised_over_high_max=(pl.col("half_width") / pl.col("predicted_high")).max(),
            )
            .with_columns(pl.col(pl.Float64).round(2))
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
