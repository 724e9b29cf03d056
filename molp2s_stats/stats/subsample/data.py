"""The matrices a plan and an estimate read, and the prediction they share: per channel, each metric's
a_f and b_f for every (family, model); each model's pooled difficulty of a family; the weighted
least-squares fit that predicts a model's values from the complete models' mean and that difficulty."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..metrics import family_matrices, metric_components


@dataclass(frozen=True)
class ChannelData:
    """One channel's cohort families and, per metric, the (families, models) matrices of a_f and b_f."""

    channel: str
    families: list[str]
    models: list[str]
    a: dict[str, np.ndarray]
    b: dict[str, np.ndarray]


def channel_data(
    outcomes: pl.DataFrame, channel: str, models: list[str], metrics: tuple[str, ...], families: list[str] | None = None
) -> ChannelData:
    """a_f and b_f of each metric for these models on the channel's families (default: every family
    with a row); a model without a row for a family gets NaN there."""
    part = outcomes.filter(pl.col("channel") == channel)
    if families is None:
        families = sorted(part["family_id"].unique().to_list())
    exprs = [e.alias(f"{m}:{side}") for m in metrics for side, e in zip(("a", "b"), metric_components(m))]
    _, matrices = family_matrices(
        part.select("model", "family_id", *exprs),
        models=list(models),
        columns=[f"{m}:{side}" for m in metrics for side in "ab"],
        families=families,
        missing=np.nan,
    )
    a = {m: matrices[f"{m}:a"] for m in metrics}
    b = {m: matrices[f"{m}:b"] for m in metrics}
    return ChannelData(channel, families, list(models), a, b)


def pooled_difficulty(outcomes: pl.DataFrame, models: list[str], families: list[str]) -> np.ndarray:
    """(families, models): each model's mean correctness on the family over every channel and
    condition (P0, source, shuffled, cf), a less noisy reading of how hard the family is than any
    one channel's. NaN where a model has no row for the family."""
    frame = (
        outcomes.filter(pl.col("model").is_in(models))
        .with_columns((pl.col("cf_correct") / pl.col("cf_tasks").cast(pl.Float64)).alias("y_cf"))
        .group_by("family_id", "model")
        .agg(pl.mean_horizontal("y_p0", "y_source", "y_shuffled", "y_cf").mean().alias("difficulty"))
    )
    return family_matrices(frame, models=list(models), columns=["difficulty"], families=families, missing=np.nan)[1][
        "difficulty"
    ]


def others_mean(values: np.ndarray, others: list[int]) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.nanmean(values[:, others], axis=1) if others else np.full(len(values), np.nan)


PREDICTORS = ("own", "pooled")


def design_matrix(own: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """Intercept, the complete models' mean of the quantity itself, and the pooled difficulty."""
    columns = [np.ones_like(own)]
    if "own" in PREDICTORS:
        columns.append(own)
    if "pooled" in PREDICTORS:
        columns.append(pooled)
    return np.column_stack(columns)


def weighted_least_squares(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares coefficients (minimum-norm where the design is singular: a constant
    predictor on the sample, say)."""
    sw = np.sqrt(w)
    beta, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    return beta


def cohort_variance(a: np.ndarray, b: np.ndarray, sampled: np.ndarray, w: np.ndarray, theta: float) -> float:
    """The variance, on the scale of the sums, of the cohort's own score around the score over families like
    these: ``n/(n − 1) · Σ w (u − ū)²`` over the n answered families, u = a − θ b, the design-weighted
    estimate of N · S²_u (unbiased for a simple random sample).

    The design's variance (with its finite-population correction) is that of the estimate around this
    cohort's score. A complete model's interval is about families like these (the family bootstrap, the
    cohort a sample of them), so a partial model's carries this term too: without the prediction the two
    add up to S²_u / n, a simple random sample's; answered in full, the design's part is 0 and the
    interval is a complete model's, not a point; and a model that answered most families is, in
    expectation, never surer than one that answered them all.

    Two families answered of four, weights 2, u = (0.5, −0.5): 2/1 · 2 · (0.25 + 0.25) = 2:

    >>> cohort_variance(np.array([1.0, 0, 0, 0]), np.ones(4), np.array([True, True, False, False]), np.full(4, 2.0), 0.5)
    2.0
    """
    weights, u = w[sampled], a[sampled] - theta * b[sampled]
    n = len(u)
    if n < 2 or weights.sum() <= 0:
        return 0.0
    centred = u - (weights * u).sum() / weights.sum()
    return float(n / (n - 1) * (weights * centred**2).sum())
