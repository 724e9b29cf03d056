"""What the benchmark scripts measured: their results files, summarised, and where each was measured.

The scripts under ``benchmarks/`` write tidy results files to ``benchmarks/results/`` (a CSV
row per fit, cell or run, appended to and resumed). This module is what reads them: the
documentation's Performance page and the tests call it, and the scripts print the same
summaries from it, so that a summary is written once. It imports polars alone (scipy and
numpy inside the two functions that need them), so rendering the page imports no sampler.

Provenance: a script that writes results calls ``record(out, __file__)`` once per run, which
appends the command, the UTC date and the machine to ``<results file>.meta.json`` beside it
(one file may hold several runs); ``describe(out)`` is the line the page prints under each
table. For a file measured before the scripts recorded this, it gives the date git has for
the file and says the machine was not recorded. ``python -m molp2s_stats.performance RESULTS
SCRIPT [ARGUMENTS…]`` records a run whose output the caller saved (``make bench`` does).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import polars as pl

from molp2s_stats.units import PERCENT

# ---------------------------------------------------------------- provenance


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine() -> dict:
    """This machine: CPU model, usable cores, memory (GiB), system and Python version."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": usable,
        "memory_gib": _memory_gib(),
        "system": platform.platform(),
        "python": platform.python_version(),
    }


def meta_path(out: Path) -> Path:
    """The meta file beside a results file: ``<file>.meta.json``."""
    return out.with_name(out.name + ".meta.json")


def record(out: Path | None, script: str, arguments: list[str] | None = None) -> None:
    """Append this run of ``script`` (its arguments, default the command line's; the UTC date; the
    machine) to ``out``'s meta file; nothing when ``out`` is None."""
    if out is None:
        return
    out = Path(out)
    path = meta_path(out)
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    arguments = sys.argv[1:] if arguments is None else list(arguments)
    runs.append(
        {
            "command": " ".join(["python", f"benchmarks/{Path(script).name}", *arguments]),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"file": out.name, "runs": runs}, indent=1) + "\n")


