"""Ranking stability under family subsampling, and bootstrap rank distributions.

Both reuse the metric decomposition of ``metrics`` (every score is Σ a_f / Σ b_f over
families): a draw is a 0/1 (subsample) or multiplicity (bootstrap) weight vector over
the cohort's families, so every draw of every model is one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pingouin as pg
import polars as pl
from scipy import stats

from .. import units
from ..errors import UsageError
from . import intervals, resample
from .metrics import family_matrices, metric_components, metric_trials

SCORES = ("reliance_margin", "cfr", "pgr")
DEFAULT_SIZES = (25, 50, 75, 100, 125)
MACRO = "macro"

STABILITY_SCHEMA = {
    "metric": pl.String,
    "channel": pl.String,
    "size": pl.Int64,
    "draws": pl.Int64,
    "seed": pl.Int64,
    "spearman_rho": pl.Float64,
    "exact": pl.Float64,
    "mad": pl.Float64,
    "draws_undefined": pl.Int64,
}


def _family_matrices(outcomes: pl.DataFrame, channel: str, models: list[str], score: str, *, trials: bool = False):
    """(a, b) of shape (families, models) for one channel, families sorted by id; with ``trials``, also
    each family's independent tasks (`metrics.metric_trials`, b where the metric has none)."""
    a_expr, b_expr = metric_components(score)
    trials_expr = metric_trials(score) if trials else None
    part = outcomes.filter(pl.col("channel") == channel).select(
        "model",
        "family_id",
        a_expr.alias("a"),
        b_expr.alias("b"),
        (trials_expr if trials_expr is not None else b_expr).alias("trials"),
    )
    _, matrices = family_matrices(part, models=models, columns=["a", "b", "trials"] if trials else ["a", "b"])
    return (matrices["a"], matrices["b"], matrices["trials"]) if trials else (matrices["a"], matrices["b"])


