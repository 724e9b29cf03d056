"""Ranking stability under family subsampling, and bootstrap rank distributions.

Both reuse the metric decomposition of ``metrics`` (every score is Σ a_f / Σ b_f over
families): a draw is a 0/1 (subsample) or multiplicity (bootstrap) weight vector over
the cohort's families, so every draw of every model is one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pingouin as pg
import polars as pl
from scipy import stats

from .. import units
from ..errors import UsageError
from . import intervals, resample
from .compare import _check_margin, check_test, sign_flip_p_value, verdicts
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
# Rank ranges come from two tests of every pair of a channel's models, each with its family-wise
# error over the pairs at most 1 − conf_level: step-down max-T (Romano and Wolf 2005) on
# studentised differences from the family bootstrap, and a sign-flip (clustered McNemar) test
# with Holm's adjustment; a pair is separated where both separate it. Written here: scipy,
# pingouin and statsmodels have no step-down over bootstrap replicates and no clustered sign flip.
ADJUSTMENT = "stepdown_max_t_and_sign_flip_holm"
# A channel is saturated when its top tie group holds two or more models whose interval lower
# ends are all at or above this share: the families cannot tell apart models this close to 100%.
SATURATION_LEVEL = 0.90
# cells (replicates × families × models) of one block of the studentised differences: about 32 MB of
# residuals at a time, whatever the number of models (56 models × 389 families: 183 replicates a block)
_BLOCK_CELLS = 4_000_000


def studentized_differences(
    weights: np.ndarray, a: np.ndarray, b: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The difference of ratio scores ``Σ w a / Σ w b`` of each model pair (i, j) in ``pairs`` and its
    family-clustered standard error, for each row of ``weights`` (draws, families): ``(difference,
    se)``, each (draws, pairs), model i − model j.

    The standard error is the linearised (Taylor) one of `intervals.linearized_covariance`, with the
    resampled families as the clusters: Var(R_i − R_j) = n / (n − 1) · Σ_f w_f (e_fi − e_fj)², where
    e_f = (a_f − R b_f) / Σ w b and n = Σ w. NaN where a score is undefined (Σ w b = 0). Computed a
    block of replicates at a time, so memory stays flat in the number of draws and models.

    Two families, model 0 right on both, model 1 on one: difference ½; e = (0, 0) and (¼, −¼),
    Var = 2 · (1/16 + 1/16) = ¼, se ½:

    >>> pair = (np.array([0]), np.array([1]))
    >>> d, se = studentized_differences(np.ones((1, 2)), np.array([[1.0, 1.0], [1.0, 0.0]]), np.ones((2, 2)), pair)
    >>> float(d[0, 0]), float(se[0, 0])
    (0.5, 0.5)
    """
    first, second = pairs
    draws = weights.shape[0]
    difference = np.empty((draws, len(first)))
    se = np.empty((draws, len(first)))
    block = max(1, _BLOCK_CELLS // max(1, a.shape[0] * a.shape[1]))
    for start in range(0, draws, block):
        w = weights[start : start + block]
        totals = w @ b
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = (w @ a) / totals
            e = (a[None] - rate[:, None, :] * b[None]) / totals[:, None, :]
        # Σ_f w_f (e_fi − e_fj)² = C_ii + C_jj − 2 C_ij, C = Σ_f w_f e_f e_fᵀ
        cross = np.matmul((w[:, :, None] * e).transpose(0, 2, 1), e)  # batched BLAS, not einsum's loop
        own = np.diagonal(cross, axis1=1, axis2=2)
        n = w.sum(axis=1)[:, None]
        variance = n / np.maximum(n - 1, 1) * (own[:, first] + own[:, second] - 2 * cross[:, first, second])
        difference[start : start + len(w)] = rate[:, first] - rate[:, second]
        se[start : start + len(w)] = np.sqrt(np.maximum(variance, 0.0))
    return difference, se


def _t(difference: np.ndarray, se: np.ndarray) -> np.ndarray:
    """difference / se, where a zero difference with a zero se is 0 (no evidence either way) and a
    non-zero one with a zero se ±inf (every family says the same); NaN stays NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = difference / se
        exact = np.abs(difference) <= intervals.NEGLIGIBLE
        return np.where((se == 0) & exact, 0.0, np.where(se == 0, np.sign(difference) * np.inf, t))


def stepdown_p_values(t_observed: np.ndarray, t_replicates: np.ndarray) -> np.ndarray:
    """Romano–Wolf step-down max-T adjusted p-values, two-sided, never 0.

    ``t_observed`` (hypotheses,): each test's studentised statistic; ``t_replicates`` (draws,
    hypotheses): the bootstrap's, centred on the observed difference ((d* − d̂) / se*), so that they
    mimic the statistics under the null; NaN or ±inf where a replicate leaves a test without a
    statistic (it then counts against that test alone). The hypothesis with the largest |t| is compared with the
    largest |t*| over all of them, the next with the largest over the rest, and so on; each
    adjusted p-value is (1 + replicates at or beyond it) / (draws + 1), and never below the one
    before it.

    One hypothesis, t = 3, replicates 0, 1, 4: one of three reaches 3, p = (1 + 1) / 4:

    >>> stepdown_p_values(np.array([3.0]), np.array([[0.0], [1.0], [4.0]])).tolist()
    [0.5]
    """
    draws, hypotheses = t_replicates.shape
    order = np.argsort(-np.abs(t_observed), kind="stable")
    size = np.abs(t_replicates[:, order])
    # NaN (a score undefined) or inf (a replicate whose standard error is 0 while its difference is
    # not: none of the families that differ drawn): no studentised statistic, so it counts against
    # its own test and is left out of the maximum the others are compared with
    undefined = ~np.isfinite(size)
    # the largest |t*| over each hypothesis and every one after it in the order (NaN counts as none)
    tail_max = np.fmax.accumulate(np.where(undefined, -np.inf, size)[:, ::-1], axis=1)[:, ::-1]
    crossings = ((tail_max >= np.abs(t_observed[order])[None, :]) | undefined).sum(axis=0)
    adjusted = np.maximum.accumulate((1.0 + crossings) / (draws + 1.0))
    out = np.empty(hypotheses)
    out[order] = adjusted
    return out


def null_contributions(a: np.ndarray, b: np.ndarray, i: int, j: int) -> np.ndarray:
    """Each family's contribution to R_i − R_j under "no difference": the linearised terms
    (a_fi − R₀ b_fi) / Σ b_i − (a_fj − R₀ b_fj) / Σ b_j, R₀ the two models' pooled rate. They sum to
    R_i − R_j; with the same denominators they are (a_fi − a_fj) / Σ b, the discordance of family f."""
    ti, tj = b[:, i].sum(), b[:, j].sum()
    pooled = (a[:, i].sum() + a[:, j].sum()) / (ti + tj)
    return (a[:, i] - pooled * b[:, i]) / ti - (a[:, j] - pooled * b[:, j]) / tj


def pairwise_p_values(weights: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Adjusted p-values of every model pair, (models, models), symmetric, 1 on the diagonal: the
    larger of two tests, each controlling the family-wise error over the pairs on its own.

    - The studentised difference of each pair on the full cohort against the family bootstrap's
      (``weights``: draws × families), centred on the estimate, step-down max-T
      (`stepdown_p_values`): it uses the correlation between pairs, but with a handful of families
      that differ its bootstrap is too coarse and its tail too thin.
    - The sign-flip test of each pair's family contributions (`sign_flip_p_value`, exact
      McNemar where each family has one task), Holm-adjusted: exact in that tail.

    A pair is separated only where both separate it. Two models right and wrong on the same
    families are never separated:

    >>> same = np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])
    >>> pairwise_p_values(np.ones((20, 3)), same, np.ones((3, 2))).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    models = a.shape[1]
    upper = np.triu_indices(models, 1)
    full_difference, full_se = studentized_differences(np.ones((1, a.shape[0])), a, b, upper)
    difference, se = studentized_differences(weights, a, b, upper)
    t_observed = _t(full_difference[0], full_se[0])
    t_replicates = _t(difference - full_difference, se)
    p = np.ones((models, models))
    if len(t_observed):
        flips = [sign_flip_p_value(null_contributions(a, b, i, j)) for i, j in zip(*upper)]
        holm = pg.multicomp(np.array(flips), method="holm")[1]
        p[upper] = np.maximum(stepdown_p_values(t_observed, t_replicates), holm)
        p.T[upper] = p[upper]
    return p


def rank_ranges(estimates: np.ndarray, separated: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each model's rank range and tie group from the pairs the data separate.

    ``separated[i, j]``: model i is significantly ahead of j. A model ranks no better than 1 + the models
    ahead of it and no worse than M − the models behind it (simultaneous rank intervals from pairwise
    tests, as in Al Mohamad, Goeman and van Zwet 2022). Tie groups run down the leaderboard: a model
    joins the group above it unless the data separate it from one of that group's models, so that no
    two models of a group are separated.

    >>> ahead = np.array([[False, True, True], [False, False, False], [False, False, False]])
    >>> [x.tolist() for x in rank_ranges(np.array([0.9, 0.6, 0.5]), ahead)]
    [[1.0, 2.0, 2.0], [1.0, 3.0, 3.0], [1, 2, 2]]

    A separated from C only: B joins A, and C, separated from A, starts the next group.

    >>> ahead = np.array([[False, False, True], [False, False, False], [False, False, False]])
    >>> rank_ranges(np.array([0.9, 0.7, 0.5]), ahead)[2].tolist()
    [1, 1, 2]
    """
    m = len(estimates)
    low = 1.0 + separated.sum(axis=0)
    high = float(m) - separated.sum(axis=1)
    either = separated | separated.T
    tier = np.zeros(m, dtype=np.int64)
    group: list[int] = []
    for j in np.argsort(-np.nan_to_num(estimates, nan=-np.inf), kind="stable"):
        if not group or either[j, group].any():
            group = []
            tier[j] = tier.max() + 1
        else:
            tier[j] = tier[group[0]]
        group.append(j)
    return low, high, tier