def _git_date(path: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "log", "-1", "--format=%cs", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def describe(out: Path) -> str:
    """One line: which command measured ``out``, when, on what machine."""
    out = Path(out)
    path = meta_path(out)
    if path.exists():
        runs = json.loads(path.read_text())["runs"]
        dates = sorted({run["date"][:10] for run in runs})
        machines = {(run["machine"]["cpu"], run["machine"]["cores"], run["machine"]["memory_gib"]) for run in runs}
        on = "; ".join(f"{cores} cores of {cpu}, {memory} GiB" for cpu, cores, memory in sorted(machines))
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        return f"`{runs[-1]['command']}` ({len(runs)} run{'s' * (len(runs) > 1)}), {when}, on {on}"
    date = _git_date(out)
    return (f"committed {date}" if date else "date unknown") + (
        "; measured before the scripts recorded their machine (the project's 2-core development machines)"
    )


# ---------------------------------------------------------------- the fit on study and leaderboard shapes
# (benchmarks/bench_fit_shapes.py, results fit_shapes_*.csv: one row per shape × seed)

#: the leaderboard grid's sizes: models, channels, families
LEADERBOARD_SIZES = ((7, 14, 28, 56), (2, 5, 12, 15), (136, 389))
#: the effects a leaderboard shape is simulated with, by seed in turn (seed 1 the first): a name for the
#: page, and the simulator's options (``bayes.synthetic.Shape`` fields)
LEADERBOARD_EFFECTS = (
    ("the full benchmark's family effects", {}),
    ("no family effects", {"family_sd": 0.0, "family_channel_sd": 0.0}),
    ("large family effects", {"family_sd": 1.5, "family_channel_sd": 1.0}),
    ("one model at chance and one at the ceiling", {"at_chance": 1, "at_ceiling": 1}),
)


def leaderboard_shape(models: int, channels: int, families: int) -> str:
    """A leaderboard shape's name in the results files: ``lb-MxCxF``."""
    return f"lb-{models}x{channels}x{families}"


def leaderboard_effects(seed: int) -> str:
    """The name of the effects a leaderboard shape has under ``seed``."""
    return LEADERBOARD_EFFECTS[(seed - 1) % len(LEADERBOARD_EFFECTS)][0]


def with_leaderboard_size(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` with ``models``, ``channels`` and ``families`` read from its leaderboard shapes' names
    (null for a study shape)."""
    parts = pl.col("shape").str.extract_groups(r"^lb-(?<models>\d+)x(?<channels>\d+)x(?<families>\d+)$")
    return table.with_columns(parts.struct.field("models", "channels", "families").cast(pl.Int64))


def fit_shapes(table: pl.DataFrame) -> pl.DataFrame:
    """One row per shape: fits, the share that passed the gate (and on the first attempt), the time
    (median, slowest), the 90% HDIs' coverage of the truth, and the parameter slowest to mix most often."""
    return table.group_by("shape", maintain_order=True).agg(
        fits=pl.len(),
        passed_pct=(PERCENT * pl.col("passed").mean()).round(0),
        first_attempt_pct=(PERCENT * (pl.col("passed") & (pl.col("attempts") == 1)).mean()).round(0),
        most_attempts=pl.col("attempts").max(),
        median_seconds=pl.col("seconds").median().round(0),
        slowest_seconds=pl.col("seconds").max().round(0),
        covered_reliance_pct=(PERCENT * pl.col("covered_reliance").mean()).round(0),
        covered_responsiveness_pct=(PERCENT * pl.col("covered_responsiveness").mean()).round(0),
        slowest_parameter=pl.col("ess_bulk_min_parameter").mode().first(),
    )


def leaderboard_by_models(table: pl.DataFrame) -> pl.DataFrame:
    """One row per number of models on the leaderboard grid: shapes, seeds, fits, fits that passed the
    gate, the median and the slowest fit's seconds."""
    return (
        with_leaderboard_size(table)
        .filter(pl.col("models").is_not_null())
        .group_by("models")
        .agg(
            shapes=pl.col("shape").n_unique(),
            seeds=pl.col("seed").n_unique(),
            fits=pl.len(),
            passed=pl.col("passed").sum(),
            median_seconds=pl.col("seconds").median(),
            slowest_seconds=pl.col("seconds").max(),
        )
        .sort("models")
    )


# ---------------------------------------------------------------- what a fit costs
# (benchmarks/bench_fit_cost.py, results fit_cost.csv: one row per size × seed)


def growth(table: pl.DataFrame) -> tuple[float, float] | None:
    """Slope of log(seconds per effective draw) on log(cells), and its standard error; None with fewer
    than two sizes."""
    from scipy.stats import linregress

    usable = table.filter(pl.col("min_ess") > 0)
    if usable["cells"].n_unique() < 2:
        return None
    fitted = linregress(
        [math.log(c) for c in usable["cells"]], [math.log(s / e) for s, e in zip(usable["seconds"], usable["min_ess"])]
    )
    return float(fitted.slope), float(fitted.stderr)


# ---------------------------------------------------------------- frontier leaderboards
# (benchmarks/bench_bayes_frontier.py, results bayes_frontier.csv: one row per seed × cell, and per pair)


def frontier_coverage(frame: pl.DataFrame) -> pl.DataFrame:
    """Per metric: the true cells, the share their 90% HDIs covered (%), and the mean width (pp)."""
    cells = frame.filter(pl.col("kind") == "cell")
    return (
        cells.group_by("metric")
        .agg(
            pl.len().alias("cells"),
            (PERCENT * pl.col("covered").mean()).round(1).alias("covered_pct"),
            (pl.col("conf_high") - pl.col("conf_low")).mean().round(2).alias("mean_width_pp"),
        )
        .sort("metric")
    )


# ---------------------------------------------------------------- simulation-based calibration
# (benchmarks/bench_sbc.py, results sbc_ranks.csv: one row per replicate × quantity, its rank among the draws)


def sbc_uniformity(ranks: pl.DataFrame, *, bins: int = 10) -> pl.DataFrame:
    """Per quantity, a χ² test that its ranks are uniform over ``bins`` equal bins; one row per quantity:
    ranks, replicates, ``chi2``, ``p_value``, and the emptiest and fullest bin's count."""
    import numpy as np
    from scipy import stats

    rows = []
    for (quantity,), part in ranks.group_by("quantity", maintain_order=True):
        edges = np.linspace(0, part["ranked_draws"][0] + 1, bins + 1)
        counts, _ = np.histogram(part["rank"].to_numpy(), bins=edges)
        test = stats.chisquare(counts)
        rows.append(
            (
                quantity,
                part.height,
                part["replicate"].n_unique(),
                float(test.statistic),
                float(test.pvalue),
                int(counts.min()),
                int(counts.max()),
            )
        )
    return pl.DataFrame(
        rows,
        schema={
            "quantity": pl.String,
            "ranks": pl.Int64,
            "replicates": pl.Int64,
            "chi2": pl.Float64,
            "p_value": pl.Float64,
            "bin_min": pl.Int64,
            "bin_max": pl.Int64,
        },
        orient="row",
    )


# ---------------------------------------------------------------- intervals near 0% and 100%
# (benchmarks/bench_intervals.py, results intervals.csv: one row per grid cell × model × metric × rule)

INTERVALS_SCHEMA = {
    "truth": pl.Float64,
    "families": pl.Int64,
    "spread": pl.String,
    "samples": pl.Int64,
    "model": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "rule": pl.String,
    "replicates": pl.Int64,
    "covered": pl.Int64,
    "mean_width": pl.Float64,
    "points": pl.Int64,
    "score_share": pl.Float64,
}


def interval_coverage(frame: pl.DataFrame, by: str) -> pl.DataFrame:
    """Coverage (%) and mean width (pp) per metric × ``by`` × rule, pooled over cells, with the cells' range."""
    cell = frame.with_columns((PERCENT * pl.col("covered") / pl.col("replicates")).alias("cov"))
    return (
        cell.group_by("metric", by, "rule")
        .agg(
            (PERCENT * pl.col("covered").sum() / pl.col("replicates").sum()).round(1).alias("coverage"),
            pl.col("cov").min().round(1).alias("lowest_cell"),
            pl.col("cov").max().round(1).alias("highest_cell"),
            ((pl.col("mean_width") * pl.col("replicates")).sum() / pl.col("replicates").sum()).round(2).alias("width"),
            (PERCENT * pl.col("points").sum() / pl.col("replicates").sum()).round(1).alias("points_pct"),
        )
        .sort("metric", by, "rule")
    )


def interval_coverage_wide(summary: pl.DataFrame, by: str) -> pl.DataFrame:
    """One row per metric × ``by``; coverage [lowest–highest cell] and width per rule."""
    out = summary.with_columns(
        pl.format("{} [{}–{}] w {}", "coverage", "lowest_cell", "highest_cell", "width").alias("cell")
    )
    return out.pivot(on="rule", index=["metric", by], values="cell").sort("metric", by)


# ---------------------------------------------------------------- a new model on a fraction of the benchmark
# (benchmarks/bench_adaptive.py, results adaptive.csv: one row per data set × held-out model × budget × seed ×
# channel; benchmarks/bench_estimate_metrics.py, results estimate_metrics.csv: the same × metric)

ADAPTIVE_SCHEMA = {
    "data": pl.String,
    "held_out": pl.String,
    "strongest": pl.Boolean,
    "budget": pl.Float64,
    "families": pl.Int64,
    "seed": pl.Int64,
    "channel": pl.String,
    "truth": pl.Float64,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "predicted_half_width": pl.Float64,
    "random_estimate": pl.Float64,
    "random_half_width": pl.Float64,
    "random_mse": pl.Float64,
    "method": pl.String,
}


def adaptive_by_channel(results: pl.DataFrame) -> pl.DataFrame:
    """One row per data set × budget × channel, over held-out models and seeds: runs, mean absolute error,
    coverage (%), half-widths (realised, predicted, a random sample's), MSE ratios against a random sample
    (drawn, expected) and the predicted half-width over the realised one."""
    return (
        results.with_columns(
            error=pl.col("estimate") - pl.col("truth"),
            random_error=pl.col("random_estimate") - pl.col("truth"),
            covered=(pl.col("conf_low") <= pl.col("truth")) & (pl.col("truth") <= pl.col("conf_high")),
            half_width=(pl.col("conf_high") - pl.col("conf_low")) / 2,
        )
        .group_by("data", "budget", "channel", maintain_order=True)
        .agg(
            runs=pl.len(),
            mae=pl.col("error").abs().mean(),
            coverage=pl.col("covered").mean() * PERCENT,
            half_width=pl.col("half_width").mean(),
            predicted=pl.col("predicted_half_width").mean(),
            random_half_width=pl.col("random_half_width").mean(),
            mse_ratio=(pl.col("error") ** 2).mean() / (pl.col("random_error") ** 2).mean(),
            mse_ratio_expected=(pl.col("error") ** 2).mean() / pl.col("random_mse").mean(),
        )
        .with_columns(predicted_over_realised=pl.col("predicted") / pl.col("half_width"))
    )


def adaptive_over_channels(results: pl.DataFrame) -> pl.DataFrame:
    """``adaptive_by_channel`` per data set and budget, over its channels: coverage (lowest, mean), MSE
    ratios, half-width against a random sample's, and the plan's predicted half-width over the realised one."""
    return (
        adaptive_by_channel(results)
        .group_by("data", "budget", maintain_order=True)
        .agg(
            pl.col("runs").sum(),
            pl.col("coverage").min().alias("coverage_min"),
            pl.col("coverage").mean(),
            pl.col("mse_ratio").median().alias("mse_ratio_median"),
            pl.col("mse_ratio").max().alias("mse_ratio_max"),
            pl.col("mse_ratio_expected").median().alias("mse_ratio_expected_median"),
            pl.col("mse_ratio_expected").max().alias("mse_ratio_expected_max"),
            (pl.col("half_width") / pl.col("random_half_width")).mean().alias("half_width_vs_random"),
            pl.col("predicted_over_realised").min().alias("predicted_over_realised_min"),
            pl.col("predicted_over_realised").max().alias("predicted_over_realised_max"),
        )
    )


def pooled_mse_ratio(results: pl.DataFrame, seed: int = 0) -> pl.DataFrame:
    """Per data set and budget: Σ error² over every run and channel against Σ of a random sample's
    expected MSE, with a 95% interval from resampling whole runs (a run's channels share its
    families, so their errors move together and are resampled as one)."""
    import numpy as np
    from scipy import stats

    per_run = (
        results.with_columns(squared=(pl.col("estimate") - pl.col("truth")) ** 2)
        .group_by("data", "budget", "held_out", "seed", maintain_order=True)
        .agg(pl.col("squared").sum(), pl.col("random_mse").sum())
    )
    rows = []
    for (name, budget), part in per_run.group_by("data", "budget", maintain_order=True):
        squared, expected = part["squared"].to_numpy(), part["random_mse"].to_numpy()
        if part.height < 2:  # one run: nothing to resample
            rows.append((name, budget, part.height, squared.sum() / expected.sum(), np.nan, np.nan))
            continue
        interval = stats.bootstrap(
            (squared, expected),
            lambda s, e, axis=-1: s.sum(axis) / e.sum(axis),
            paired=True,
            vectorized=True,
            n_resamples=2000,
            method="percentile",
            random_state=np.random.default_rng(seed),
        ).confidence_interval
        rows.append((name, budget, part.height, squared.sum() / expected.sum(), interval.low, interval.high))
    return pl.DataFrame(rows, schema=["data", "budget", "runs", "mse_ratio", "conf_low", "conf_high"], orient="row")


def estimate_coverage(results: pl.DataFrame) -> pl.DataFrame:
    """One row per data set × metric × budget: runs, the coverage of the full-benchmark value by the 95%
    intervals (%), the share of intervals that are a single point (%), and the mean half-width."""
    return (
        results.filter(pl.col("truth").is_not_null() & pl.col("estimate").is_not_null())
        .with_columns(
            covered=(pl.col("conf_low") <= pl.col("truth") + 1e-6) & (pl.col("truth") <= pl.col("conf_high") + 1e-6),
            half_width=(pl.col("conf_high") - pl.col("conf_low")) / 2,
        )
        .group_by("data", "metric", "budget", maintain_order=True)
        .agg(
            runs=pl.len(),
            coverage=pl.col("covered").mean() * PERCENT,
            point=(pl.col("half_width") == 0).mean() * PERCENT,
            half_width=pl.col("half_width").mean(),
        )
        .sort("data", "metric", "budget")
    )


def partial_coverage(summary: pl.DataFrame) -> pl.DataFrame:
    """benchmarks/bench_partial_coverage.py's rows side by side: per shape × families × share answered,
    the coverage (%) of the rate over new families by the package's rule and by the design's error alone
    (the rule before), the package's coverage of the cohort's own rate, and both mean widths (pp).

    >>> rows = pl.DataFrame({"shape": ["a", "a"], "families": [60, 60], "share": [1.0, 1.0],
    ...     "rule": ["package", "design_only"], "replicates": [10, 10], "population_coverage": [96.0, 0.0],
    ...     "cohort_coverage": [100.0, 40.0], "width": [18.0, 0.0], "points": [0.0, 100.0], "seed": [0, 0]})
    >>> partial_coverage(rows).row(0)
    ('a', 60, 1.0, 10, 96.0, 0.0, 100.0, 18.0, 0.0)
    """
    keys = ["shape", "families", "share"]
    package = summary.filter(pl.col("rule") == "package").select(
        *keys, "replicates", pl.col("population_coverage").alias("coverage"), "cohort_coverage", "width"
    )
    before = summary.filter(pl.col("rule") == "design_only").select(
        *keys, pl.col("population_coverage").alias("coverage_design_only"), pl.col("width").alias("width_design_only")
    )
    return package.join(before, on=keys, how="left", maintain_order="left").select(
        *keys, "replicates", "coverage", "coverage_design_only", "cohort_coverage", "width", "width_design_only"
    )


def density_backends(results: pl.DataFrame) -> pl.DataFrame:
    """benchmarks/bench_density_backends.py's step times side by side: per size, µs a leapfrog step a
    chain for each gradient with 1 and 4 chains at once, and how many times faster numba is with 4.

    >>> rows = pl.DataFrame({"size": ["a"] * 4, "cells": [840] * 4, "parameters": [151] * 4,
    ...     "gradient": ["jax", "jax", "numba", "numba"], "chains": [1, 4, 1, 4],
    ...     "step_us": [200.0, 600.0, 25.0, 60.0], "run_seconds": [None] * 4})
    >>> density_backends(rows).row(0)
    ('a', 840, 151, 200.0, 25.0, 600.0, 60.0, 10.0)
    """
    steps = results.filter(pl.col("step_us").is_not_null()).with_columns(key=pl.format("{}_{}", "gradient", "chains"))
    wide = steps.pivot(on="key", index=["size", "cells", "parameters"], values="step_us")
    return wide.select(
        "size",
        "cells",
        "parameters",
        pl.col("jax_1").alias("jax_1_chain"),
        pl.col("numba_1").alias("numba_1_chain"),
        pl.col("jax_4").alias("jax_4_chains"),
        pl.col("numba_4").alias("numba_4_chains"),
        (pl.col("jax_4") / pl.col("numba_4")).alias("numba_speedup_4_chains"),
    ).sort("cells")


def rank_range_errors(results: pl.DataFrame) -> pl.DataFrame:
    """One row per leaderboard (models × families × family sizes) of benchmarks/bench_rank_ranges.py:
    replicates; the share with any false separation (%, with its 95% Clopper–Pearson interval: the
    family-wise error the rank ranges promise to keep at or below 5%); a false separation of the
    tied top block (%); and the power on pairs at least 5 pp apart (% of them separated)."""
    from scipy import stats

    summary = (
        results.group_by("models", "families", "sizes")
        .agg(
            replicates=pl.len(),
            false_count=pl.col("any_false").sum(),
            top_false=pl.col("top_tied_separated").mean() * PERCENT,
            power=pl.col("separated_apart").sum() / pl.col("pairs_apart").sum() * PERCENT,
        )
        .sort("models", "families", "sizes")
    )
    ends = [
        stats.binomtest(int(k), int(n)).proportion_ci(0.95)
        for k, n in zip(summary["false_count"], summary["replicates"])
    ]
    return summary.select(
        "models",
        "families",
        "sizes",
        "replicates",
        (pl.col("false_count") / pl.col("replicates") * PERCENT).alias("any_false"),
        pl.Series("any_false_low", [e.low * PERCENT for e in ends]),
        pl.Series("any_false_high", [e.high * PERCENT for e in ends]),
        "top_false",
        "power",
    )


def verdict_errors(results: pl.DataFrame) -> pl.DataFrame:
    """One row per cell (families × family sizes × base rate × margin) of
    benchmarks/bench_equivalence.py: the replicates a truth; ``equivalent_at_margin``, the share of
    studies whose true difference is exactly the margin (the worse of +margin and −margin) called
    equivalent (%, with its 95% Clopper–Pearson interval; the two one-sided tests promise at most
    5%); ``difference_at_zero``, the share with no true difference called ahead or behind (%, with
    its interval; at most 5% promised); and ``equivalent_at_zero``, the power to call no difference
    equivalent (%). ``margin`` in pp."""
    from scipy import stats

    def share(frame: pl.DataFrame, words: tuple[str, ...]) -> tuple[int, int]:
        return int(frame["verdict"].is_in(list(words)).sum()), frame.height

    rows = []
    for (families, sizes, base, margin), cell in results.sort("families", "sizes", "base", "margin").group_by(
        "families", "sizes", "base", "margin", maintain_order=True
    ):
        edges = [share(cell.filter(pl.col("truth") == side), ("equivalent",)) for side in (-1, 1)]
        edge = max((kn for kn in edges if kn[1]), key=lambda kn: kn[0] / kn[1], default=(0, 0))
        zero = cell.filter(pl.col("truth") == 0)
        moved = share(zero, ("ahead", "behind"))
        row = {"families": families, "sizes": sizes, "base": base * PERCENT, "margin": margin * PERCENT}
        row["replicates"] = zero.height
        for name, (k, n) in (("equivalent_at_margin", edge), ("difference_at_zero", moved)):
            interval = stats.binomtest(k, n).proportion_ci(0.95) if n else None
            row[name] = k / n * PERCENT if n else None
            row[f"{name}_low"] = interval.low * PERCENT if interval else None
            row[f"{name}_high"] = interval.high * PERCENT if interval else None
        equivalent, n = share(zero, ("equivalent",))
        row["equivalent_at_zero"] = equivalent / n * PERCENT if n else None
        rows.append(row)
    return pl.DataFrame(rows)


if __name__ == "__main__":
    # python -m molp2s_stats.performance RESULTS SCRIPT [ARGUMENTS…]: record a run whose output was
    # saved by the caller (`make bench` saves each script's printout)
    record(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])


def design_honesty(results: pl.DataFrame) -> pl.DataFrame:
    """One row per shape × metric × target of benchmarks/bench_design.py, over its seeds: how a design's
    realised precision compares with the prediction. For a half-width the ratio realised / predicted
    (median and 10th–90th percentiles) and the % of seeds within ±15%; for a power the gap realised −
    predicted in pp and the % within ±5 pp, also against the power the design was planned on
    (``within_planned``); the median families and the most answers a task the designs chose.

    >>> rows = pl.DataFrame({"shape": ["a"] * 2, "metric": ["pgr"] * 2, "target": ["half_width"] * 2,
    ...     "predicted": [4.0, 4.0], "planned": [3.9, 3.9], "realised": [4.2, 3.0], "families": [100, 120],
    ...     "samples": [1, 2]})
    >>> design_honesty(rows).row(0)  # 4.2/4 = 1.05 and 3/4 = 0.75: one of two within ±15%
    ('a', 'pgr', 'half_width', 2, 0.9, 0.75, 1.05, 50.0, 50.0, 110.0, 2)
    """
    ratio = pl.col("target") == "half_width"

    def gap(column: str) -> pl.Expr:
        return pl.when(ratio).then(pl.col("realised") / pl.col(column)).otherwise(pl.col("realised") - pl.col(column))

    def within(column: str) -> pl.Expr:
        return pl.when(ratio).then((gap(column) - 1).abs() <= 0.15).otherwise(gap(column).abs() <= 5)

    return (
        results.with_columns(
            gap("predicted").alias("gap"), within("predicted").alias("ok"), within("planned").alias("ok_planned")
        )
        .group_by("shape", "metric", "target", maintain_order=True)
        .agg(
            pl.len().alias("seeds"),
            pl.col("gap").median().alias("median"),
            pl.col("gap").quantile(0.1, interpolation="lower").alias("p10"),
            pl.col("gap").quantile(0.9, interpolation="higher").alias("p90"),
            (PERCENT * pl.col("ok").mean()).alias("within"),
            (PERCENT * pl.col("ok_planned").mean()).alias("within_planned"),
            pl.col("families").median().alias("families"),
            pl.col("samples").max().alias("max_samples"),
        )
    )
