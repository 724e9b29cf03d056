"""Power and minimum detectable effects for comparing two models on one channel.

A difference between two models is a contrast of per-family outcomes, for RM
``d_f = (src_A − shuf_A) − (src_B − shuf_B)`` and for PGR
``d_f = (½ src_A + ½ mean_k cf_A,k) − (½ src_B + ½ mean_k cf_B,k)``. Outcomes of one
family are correlated (some families are hard for every model and condition): with
Bernoulli variances ``v_i = p_i(1 − p_i)`` and a common intra-cluster correlation ρ,
``Var(d_f) = wᵀ Σ w`` with ``Σ_ii = v_i`` and ``Σ_ij = ρ √(v_i v_j)``. The estimate is
the mean of ``d_f`` over F families, so a two-sided test at level α has power
``1 − β`` against

    MDE = (z_{1−α/2} + z_{1−β}) · √(Var(d_f) / F)        (normal approximation)

and a difference Δ needs ``F = (z_{1−α/2} + z_{1−β})² · Var(d_f) / Δ²`` families.
The design effect is ``Var(d_f)`` over its value with ρ = 0. For a difference between
two models at the same accuracies, a shared family effect cancels in part (it is
1 − ρ, below 1: pairing by family helps); for a single model's mean over several cf
tasks of a family it is 1 + (m − 1)ρ, above 1: those tasks are not independent
evidence.
"""

from __future__ import annotations

import math

import numpy as np
import pingouin as pg
import polars as pl
from scipy import stats

from .. import units
from ..errors import UsageError

POWER_METRICS = ("reliance_margin", "pgr")  # the metrics whose power between two models is computed
POWER_SCHEMA = {
    "channel": pl.String,
    "metric": pl.String,
    "families": pl.Int64,
    "alpha": pl.Float64,
    "power": pl.Float64,
    "icc": pl.Float64,
    "design_effect": pl.Float64,
    "sd_family": pl.Float64,
    "mde": pl.Float64,
}


def contrast(
    metric: str, p_a: dict[str, float], p_b: dict[str, float], cf_tasks: float
) -> tuple[np.ndarray, np.ndarray]:
    """(weights, success probabilities) of the per-family outcomes behind a model difference.

    ``p_a`` and ``p_b`` give each model's accuracy by condition (``source``, ``shuffled``,
    ``cf``) as fractions; ``cf_tasks`` is the mean number of cf tasks per family.
    """
    if metric == "reliance_margin":
        weights = [1.0, -1.0, -1.0, 1.0]
        probabilities = [p_a["source"], p_a["shuffled"], p_b["source"], p_b["shuffled"]]
    elif metric == "pgr":
        m = max(int(round(cf_tasks)), 1)
        weights = [0.5] + [0.5 / m] * m + [-0.5] + [-0.5 / m] * m
        probabilities = [p_a["source"]] + [p_a["cf"]] * m + [p_b["source"]] + [p_b["cf"]] * m
    else:
        raise UsageError(f"metric must be one of {', '.join(POWER_METRICS)}, got {metric!r}")
    return np.array(weights), np.clip(np.array(probabilities), 0.0, 1.0)


def contrast_variance(
    weights: np.ndarray, probabilities: np.ndarray, icc: float | None = None, *, covariance: np.ndarray | None = None
) -> tuple[float, float]:
    """(Var(d_f), design effect) for outcomes with a common intra-cluster correlation,
    or with a given covariance matrix of the outcomes."""
    sd = np.sqrt(probabilities * (1 - probabilities))
    if covariance is None:
        if icc is None:
            raise ValueError("give icc or covariance")
        covariance = icc * np.outer(sd, sd)
        np.fill_diagonal(covariance, sd**2)
    # w'Σw summed term by term, correctly rounded (math.fsum): BLAS's small dot products round
    # differently with the arrays' alignment in memory, so the same call gave either of two
    # last digits depending on what the process had allocated before (a report page's kernel)
    variance = math.fsum((np.outer(weights, weights) * covariance).ravel().tolist())
    independent = float((weights**2 * sd**2).sum())
    return variance, (variance / independent if independent > 0 else float("nan"))