def subsample_weights(n_families: int, size: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """0/1 weights of ``draws`` subsets of ``size`` families drawn without replacement, (draws, n)."""
    order = rng.permuted(np.tile(np.arange(n_families), (draws, 1)), axis=1)[:, :size]
    weights = np.zeros((draws, n_families))
    np.put_along_axis(weights, order, 1.0, axis=1)
    return weights


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Rank 1 = highest score, per row; ties share their mean rank; NaN stays NaN.

    Scores (proportions) are rounded to 1e-11 first: two mathematically equal scores
    summed in a different order differ in the last bits, and must still tie.
    """
    return stats.rankdata(-np.round(scores, 11), axis=-1, method="average", nan_policy="omit")


def ranked_models(models: list[str], partial: pl.DataFrame) -> tuple[list[str], str | None]:
    """The models a ranking compares, and a note naming those it leaves out.

    A partial model (run on part of the benchmark) has a score only on the families it
    answered: in a subset or a bootstrap replicate of the cohort it would be ranked on
    other families than the rest, or on none, so rankings compare the complete models;
    its estimated place is what ``molp2s estimate`` gives.

    >>> ranked_models(["a", "b", "new"], pl.DataFrame({"model": ["new"], "families_answered": [58],
    ...                                                 "families_total": [389]}))
    (['a', 'b'], 'left out of the ranking: new (58 of 389 families answered); for an estimated row: molp2s estimate')
    """
    left_out = partial.filter(pl.col("model").is_in(models))
    if left_out.height == 0:
        return models, None
    listed = ", ".join(f"{m} ({a} of {t} families answered)" for m, a, t in left_out.iter_rows())
    return (
        [m for m in models if m not in set(left_out["model"])],
        f"left out of the ranking: {listed}; for an estimated row: molp2s estimate",
    )


def ranking_stability(
    outcomes: pl.DataFrame,
    *,
    score: str = "pgr",
    channels: list[str],
    models: list[str],
    macro: bool = False,
    sizes: tuple[int, ...] = DEFAULT_SIZES,
    draws: int = 1000,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> pl.DataFrame:
    """Would the model ranking survive a smaller set of families? (the paper's Tables 10–11)

    For each channel (or the macro mean over ``channels``) and subset size n (capped at
    the cohort size), draw ``draws`` subsets of n cohort families without replacement,
    recompute the score of every model and compare with the full cohort:

    - ``spearman_rho``: mean Spearman correlation with the full-cohort ranking;
    - ``exact``: % of draws whose complete ranking equals the full-cohort ranking;
    - ``mad``: mean absolute deviation of the score from its full-cohort value, over
      models and draws (pp).

    With ``macro``, each channel draws its own subset of n of its cohort families (n
    capped at the smallest cohort) and the model's score is the mean over channels. Draws in which a score is undefined
    (CFR with no right source answer) are left out and counted in ``draws_undefined``.

    Returns
    -------
    polars.DataFrame
        One row per channel (``macro`` for the macro mean) × size: ``metric, channel,
        size, draws, seed, spearman_rho, exact, mad, draws_undefined``.
    """
    if score not in SCORES:
        raise UsageError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
    if len(models) < 2:
        raise UsageError("ranking stability needs at least two models")
    matrices = {c: _family_matrices(outcomes, c, models, score) for c in channels}
    groups = [(MACRO, channels)] if macro else [(c, [c]) for c in channels]
    rows = []
    for label, members in groups:
        full = np.mean(
            [resample.ratio_of_sums(np.ones((1, len(matrices[c][0]))), *matrices[c])[0] for c in members], axis=0
        )
        smallest = min(len(matrices[c][0]) for c in members)
        for size in sizes:
            n = min(size, smallest)  # in a macro mean, every channel draws the same number of families
            draw_scores = np.mean(
                [
                    resample.ratio_of_sums(
                        subsample_weights(
                            len(matrices[c][0]), n, draws, resample.rng_for(seed, f"stability:{score}:{c}:{n}")
                        ),
                        *matrices[c],
                    )
                    for c in members
                ],
                axis=0,
            )  # (draws, models)
            rows.append(_compare(score, label, n, draws, seed, full, draw_scores))
            if progress is not None:
                progress(1)
    return units.percent_columns(pl.DataFrame(rows, schema=STABILITY_SCHEMA), ("exact", "mad"))


def _compare(score, channel, size, draws, seed, full: np.ndarray, draw_scores: np.ndarray) -> dict:
    defined = ~np.isnan(draw_scores).any(axis=1)
    usable = draw_scores[defined]
    full_ranks = _ranks(full)
    if usable.shape[0] == 0 or np.isnan(full).any():
        rho = exact = mad = float("nan")
    else:
        ranks = _ranks(usable)
        # Spearman ρ is the Pearson correlation of the ranks, row by row.
        centred = ranks - ranks.mean(axis=1, keepdims=True)
        target = full_ranks - full_ranks.mean()
        denominator = np.sqrt((centred**2).sum(axis=1) * (target**2).sum())
        with np.errstate(invalid="ignore", divide="ignore"):
            rho_per_draw = (centred @ target) / denominator
        rho = float(np.nanmean(rho_per_draw)) if np.isfinite(rho_per_draw).any() else float("nan")
        exact = float((ranks == full_ranks).all(axis=1).mean())
        mad = float(np.abs(usable - full).mean())
    return {
        "metric": score,
        "channel": channel,
        "size": size,
        "draws": draws,
        "seed": seed,
        "spearman_rho": rho,
        "exact": exact,
        "mad": mad,
        "draws_undefined": int((~defined).sum()),
    }


RANK_SCHEMA = {
    "model": pl.String,
    "channel": pl.String,
    "metric": pl.String,
    "estimate": pl.Float64,
    "rank": pl.Float64,
    "rank_low": pl.Float64,
    "rank_high": pl.Float64,
    "tier": pl.Int64,
    "saturated": pl.Boolean,
    "conf_level": pl.Float64,
    "draws": pl.Int64,
    "draws_undefined": pl.Int64,
    "seed": pl.Int64,
    "adjustment": pl.String,
}
ADJUSTMENT = "holm"


def pairwise_p_values(replicate_scores: np.ndarray) -> np.ndarray:
    """Two-sided paired-bootstrap p-values of every model pair, (models, models), from replicate scores
    (draws, models): twice the smaller share of replicates on either side of "no difference", a replicate
    with no difference counting on both sides (two models right on every family are never separated).

    >>> pairwise_p_values(np.array([[1.0, 1.0], [1.0, 1.0]])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    difference = replicate_scores[:, :, None] - replicate_scores[:, None, :]
    tie = np.isclose(difference, 0.0, atol=1e-11)
    below = ((difference < 0) | tie).mean(axis=0)
    above = ((difference > 0) | tie).mean(axis=0)
    return np.minimum(1.0, 2 * np.minimum(below, above))


def rank_ranges(estimates: np.ndarray, separated: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each model's rank range and tie group from the pairs the data separate.

    ``separated[i, j]``: model i is significantly ahead of j. A model ranks no better than 1 + the models
    ahead of it and no worse than M − the models behind it (simultaneous rank intervals from pairwise
    tests, as in Al Mohamad, Goeman and van Zwet 2022). Tie groups, from the top: the best model not yet
    grouped and every other ungrouped model not separated from it.

    >>> ahead = np.array([[False, True, True], [False, False, False], [False, False, False]])
    >>> [x.tolist() for x in rank_ranges(np.array([0.9, 0.6, 0.5]), ahead)]
    [[1.0, 2.0, 2.0], [1.0, 3.0, 3.0], [1, 2, 2]]
    """
    m = len(estimates)
    low = 1.0 + separated.sum(axis=0)
    high = float(m) - separated.sum(axis=1)
    tier = np.zeros(m, dtype=np.int64)
    order = np.argsort(-np.nan_to_num(estimates, nan=-np.inf), kind="stable")
    for leader in order:
        if tier[leader]:
            continue
        group = tier.max() + 1
        for j in order:
            if not tier[j] and (j == leader or not separated[leader, j]):
                tier[j] = group
    return low, high, tier


def rank_intervals(
    outcomes: pl.DataFrame,
    *,
    score: str = "pgr",
    channels: list[str],
    models: list[str],
    draws: int = 2000,
    seed: int = 0,
    conf_level: float = 0.95,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each model's rank range, tie group and bootstrap rank distribution per channel.

    Families are resampled with replacement (the same replicates as the metric intervals for this
    seed). Every pair of models is compared on those replicates (`pairwise_p_values`), the p-values
    Holm-adjusted over the channel's pairs; a pair is separated where the adjusted p-value is under
    1 − ``conf_level``. From the separated pairs come each model's rank range and tie group
    (`rank_ranges`). A channel is ``saturated`` where the top tie group holds two or more models,
    each at the ceiling (its failures count fewer than `intervals.MIN_MINORITY` effective families,
    where its interval is a score interval): these families cannot separate the top models.

    Returns
    -------
    (intervals, distribution)
        ``intervals``: one row per model × channel, best first within a channel: ``model, channel,
        metric, estimate`` (%), ``rank`` (on the full cohort; ties share the mean rank),
        ``rank_low, rank_high`` (the rank range), ``tier`` (1 = the top tie group), ``saturated``,
        ``conf_level, draws, draws_undefined, seed, adjustment``.
        ``distribution``: one row per model × channel × rank: ``model, channel, metric, rank,
        probability`` (the share of replicates with that rank).
    """
    resample.check_options(draws=draws, conf_level=conf_level)
    rows, distribution = [], []
    for channel in channels:
        a, b, trials = _family_matrices(outcomes, channel, models, score, trials=True)
        estimates = resample.ratio_of_sums(np.ones((1, len(a))), a, b)[0]
        full_ranks = _ranks(estimates)
        weights = resample.family_weights(len(a), draws, resample.rng_for(seed, channel))
        replicate_scores = resample.ratio_of_sums(weights, a, b)
        defined = ~np.isnan(replicate_scores).any(axis=1)
        ranks = _ranks(replicate_scores[defined])
        separated = np.zeros((len(models), len(models)), dtype=bool)
        if defined.sum() and len(models) > 1:
            p = pairwise_p_values(replicate_scores[defined])
            upper = np.triu_indices(len(models), 1)
            adjusted = np.ones_like(p)
            adjusted[upper] = pg.multicomp(p[upper], method="holm")[1]
            adjusted.T[upper] = adjusted[upper]
            separated = (adjusted < 1 - conf_level) & (estimates[:, None] > estimates[None, :])
        low, high, tier = rank_ranges(estimates, separated)
        top = tier == 1
        saturated = bool(top.sum() >= 2 and intervals.near_ceiling(a, b, trials=trials)[top].all())
        for j in np.argsort(full_ranks, kind="stable"):  # a leaderboard: best first
            model = models[j]
            rows.append(
                (
                    model,
                    channel,
                    score,
                    float(estimates[j]),
                    float(full_ranks[j]),
                    float(low[j]),
                    float(high[j]),
                    int(tier[j]),
                    saturated,
                    conf_level,
                    draws,
                    int((~defined).sum()),
                    seed,
                    ADJUSTMENT,
                )
            )
        for j, model in enumerate(models):
            values, counts = np.unique(ranks[:, j], return_counts=True)
            for value, count in zip(values, counts):
                distribution.append((model, channel, score, float(value), float(count / len(ranks))))
    frame = pl.DataFrame(rows, schema=RANK_SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    return (
        units.percent_columns(frame, ("estimate",)),
        pl.DataFrame(
            distribution,
            schema={
                "model": pl.String,
                "channel": pl.String,
                "metric": pl.String,
                "rank": pl.Float64,
                "probability": pl.Float64,
            },
            orient="row",
        ),
    )


def saturated_channels(ranks: pl.DataFrame) -> list[str]:
    """The channels of `rank_intervals` output whose top models these families cannot separate."""
    return ranks.filter(pl.col("saturated"))["channel"].unique(maintain_order=True).to_list()
