"""The benchmark's metrics per model × channel, with family cluster bootstrap intervals.

Every metric is a ratio of sums over the cohort's families, ``Σ a_f / Σ b_f``, read
off the ``family_outcomes`` view (one row per model × channel × family):

=================  ===========================================  ==========================
metric             a_f                                          b_f
=================  ===========================================  ==========================
acc_p0             y(none_f)                                    1
acc_source         y(source_f)                                  1
acc_shuffled       y(shuffled_f)                                1
reliance_margin    y(source_f) − y(shuffled_f)                  1
cf_accuracy        Σ_k y(cf_f,k)                                number of cf tasks
pgr                ½ y(source_f) + ½ mean_k y(cf_f,k)           1 if the family has a cf task
cfr                y(source_f) · mean_k 1[choice = k]           y(source_f) if it has a cf task
persist            y(source_f) · mean_k 1[choice = s_f]         same
other              y(source_f) · mean_k 1[other or invalid]     same
random_baseline    1 / K_f                                      1
=================  ===========================================  ==========================

so one weight vector per bootstrap replicate (family multiplicities) gives every
metric of every model in two matrix products. Everything here is a proportion; the frames
returned show rates in % and differences in pp (``units``).

Each row also carries ``baseline``: the metric's value for a uniform random guesser on the
same cohort, ``Σ E[a_f] / Σ E[b_f]`` with every answer a uniform draw from the family's K_f
candidates (`baseline_components`). It is 1/K for accuracies and PGR, 0 for RM, and, per
initially right source, 1/K for CFR and Persist and (K−2)/K for Other.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import polars as pl
from scipy import stats

from .. import units
from ..defaults import DEFAULT_DRAWS
from ..errors import UsageError, require_known
from ..glossary import METRICS
from . import intervals, resample

RESULT_SCHEMA = {
    "model": pl.String,
    "channel": pl.String,
    "metric": pl.String,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "conf_level": pl.Float64,
    "n": pl.Int64,
    "method": pl.String,
    "draws": pl.Int64,
    "draws_undefined": pl.Int64,
    "seed": pl.Int64,
    "invalid": pl.String,
    "baseline": pl.Float64,
}


#: The columns of an estimate with its interval: proportions inside, % (pp) in the frames returned.
ESTIMATE_COLUMNS = ("estimate", "conf_low", "conf_high")

INVALID_RULES = ("wrong", "exclude")
# The family_outcomes columns that the "exclude" rule reads from their *_valid twins.
_VALID_TWINS = ("y_p0", "y_source", "y_shuffled", "cf_tasks", "cf_correct", "cf_flip", "cf_persist", "cf_other")


# earlier versions called a family's share of cf answers that follow the counterfactual
# "cf_recovery"; frames built with that name still compute
_RENAMED = {"cf_recovery": "cf_flip", "cf_recovery_valid": "cf_flip_valid"}


def _current_names(outcomes: pl.DataFrame) -> pl.DataFrame:
    return outcomes.rename(
        {old: new for old, new in _RENAMED.items() if old in outcomes.columns and new not in outcomes.columns}
    )


def metric_components(metric: str) -> tuple[pl.Expr, pl.Expr]:
    """(a_f, b_f) of the table above as polars expressions over family_outcomes.

    A family whose input is missing (null: every answer it needs was invalid and left
    out) gets b_f = 0, so it leaves that metric and its n; under the default rule
    (invalid = wrong) no cohort input is ever null.
    """
    has_cf = (pl.col("cf_tasks").fill_null(0) > 0).cast(pl.Float64)
    src = pl.col("y_source")
    known = lambda *names: pl.all_horizontal([pl.col(n).is_not_null() for n in names]).cast(pl.Float64)  # noqa: E731
    weighted = lambda share: (  # noqa: E731
        src.fill_null(0.0) * pl.col(share).fill_null(0.0),
        src.fill_null(0.0) * has_cf,
    )
    return {
        "acc_p0": (pl.col("y_p0").fill_null(0.0), known("y_p0")),
        "acc_source": (src.fill_null(0.0), known("y_source")),
        "acc_shuffled": (pl.col("y_shuffled").fill_null(0.0), known("y_shuffled")),
        "reliance_margin": ((src - pl.col("y_shuffled")).fill_null(0.0), known("y_source", "y_shuffled")),
        "cf_accuracy": (pl.col("cf_correct").fill_null(0.0), pl.col("cf_tasks").fill_null(0).cast(pl.Float64)),
        "pgr": (has_cf * (0.5 * src + 0.5 * pl.col("cf_flip")).fill_null(0.0), has_cf * known("y_source")),
        "cfr": weighted("cf_flip"),
        "persist": weighted("cf_persist"),
        "other": weighted("cf_other"),
        "random_baseline": (1.0 / pl.col("n_candidates"), pl.lit(1.0)),
    }[metric]


def baseline_components(metric: str) -> tuple[pl.Expr, pl.Expr]:
    """(E[a_f], E[b_f]) of `metric_components` for a uniform random guesser.

    Every answer is an independent uniform draw from the family's K_f candidates, so a
    task is right with probability 1/K; a cf answer names the counterfactual, the source
    candidate, or one of the K − 2 others. The ratio of the expected sums is the value the
    metric, itself a ratio of sums, takes for such a guesser on a large cohort; it needs
    nothing but each family's K_f and cf tasks, so it is the same for every model.
    """
    guess = 1.0 / pl.col("n_candidates")
    has_cf = (pl.col("cf_tasks").fill_null(0) > 0).cast(pl.Float64)
    one = pl.lit(1.0)
    return {
        "acc_p0": (guess, one),
        "acc_source": (guess, one),
        "acc_shuffled": (guess, one),
        "reliance_margin": (pl.lit(0.0), one),
        "cf_accuracy": (guess * pl.col("cf_tasks").fill_null(0), pl.col("cf_tasks").fill_null(0).cast(pl.Float64)),
        "pgr": (has_cf * guess, has_cf),
        # weighted by y(source), whose expectation is 1/K: E[y_src · share] = 1/K · E[share]
        "cfr": (has_cf * guess * guess, has_cf * guess),
        "persist": (has_cf * guess * guess, has_cf * guess),
        "other": (has_cf * guess * (1.0 - 2.0 * guess), has_cf * guess),
        "random_baseline": (guess, one),
    }[metric]


def random_baselines(outcomes: pl.DataFrame, metrics: tuple[str, ...] = METRICS) -> pl.DataFrame:
    """The uniform guesser's value of each metric per channel (``channel, metric, baseline``,
    as proportions), from each cohort family once."""
    # sorted, so the sums (and so the figures, to the last bit) do not depend on row order
    families = outcomes.sort("channel", "family_id", "model").unique(
        ["channel", "family_id"], keep="first", maintain_order=True
    )
    parts = {
        f"{metric}:{side}": expr for metric in metrics for side, expr in zip(("a", "b"), baseline_components(metric))
    }
    # columns first: a literal summed inside an aggregation is not broadcast over the rows
    sums = families.select("channel", **parts).group_by("channel", maintain_order=True).agg(pl.col(list(parts)).sum())
    return (
        pl.concat(
            [
                sums.select(
                    "channel",
                    pl.lit(metric).alias("metric"),
                    pl.when(pl.col(f"{metric}:b") > 0)
                    .then(pl.col(f"{metric}:a") / pl.col(f"{metric}:b"))
                    .alias("baseline"),
                )
                for metric in metrics
            ]
        )
        if sums.height
        else pl.DataFrame(schema={"channel": pl.String, "metric": pl.String, "baseline": pl.Float64})
    )


def apply_invalid_rule(outcomes: pl.DataFrame, invalid: str) -> pl.DataFrame:
    """family_outcomes under one rule for invalid answers: ``wrong`` (counted as wrong, the
    paper's rule) or ``exclude`` (left out: each input read from its ``*_valid`` column)."""
    if invalid not in INVALID_RULES:
        raise UsageError(f"invalid must be one of {', '.join(INVALID_RULES)}, got {invalid!r}")
    if invalid == "wrong":
        return outcomes
    missing = [f"{c}_valid" for c in _VALID_TWINS if f"{c}_valid" not in outcomes.columns]
    if missing:
        raise UsageError(f"invalid='exclude' needs the family_outcomes columns {missing}")
    return outcomes.with_columns(pl.col(f"{c}_valid").alias(c) for c in _VALID_TWINS)


def read_channels_and_models(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """The channels with tasks, in display order, and the models with responses, by name.

    Read off the staging views, not the (costlier) cohort views; a channel whose cohort is
    empty is still listed, so that it is reported rather than dropped.
    """
    channels = con.sql(
        """SELECT DISTINCT t.channel, c.position FROM stg_tasks AS t JOIN stg_channels AS c USING (channel)
           ORDER BY c.position"""
    ).pl()["channel"]
    models = con.sql("SELECT model FROM stg_models ORDER BY model").pl()["model"]
    return list(channels), list(models)


def read_family_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every family of the benchmark, by id (cohort or not)."""
    return set(con.sql("SELECT family_id FROM stg_families").pl()["family_id"])


def read_dropped_families(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The families left out of each channel's cohort, with the reason: one row per channel × family,
    channels in display order."""
    return con.sql(
        """SELECT c.channel, c.family_id, c.input_validated, c.complete_coverage, c.drop_reason
           FROM cohort AS c LEFT JOIN stg_channels AS ch USING (channel)
           WHERE NOT c.in_cohort ORDER BY ch.position NULLS LAST, c.channel, c.family_id"""
    ).pl()


def read_channel_groups(con: duckdb.DuckDBPyConnection) -> list[tuple[str, list[str]]]:
    """The channel table's groups (electronic, vibrational, …) in display order, each with
    its channels in display order: how the paper groups a leaderboard's columns."""
    return con.execute(
        'SELECT "group", list(channel ORDER BY position) FROM stg_channels GROUP BY "group" ORDER BY min(position)'
    ).fetchall()


def read_channel_table(con: duckdb.DuckDBPyConnection | None = None) -> pl.DataFrame:
    """How channels are shown: ``channel, group, subgroup, column_label, name`` in display order.

    From the database (``stg_channels``), or without one from the package's channel table.
    """
    if con is not None:
        return con.sql('SELECT channel, "group", subgroup, column_label, name FROM stg_channels ORDER BY position').pl()
    from ..ingest.benchmark import DEFAULT_CHANNELS, read_table

    return read_table(DEFAULT_CHANNELS, "channels").select(
        "channel", "group", "subgroup", pl.coalesce("column_label", "name").alias("column_label"), "name"
    )


def channel_names(channel_table: pl.DataFrame | None = None) -> dict[str, str]:
    """channel → its name, from a channel table (``read_channel_table``'s; default the package's)."""
    table = channel_table if channel_table is not None else read_channel_table()
    return dict(table.select("channel", "name").iter_rows())


def read_partial_models(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The models run on part of the benchmark (``model, families_answered, families_total``).

    A partial model never shrinks the cohort (the complete models define it); it is scored
    on the cohort families it answered in full, which its rows' ``n`` counts.
    """
    try:
        return con.sql(
            "SELECT model, families_answered, families_total FROM model_coverage "
            "WHERE partial AND NOT defines_cohort ORDER BY model"
        ).pl()
    except duckdb.CatalogException:  # a database made before partial models were read
        return pl.DataFrame(schema={"model": pl.String, "families_answered": pl.Int64, "families_total": pl.Int64})


def partial_note(partial: pl.DataFrame) -> str | None:
    """One sentence naming the partial models and their coverage; None when there are none.

    >>> partial_note(pl.DataFrame({"model": ["new"], "families_answered": [58], "families_total": [389]}))
    'partial models (run on part of the benchmark, scored on the cohort families they answered in full; n counts them): new (58 of 389 families)'
    """
    if partial.height == 0:
        return None
    listed = ", ".join(f"{m} ({a} of {t} families)" for m, a, t in partial.iter_rows())
    return (
        "partial models (run on part of the benchmark, scored on the cohort families they answered in full; "
        f"n counts them): {listed}"
    )


def in_channel_order(frame: pl.DataFrame, channel_table: pl.DataFrame | None = None) -> pl.DataFrame:
    """``frame``'s rows with its ``channel`` column in the channel table's display order (the
    paper's: electronic, vibrational, NMR, bundles), the order of rows within a channel kept;
    channels the table does not know ('none', 'all') come after, in the frame's order.

    >>> frame = pl.DataFrame({"channel": ["nmr_bundle", "all", "dipole_norm", "nmr_bundle"], "i": [0, 1, 2, 3]})
    >>> in_channel_order(frame)["i"].to_list()
    [2, 0, 3, 1]
    """
    table = channel_table if channel_table is not None else read_channel_table()
    position = {c: i for i, c in enumerate(table["channel"])}
    unknown = {
        c: len(position) + i
        for i, c in enumerate(c for c in frame["channel"].unique(maintain_order=True) if c not in position)
    }
    order = pl.col("channel").replace_strict({**position, **unknown}, default=None, return_dtype=pl.Int64)
    return frame.sort(order, maintain_order=True, nulls_last=True)


def read_model_names(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    """The benchmark's optional models table (``model, display_name, group``); None without one."""
    try:
        names = con.sql('SELECT model, display_name, "group" FROM stg_model_names ORDER BY position').pl()
    except duckdb.CatalogException:  # a database made before the models table existed
        return None
    return names if names.height else None


def read_family_outcomes(con: duckdb.DuckDBPyConnection) -> tuple[pl.DataFrame, list[str], list[str]]:
    """The ``family_outcomes`` view, with the channels and models to report."""
    return con.sql("SELECT * FROM family_outcomes").pl(), *read_channels_and_models(con)


def compute_metrics(
    outcomes: pl.DataFrame,
    *,
    channels: list[str] | None = None,
    models: list[str] | None = None,
    metrics: tuple[str, ...] = METRICS,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    conf_level: float = 0.95,
    invalid: str = "wrong",
    interval: str = "auto",
) -> pl.DataFrame:
    """Point estimates and family-bootstrap intervals from per-family outcomes.

    Parameters
    ----------
    outcomes
        One row per model × channel × cohort family, with the columns of the
        ``family_outcomes`` view.
    channels, models
        Rows to report, in this order; default: those present in ``outcomes``. A
        channel with an empty cohort gets rows with a null estimate and n = 0.
    metrics
        Names from ``METRICS``.
    draws
        Bootstrap replicates; 0 gives point estimates only (``method = 'point'``).
    seed
        Seed of the resampling; each channel draws from its own stream keyed by its
        name, and every model of a channel shares the same replicates.
    conf_level
        Coverage of the interval: the family bootstrap's percentile interval in the middle of
        the range; near 0% or 100%, Wilson's score interval on the effective number of families
        (a rate) or the MOVER interval of its discordant parts (RM). ``method`` says which.
    interval
        ``auto`` (that rule), ``percentile`` (the percentile interval everywhere, as the paper
        computed its tables) or ``score`` (the score or MOVER interval everywhere).
    invalid
        ``wrong`` (the paper's rule): an invalid answer scores 0. ``exclude``: it leaves
        its task out of its family's means, a family with no valid answer where a metric
        needs one leaves that metric, and ``n`` counts the families that entered.

    Returns
    -------
    polars.DataFrame
        One row per model × channel × metric: ``model, channel, metric, estimate,
        conf_low, conf_high, conf_level, n, method, draws, draws_undefined, seed, invalid``.

    Examples
    --------
    Two families, one model: source right in F1 only, shuffled wrong in both.

    >>> outcomes = pl.DataFrame({
    ...     "model": ["m", "m"], "channel": ["ir", "ir"], "family_id": ["F1", "F2"],
    ...     "y_p0": [0.0, 1.0], "y_source": [1.0, 0.0], "y_shuffled": [0.0, 0.0],
    ...     "cf_tasks": [2, 1], "cf_correct": [1.0, 1.0], "cf_flip": [0.5, 1.0],
    ...     "cf_persist": [0.5, 0.0], "cf_other": [0.0, 0.0], "n_candidates": [3, 2]})
    >>> compute_metrics(outcomes, draws=0, metrics=("reliance_margin", "cf_accuracy", "cfr")).select(
    ...     "metric", "estimate", "n")
    shape: (3, 3)
    ┌─────────────────┬───────────┬─────┐
    │ metric          ┆ estimate  ┆ n   │
    │ ---             ┆ ---       ┆ --- │
    │ str             ┆ f64       ┆ i64 │
    ╞═════════════════╪═══════════╪═════╡
    │ reliance_margin ┆ 50.0      ┆ 2   │
    │ cf_accuracy     ┆ 66.666667 ┆ 2   │
    │ cfr             ┆ 50.0      ┆ 1   │
    └─────────────────┴───────────┴─────┘
    """
    require_known("metric", None, list(metrics), list(METRICS))
    resample.check_options(draws=draws, conf_level=conf_level)
    intervals.check_rule(interval)
    outcomes = apply_invalid_rule(_current_names(outcomes), invalid)
    channels = channels if channels is not None else outcomes["channel"].unique(maintain_order=True).to_list()
    models = models if models is not None else sorted(outcomes["model"].unique().to_list())
    parts = [
        expr.alias(f"{metric}:{side}")
        for metric in metrics
        for side, expr in zip(
            ("a", "b", "gain", "loss"), (*metric_components(metric), *DIFFERENCE_PARTS.get(metric, ()))
        )
    ] + [trials.alias(f"{metric}:trials") for metric in metrics if (trials := metric_trials(metric)) is not None]
    values = outcomes.select("model", "channel", "family_id", *parts)
    rows = []
    for channel in channels:
        rows.append(
            _channel_metrics(
                values.filter(pl.col("channel") == channel), channel, models, metrics, draws, seed, conf_level, interval
            )
        )
    result = pl.concat(rows) if rows else pl.DataFrame(schema=RESULT_SCHEMA)
    result = (
        result.drop("baseline")
        .join(random_baselines(outcomes, metrics), on=["channel", "metric"], how="left", maintain_order="left")
        .select(list(RESULT_SCHEMA))
    )
    return units.percent_columns(result, (*ESTIMATE_COLUMNS, "baseline")).with_columns(pl.lit(invalid).alias("invalid"))


def family_matrices(
    values: pl.DataFrame,
    *,
    models: list[str],
    columns: list[str],
    families: list[str] | None = None,
    missing: float = 0.0,
) -> tuple[list[str], dict[str, np.ndarray]]:
    """Per-family values as (families, models) matrices, one per column.

    ``values`` has one row per model × family (one channel). Families are sorted by id (or
    given, in that order), so results do not depend on row order; a model without a row for a
    family gets ``missing``: 0 adds nothing to Σ a or Σ b (a cohort, which every complete model
    covers), NaN marks a family a partial model did not answer.
    """
    families = sorted(values["family_id"].unique().to_list()) if families is None else list(families)
    index = pl.DataFrame({"family_id": families}, schema={"family_id": pl.String})
    out = {}
    for column in columns:
        wide = index.join(
            values.pivot(on="model", index="family_id", values=column),
            on="family_id",
            how="left",
            maintain_order="left",
        )
        for model in models:
            if model not in wide.columns:
                wide = wide.with_columns(pl.lit(None, pl.Float64).alias(model))
        out[column] = (
            wide.select(pl.col(models).cast(pl.Float64))
            .fill_null(missing)
            .to_numpy()
            .astype(float)
            .reshape(len(families), len(models))
        )
    return families, out


#: Differences of two rates, split into their discordant parts (gain, loss) whose intervals build theirs
#: near a bound (`intervals.difference_intervals`); RM's: source right and shuffled wrong, and the reverse.
DIFFERENCE_PARTS = {
    "reliance_margin": (
        pl.col("y_source") * (1 - pl.col("y_shuffled")),
        pl.col("y_shuffled") * (1 - pl.col("y_source")),
    ),
}


def metric_trials(metric: str) -> pl.Expr | None:
    """The independent tasks a family's share of ``metric`` averages over, where it is not ``b_f`` itself
    (`intervals.trial_capacity`): PGR weighs the source task ½ and each of the K' cf tasks ½/K', so
    1 / (¼ + ¼/K') = 4K'/(K' + 1); CFR, Persist and Other average over the K' cf tasks. None: b_f."""
    cf = pl.col("cf_tasks").fill_null(0).cast(pl.Float64)
    return {"pgr": 4 * cf / (cf + 1), "cfr": cf, "persist": cf, "other": cf}.get(metric)


#: Fixed by the cohort's design (each family's 1/K_f), not by the answers: its percentile interval stays.
DESIGN_FIXED = ("random_baseline",)


def _channel_metrics(
    values: pl.DataFrame,
    channel: str,
    models: list[str],
    metrics: tuple[str, ...],
    draws: int,
    seed: int,
    conf_level: float,
    interval: str = "auto",
) -> pl.DataFrame:
    # (families, models) matrices of a_f and b_f per metric, side by side: column
    # j·len(metrics) + k is model j, metric k.
    cells = [(model, metric) for model in models for metric in metrics]
    columns = [
        f"{m}:{side}"
        for m in metrics
        for side in ("a", "b", "gain", "loss", "trials")
        if f"{m}:{side}" in values.columns
    ]
    _, matrices = family_matrices(values, models=models, columns=columns)
    # a side a metric lacks: gain and loss only differences have; a family's trials default to its b
    stack = lambda side, default: np.stack(  # noqa: E731
        [matrices.get(f"{m}:{side}", matrices[f"{m}:{default}"]) for m in metrics], axis=2
    ).reshape(-1, len(cells))
    a, b = stack("a", "a"), stack("b", "b")
    n_fam = a.shape[0]
    estimate = resample.ratio_of_sums(np.ones((1, n_fam)), a, b)[0]
    n = (b > 0).sum(axis=0)
    # one set of replicates per channel (its own stream), shared by every column: rates get
    # `rate_intervals`, differences (RM: a = gain − loss) `difference_intervals`, and the columns fixed by
    # the cohort's design keep their percentile interval
    weights = resample.bootstrap_weights(n_fam, draws=draws, seed=seed, key=channel, conf_level=conf_level)
    if weights is None:
        low, high, undefined, method, used = resample.no_interval(len(cells))
    else:
        used = draws
        replicates = resample.ratio_of_sums(weights, a, b)
        undefined = np.isnan(replicates).sum(axis=0).astype(np.int64)
        low, high, method = intervals.rate_intervals(
            a, b, replicates, conf_level, trials=stack("trials", "b"), rule=interval
        )
        difference = np.array([metric in DIFFERENCE_PARTS for _, metric in cells])
        if difference.any():
            low[difference], high[difference], method[difference] = intervals.difference_intervals(
                stack("gain", "a")[:, difference],
                stack("loss", "a")[:, difference],
                b[:, difference],
                replicates[:, difference],
                conf_level,
                rule=interval,
            )
        fixed = np.array([metric in DESIGN_FIXED for _, metric in cells])
        if fixed.any():
            low[fixed], high[fixed], _ = intervals.percentile_interval(replicates[:, fixed], conf_level)
            method[fixed] = intervals.PERCENTILE
    return pl.DataFrame(
        {
            "model": [c[0] for c in cells],
            "channel": [channel] * len(cells),
            "metric": [c[1] for c in cells],
            "estimate": estimate,
            "conf_low": low,
            "conf_high": high,
            "conf_level": [conf_level] * len(cells),
            "n": n.astype(np.int64),
            "method": method.tolist(),
            "draws": [used] * len(cells),
            "draws_undefined": undefined,
            "seed": [seed] * len(cells),
            "invalid": [None] * len(cells),
            "baseline": [None] * len(cells),
        },
        schema=RESULT_SCHEMA,
    ).with_columns(pl.col(pl.Float64).fill_nan(None))


def metrics_from_db(con: duckdb.DuckDBPyConnection, **options) -> pl.DataFrame:
    """``compute_metrics`` on the database's cohorts; options as for compute_metrics."""
    outcomes, channels, models = read_family_outcomes(con)
    options.setdefault("channels", channels)
    options.setdefault("models", models)
    return compute_metrics(outcomes, **options)


BASELINE = "random baseline"  # the model name of the random-baseline row of a leaderboard


def with_random_baseline(result: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One metric's rows of :func:`compute_metrics` output and, unless it is the baseline
    itself, a random-baseline row per channel: that metric's own value for a uniform guesser
    (the ``baseline`` column; no interval), the row the paper closes a leaderboard with."""
    part = result.filter(pl.col("metric") == metric)
    if metric == "random_baseline" or "baseline" not in part.columns or not part.height:
        return part
    baseline = part.unique("channel", keep="first", maintain_order=True).with_columns(
        pl.lit(BASELINE).alias("model"),
        pl.col("baseline").alias("estimate"),
        pl.lit(None, pl.Float64).alias("conf_low"),
        pl.lit(None, pl.Float64).alias("conf_high"),
        pl.lit("point").alias("method"),
        pl.lit(0, pl.Int64).alias("draws"),
    )
    return pl.concat([part, baseline.select(part.columns)])


def p0_accuracy(outcomes: pl.DataFrame, **options) -> pl.DataFrame:
    """acc_p0 over every family in some channel's cohort, each family once, as channel ``none``
    (the channel of P0 tasks): the one P0 figure of the paper's Table 7.

    A family's P0 task is the same in every channel, so its outcome is too; ``acc_p0`` of
    :func:`compute_metrics` is the same rate over one channel's cohort. Options as for
    compute_metrics (``metrics`` and ``channels`` are fixed).
    """
    families = outcomes.unique(["model", "family_id"], keep="first", maintain_order=True)
    return compute_metrics(
        families.with_columns(pl.lit("none").alias("channel")), channels=["none"], metrics=("acc_p0",), **options
    )


PROPORTIONS = ("acc_p0", "acc_source", "acc_shuffled", "cf_accuracy")
COMPANION_SCHEMA = {
    "model": pl.String,
    "channel": pl.String,
    "metric": pl.String,
    "estimate": pl.Float64,
    "n": pl.Int64,
    "tasks": pl.Int64,
    "wilson_low": pl.Float64,
    "wilson_high": pl.Float64,
    "se_independent": pl.Float64,
    "se_clustered": pl.Float64,
    "design_effect": pl.Float64,
    "conf_level": pl.Float64,
}


def frequentist_companions(
    outcomes: pl.DataFrame,
    *,
    channels: list[str] | None = None,
    models: list[str] | None = None,
    metrics: tuple[str, ...] = METRICS,
    conf_level: float = 0.95,
) -> pl.DataFrame:
    """Wilson intervals and clustered standard errors beside the bootstrap ones.

    - ``wilson_low``, ``wilson_high``: scipy's Wilson score interval, treating the tasks
      as independent; only for the metrics that are a share of tasks (acc_p0,
      acc_source, acc_shuffled, cf_accuracy). With several samples per task the count of
      right answers is rounded.
    - ``se_clustered``: the cluster-robust (families as clusters) standard error of the
      ratio estimator ``R = Σ a_f / Σ b_f``: ``√(F/(F−1) · Σ_f (a_f − R b_f)²) / Σ_f b_f``;
      every metric.
    - ``se_independent``: the binomial standard error ``√(R(1−R)/tasks)`` for a share
      of tasks, ``√(Σ p(1−p)/F)`` for RM; ``design_effect`` = (se_clustered / se_independent)².

    All in pp. One row per model × channel × metric.
    """
    resample.check_options(draws=0, conf_level=conf_level)
    channels = channels if channels is not None else outcomes["channel"].unique(maintain_order=True).to_list()
    models = models if models is not None else sorted(outcomes["model"].unique().to_list())
    rows = []
    for channel in channels:
        for model in models:
            part = outcomes.filter((pl.col("channel") == channel) & (pl.col("model") == model))
            for metric in metrics:
                a_expr, b_expr = metric_components(metric)
                ab = part.select(a_expr.alias("a"), b_expr.alias("b"))  # a literal b broadcasts to a's length
                a, b = ab["a"].to_numpy(), ab["b"].to_numpy()
                rows.append(_companion(model, channel, metric, a, b, part, conf_level))
    frame = pl.DataFrame(rows, schema=COMPANION_SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    return units.percent_columns(frame, ("estimate", "wilson_low", "wilson_high", "se_independent", "se_clustered"))


def _companion(model, channel, metric, a, b, part, conf_level):
    families = int((b > 0).sum())
    total = float(b.sum())
    nan = float("nan")
    if total <= 0:
        return (model, channel, metric, nan, families, 0, nan, nan, nan, nan, nan, conf_level)
    ratio = float(a.sum() / total)
    used = b > 0
    f = used.sum()
    residual = (a - ratio * b)[used]
    se_clustered = math.sqrt(f / (f - 1) * (residual**2).sum()) / total if f > 1 else nan
    tasks = int(round(total)) if metric in PROPORTIONS else families
    wilson_low = wilson_high = se_independent = nan
    if metric in PROPORTIONS:
        ci = stats.binomtest(int(round(float(a.sum()))), tasks).proportion_ci(conf_level, method="wilson")
        wilson_low, wilson_high = ci.low, ci.high
        se_independent = math.sqrt(ratio * (1 - ratio) / tasks)
    elif metric == "reliance_margin":
        p_source, p_shuffled = part["y_source"].mean(), part["y_shuffled"].mean()
        se_independent = math.sqrt((p_source * (1 - p_source) + p_shuffled * (1 - p_shuffled)) / families)
    design_effect = (se_clustered / se_independent) ** 2 if se_independent and se_independent > 0 else nan
    return (
        model,
        channel,
        metric,
        ratio,
        families,
        tasks,
        wilson_low,
        wilson_high,
        se_independent,
        se_clustered,
        design_effect,
        conf_level,
    )