def _z(alpha: float, power: float) -> float:
    if not (0 < alpha < 1 and 0 < power < 1):
        raise UsageError("alpha and power must lie between 0 and 1")
    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def minimum_detectable_effect(variance: float, families: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true difference (pp) a two-sided test detects with this power.

    >>> round(minimum_detectable_effect(0.25, 100), 2)  # (1.960 + 0.842) · √(0.25/100) · 100
    14.01
    """
    return units.percent(_z(alpha, power) * math.sqrt(variance / families))


def families_needed(variance: float, difference_pp: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Families needed to detect ``difference_pp`` with this power (rounded up).

    >>> families_needed(0.25, 14.01)
    100
    """
    if difference_pp == 0:
        raise UsageError("a difference of 0 needs infinitely many families")
    return math.ceil(_z(alpha, power) ** 2 * variance / units.proportion(difference_pp) ** 2)


def family_icc(outcomes: pl.DataFrame, channel: str) -> float:
    """Intra-cluster correlation of outcomes within a family, across models and conditions.

    ICC(1,1) of pingouin's ``intraclass_corr`` with families as targets and every
    (model, condition) cell as a rater; cf outcomes enter as the family's mean
    recovery. Read off the ``family_outcomes`` view of one channel's cohort.
    """
    part = outcomes.filter(pl.col("channel") == channel)
    long = part.unpivot(
        index=["model", "family_id"],
        on=["y_p0", "y_source", "y_shuffled", "cf_flip"],
        variable_name="condition",
        value_name="y",
    ).drop_nulls("y")
    long = long.with_columns(pl.format("{}:{}", "model", "condition").alias("cell"))
    if long["family_id"].n_unique() < 3:
        raise UsageError(f"channel {channel!r}: too few families for an intra-cluster correlation")
    table = pg.intraclass_corr(
        data=long.to_pandas(), targets="family_id", raters="cell", ratings="y", nan_policy="omit"
    )
    by_type = table.set_index("Type")["ICC"]
    # one-way random effects, single rater: "ICC(1,1)" in pingouin 0.7, "ICC1" before
    return float(by_type["ICC(1,1)"] if "ICC(1,1)" in by_type.index else by_type["ICC1"])


def power_table(
    outcomes: pl.DataFrame,
    *,
    channels: list[str],
    families: int | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    difference: float | None = None,
) -> pl.DataFrame:
    """Minimum detectable RM and PGR difference between two typical models, per channel.

    "Typical" takes each condition's accuracy averaged over the models in the cohort,
    for both models of the pair: the MDE at the observed accuracy level.

    Returns
    -------
    polars.DataFrame
        One row per channel × metric: ``channel, metric, families, alpha, power, icc,
        design_effect, sd_family, mde`` (MDE and the per-family SD in pp); with
        ``difference`` (pp), also ``difference`` and ``families_needed`` to detect it.
    """
    rows, needed = [], []
    for channel in channels:
        part = outcomes.filter(pl.col("channel") == channel)
        if part.height == 0:
            continue
        icc = family_icc(outcomes, channel)
        p = {
            "source": part["y_source"].mean(),
            "shuffled": part["y_shuffled"].mean(),
            "cf": part["cf_flip"].mean() or 0.0,
        }
        cf_tasks = float(part["cf_tasks"].mean())
        n = families if families is not None else part["family_id"].n_unique()
        for metric in POWER_METRICS:
            variance, deff = contrast_variance(*contrast(metric, p, p, cf_tasks), icc)
            rows.append(
                (
                    channel,
                    metric,
                    n,
                    alpha,
                    power,
                    icc,
                    deff,
                    units.percent(math.sqrt(variance)),
                    minimum_detectable_effect(variance, n, alpha=alpha, power=power),
                )
            )
            if difference is not None:
                needed.append(families_needed(variance, difference, alpha=alpha, power=power))
    table = pl.DataFrame(rows, schema=POWER_SCHEMA, orient="row")
    if difference is not None:
        table = table.with_columns(
            pl.lit(difference, pl.Float64).alias("difference"), pl.Series("families_needed", needed, pl.Int64)
        )
    return table