@dataclass(frozen=True)
class _ChannelTests:
    """One channel's pair tests, as `rank_intervals` and `pair_verdicts` both read them: the family
    matrices (families × models), every model's estimate, the models with one (``ranked``), the bootstrap
    weights and the ranked models' replicate scores, and the ranked pairs' adjusted p-values and
    separations (row model ahead of column model)."""

    a: np.ndarray
    b: np.ndarray
    trials: np.ndarray
    estimates: np.ndarray
    ranked: np.ndarray
    weights: np.ndarray
    replicate_scores: np.ndarray
    p: np.ndarray
    separated: np.ndarray


def _channel_tests(outcomes, channel, models, score, draws, seed, conf_level) -> _ChannelTests:
    a, b, trials = _family_matrices(outcomes, channel, models, score, trials=True)
    estimates = resample.ratio_of_sums(np.ones((1, len(a))), a, b)[0]
    ranked = np.flatnonzero(~np.isnan(estimates))  # the models with a score on this cohort
    # the same replicates as the metric intervals for this seed (the stream is the channel's)
    weights = resample.stream_weights(len(a), draws, seed, channel)
    replicate_scores = resample.ratio_of_sums(weights, a, b)[:, ranked]
    p = np.ones((len(ranked), len(ranked)))
    separated = np.zeros((len(ranked), len(ranked)), dtype=bool)
    if len(ranked) > 1:
        p = pairwise_p_values(weights, a[:, ranked], b[:, ranked])
        separated = (p < 1 - conf_level) & (estimates[ranked][:, None] > estimates[ranked][None, :])
    return _ChannelTests(a, b, trials, estimates, ranked, weights, replicate_scores, p, separated)


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
    seed). Every pair of models is tested twice (`pairwise_p_values`): a step-down max-T test on its
    studentised difference over the channel's pairs, and a Holm-adjusted sign-flip test; a pair is
    separated where both separate it, so the chance that any pair the data call separated is not is
    at most 1 − ``conf_level`` within a channel (not across channels). From the separated pairs come each model's rank range and tie group (`rank_ranges`):
    no two models of a tie group are separated at that level. A channel is ``saturated`` where the
    top tie group holds two or more models whose interval lower ends are all at or above
    `SATURATION_LEVEL`. A model whose score is undefined on the cohort (a CFR with no right source
    answer, say) is listed last with no rank, and takes no part in the others' ranges.

    Returns
    -------
    (intervals, distribution)
        ``intervals``: one row per model × channel, best first within a channel: ``model, channel,
        metric, estimate`` (%), ``rank`` (on the full cohort; ties share the mean rank),
        ``rank_low, rank_high`` (the rank range), ``tier`` (1 = the top tie group), ``saturated``,
        ``conf_level, draws, draws_undefined, seed, adjustment``.
        ``distribution``: one row per model × channel × rank: ``model, channel, metric, rank,
        probability`` (the share of replicates with that rank, among those where every ranked
        model's score is defined).
    """
    resample.check_options(draws=draws, conf_level=conf_level)
    rows, distribution = [], []
    for channel in channels:
        tested = _channel_tests(outcomes, channel, models, score, draws, seed, conf_level)
        a, b, trials, estimates, ranked = tested.a, tested.b, tested.trials, tested.estimates, tested.ranked
        replicate_scores, separated = tested.replicate_scores, tested.separated
        defined = ~np.isnan(replicate_scores).any(axis=1)
        ranks = _ranks(replicate_scores[defined])
        full_ranks = _ranks(estimates[ranked])
        low, high, tier = rank_ranges(estimates[ranked], separated)
        top = tier == 1
        lower_ends, _, _ = intervals.rate_intervals(
            a[:, ranked],
            b[:, ranked],
            replicate_scores,
            conf_level,
            trials=trials[:, ranked],
        )
        # a ceiling is a rate's: reliance margin (a difference of rates) is never saturated
        saturated = bool(score != "reliance_margin" and top.sum() >= 2 and (lower_ends[top] >= SATURATION_LEVEL).all())
        for k in np.argsort(full_ranks, kind="stable"):  # a leaderboard: best first
            rows.append(
                (
                    models[ranked[k]],
                    channel,
                    score,
                    float(estimates[ranked[k]]),
                    float(full_ranks[k]),
                    float(low[k]),
                    float(high[k]),
                    int(tier[k]),
                    saturated,
                    conf_level,
                    draws,
                    int((~defined).sum()),
                    seed,
                    ADJUSTMENT,
                )
            )
        for j in sorted(set(range(len(models))) - set(ranked.tolist())):  # listed apart, unranked
            rows.append(
                (
                    models[j],
                    channel,
                    score,
                    None,
                    None,
                    None,
                    None,
                    None,
                    saturated,
                    conf_level,
                    draws,
                    draws,
                    seed,
                    ADJUSTMENT,
                )
            )
        for k, j in enumerate(ranked):
            values, counts = np.unique(ranks[:, k], return_counts=True)
            for value, count in zip(values, counts):
                distribution.append((models[j], channel, score, float(value), float(count / len(ranks))))
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


PAIR_SCHEMA = {
    "channel": pl.String,
    "metric": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "conf_level": pl.Float64,
    "method": pl.String,
    "p_adjusted": pl.Float64,
    "adjustment": pl.String,
    "verdict": pl.String,
    "margin": pl.Float64,
    "draws": pl.Int64,
    "seed": pl.Int64,
}


def _pair_intervals(tested: _ChannelTests, i: int, j: int, levels: tuple[float, ...], rule: str = "auto"):
    """(low, high, method) at each level of ranked models j − i's score difference. A rate with the same
    denominators on both sides (accuracy, PGR): each family's difference splits into what j gains and
    what it loses, and `intervals.difference_intervals` keeps MOVER's honest width near 0 and 100%. Any
    other score (a reliance margin, a CFR on each model's own right sources): the percentile interval,
    none where it is a point (no replicate moved it: nothing can be said of its width)."""
    m, n = tested.ranked[i], tested.ranked[j]
    a, b = tested.a, tested.b
    replicates = (tested.replicate_scores[:, j] - tested.replicate_scores[:, i])[:, None]
    rate = np.array_equal(b[:, m], b[:, n]) and (a[:, [m, n]] >= 0).all() and (a[:, [m, n]] <= b[:, [m, n]]).all()
    out = []
    for level in levels:
        if rate:
            gain = np.maximum(a[:, n] - a[:, m], 0.0)[:, None]
            loss = np.maximum(a[:, m] - a[:, n], 0.0)[:, None]
            low, high, method = intervals.difference_intervals(gain, loss, b[:, [m]], replicates, level, rule=rule)
            out.append((float(low[0]), float(high[0]), str(method[0])))
        else:
            low, high, _ = intervals.percentile_interval(replicates, level)
            point = not (high[0] > low[0])
            out.append((np.nan, np.nan, "point") if point else (float(low[0]), float(high[0]), intervals.PERCENTILE))
    return out


def pair_verdicts(
    outcomes: pl.DataFrame,
    *,
    score: str = "pgr",
    channels: list[str],
    models: list[str],
    draws: int = 2000,
    seed: int = 0,
    conf_level: float = 0.95,
    margin: float | None = None,
    test: str = "equivalence",
    interval: str = "auto",
) -> pl.DataFrame:
    """Every pair of models on each channel in words: the verdicts behind the rank ranges.

    One row per pair of ranked models, in leaderboard order (model_a the better placed): ``estimate``
    = model_b's score − model_a's (pp), its family-bootstrap interval at ``conf_level`` (per pair), and
    ``verdict`` (`compare.verdicts`' words, model B against A):

    - ``behind``: the pair is separated by the test the rank ranges rest on (`pairwise_p_values`,
      ``p_adjusted`` below 1 − ``conf_level``: simultaneous within the channel), so a verdict never
      contradicts a tie group;
    - else ``equivalent``: the pair's 1 − 2α interval lies within ±``margin`` (two one-sided tests,
      per pair); with ``test="non_inferiority"``, ``non-inferior``: its lower end lies above −margin;
    - else ``undecided``.

    ``interval`` (`intervals.RULES`) picks the pair's interval for a rate, as for the metrics. The same
    replicates as `rank_intervals` for this seed. A model with no score on a channel's cohort has no
    pairs there.
    """
    if score not in SCORES:
        raise UsageError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
    resample.check_options(draws=draws, conf_level=conf_level)
    margin, test, interval = _check_margin(margin), check_test(test), intervals.check_rule(interval)
    levels = (conf_level, 2 * conf_level - 1) if conf_level > 0.5 else (conf_level,)
    rows = []
    for channel in channels:
        tested = _channel_tests(outcomes, channel, models, score, draws, seed, conf_level)
        order = np.argsort(_ranks(tested.estimates[tested.ranked]), kind="stable")
        for x, i in enumerate(order):
            for j in order[x + 1 :]:
                found = (
                    _pair_intervals(tested, i, j, levels, interval)
                    if draws
                    else [(np.nan, np.nan, "point")] * len(levels)
                )
                (low, high, method), *tost = found
                tost_low, tost_high, _ = tost[0] if tost else (np.nan, np.nan, None)
                if tested.separated[i, j]:
                    word = "behind"
                else:  # not separated: what is left to say is whether the difference is within the margin
                    word = verdicts(*[np.array([v]) for v in (-1.0, 1.0, tost_low, tost_high)], margin, test=test)[0]
                estimates = tested.estimates[tested.ranked]
                rows.append(
                    (
                        channel,
                        score,
                        models[tested.ranked[i]],
                        models[tested.ranked[j]],
                        float(estimates[j] - estimates[i]),
                        low,
                        high,
                        conf_level,
                        method,
                        float(tested.p[i, j]),
                        ADJUSTMENT,
                        word,
                        margin,
                        draws,
                        seed,
                    )
                )
    frame = pl.DataFrame(rows, schema=PAIR_SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    return units.percent_columns(frame, ("estimate", "conf_low", "conf_high", "margin"))


def saturated_channels(ranks: pl.DataFrame) -> list[str]:
    """The channels of `rank_intervals` output whose top models these families cannot separate."""
    return ranks.filter(pl.col("saturated"))["channel"].unique(maintain_order=True).to_list()
