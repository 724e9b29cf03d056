"""Quantities users read off a fit, on the probability scale, as tidy frames.

Reliance of model m on channel c is the posterior of
``mean_f [σ(cell[m, source, c] + a_f,c) − σ(cell[m, shuffled, c] + a_f,c)]`` over the
channel's cohort families, with ``a_f,c = σ_f u_f + σ_fc v_f,c`` the family effects;
responsiveness is ``mean_f σ(cell[m, cf, c] + a_f,c)``, the posterior cf accuracy (the share of
cf answers that follow the counterfactual's properties). Both in %/pp.
"""

from __future__ import annotations

import json
import weakref

import arviz as az
import numpy as np
import polars as pl
from scipy import stats
from scipy.special import expit

from .. import units
from ..errors import UsageError
from ..stats.metrics import ESTIMATE_COLUMNS
from .model import pair_effects

HDI_PROB = 0.94
QUANTITY_SCHEMA = {
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
}


def _draws(idata: az.InferenceData, name: str) -> np.ndarray:
    """Posterior draws of a variable with chains and draws stacked first."""
    values = idata.posterior[name].values
    return values.reshape(-1, *values.shape[2:])


def thinned_draws(idata: az.InferenceData, names: tuple[str, ...], number: int) -> dict[str, np.ndarray]:
    """``number`` posterior draws of each variable, evenly spaced over the stacked chains, as float64
    (what the model checks and the calibration read; a draw repeats when there are fewer)."""
    total = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    keep = np.linspace(0, total - 1, number).round().astype(int)
    return {name: _draws(idata, name)[keep].astype(np.float64) for name in names}


_last_probabilities: tuple = (lambda: None, None)  # (weak reference to a fit, its probability draws)


def probability_draws(idata: az.InferenceData) -> dict[str, dict[str, np.ndarray]]:
    """Per channel: reliance and responsiveness draws, arrays of shape (draws, models), as proportions.

    Kept for the last fit asked about (InferenceData cannot be a dictionary key): the
    Posterior page reads reliance, responsiveness, contrasts and ranks off one fit, and on
    the default fit each computation took 2–3 s (4,000 draws × 8 models × 3 conditions ×
    3,448 cohort pairs through the logistic).
    """
    global _last_probabilities
    fit, cached = _last_probabilities
    if fit() is idata:
        return cached
    cached = _probability_draws(idata)
    _last_probabilities = (weakref.ref(idata), cached)
    return cached


def _probability_draws(idata: az.InferenceData) -> dict[str, dict[str, np.ndarray]]:
    post = idata.posterior
    channels = list(post.coords["channel"].values)
    if "cell" not in post or "cohort" not in post.attrs:
        raise UsageError(
            "this fit was saved by an older version of molp2s-stats (no 'cell' draws); run `molp2s fit` again"
        )
    pairs = [tuple(p) for p in json.loads(post.attrs["cohort"])]
    return probabilities(_draws(idata, "cell"), pair_effects(idata, pairs), pairs, channels)


def probabilities(
    cell: np.ndarray, effects: np.ndarray, pairs: list[tuple[str, str]], channels: list[str]
) -> dict[str, dict[str, np.ndarray]]:
    """Reliance and responsiveness per channel from draws of ``cell`` (S, M, K, C) and the family
    effects of each cohort pair (S, pairs): what ``probability_draws`` reads off a fit."""
    out = {}
    for c, channel in enumerate(channels):
        members = [i for i, (_, pair_channel) in enumerate(pairs) if pair_channel == channel]
        offset = effects[:, members]
        source, shuffled, cf = (expit(cell[:, :, k, c][:, :, None] + offset[:, None, :]).mean(axis=2) for k in range(3))
        out[channel] = {"reliance": source - shuffled, "responsiveness": cf, "families": len(members)}
    return out


def quantities(idata: az.InferenceData, metric: str) -> pl.DataFrame:
    """Posterior mean and 94% HDI of ``reliance`` or ``responsiveness``; one row per model × channel."""
    models = list(idata.posterior.coords["model"].values)
    seed = int(idata.posterior.attrs.get("seed", 0))
    rows = []
    for channel, values in probability_draws(idata).items():
        draws = values[metric]
        for j, model in enumerate(models):
            low, high = az.hdi(draws[:, j], hdi_prob=HDI_PROB)
            rows.append(
                (
                    model,
                    channel,
                    metric,
                    float(draws[:, j].mean()),
                    float(low),
                    float(high),
                    HDI_PROB,
                    values["families"],
                    "posterior",
                    draws.shape[0],
                    0,
                    seed,
                )
            )
    return units.percent_columns(pl.DataFrame(rows, schema=QUANTITY_SCHEMA, orient="row"), ESTIMATE_COLUMNS)


def contrasts(idata: az.InferenceData, metric: str = "reliance") -> pl.DataFrame:
    """P(metric_A > metric_B) for every ordered pair of models and every channel."""
    models = list(idata.posterior.coords["model"].values)
    rows = []
    for channel, values in probability_draws(idata).items():
        draws = values[metric]
        for a, model_a in enumerate(models):
            for b, model_b in enumerate(models):
                if a != b:
                    rows.append((channel, metric, model_a, model_b, float((draws[:, a] > draws[:, b]).mean())))
    return pl.DataFrame(
        rows,
        schema={
            "channel": pl.String,
            "metric": pl.String,
            "model_a": pl.String,
            "model_b": pl.String,
            "probability": pl.Float64,
        },
        orient="row",
    )


def ranks(idata: az.InferenceData, metric: str = "reliance") -> pl.DataFrame:
    """Each model's posterior rank distribution per channel (1 = highest)."""
    models = list(idata.posterior.coords["model"].values)
    rows = []
    for channel, values in probability_draws(idata).items():
        ranked = stats.rankdata(-values[metric], axis=1, method="average")
        for j, model in enumerate(models):
            levels, counts = np.unique(ranked[:, j], return_counts=True)
            rows += [(model, channel, metric, float(r), float(n / len(ranked))) for r, n in zip(levels, counts)]
    return pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "channel": pl.String,
            "metric": pl.String,
            "rank": pl.Float64,
            "probability": pl.Float64,
        },
        orient="row",
    )


def truth_check(
    idata: az.InferenceData, truth: pl.DataFrame, *, metric: str = "reliance", hdi_prob: float = 0.9
) -> pl.DataFrame:
    """Posterior against a simulator's truth (``simulate`` writes it): one row per model × channel.

    Columns ``model, channel, estimate, conf_low, conf_high, truth, covered``; the share
    of ``covered`` and the correlation of estimate with truth are the check against known truth (90% intervals
    should cover the truth in at least 80% of cells).
    """
    models = list(idata.posterior.coords["model"].values)
    known = {(m, c): v for m, c, q, v in truth.iter_rows() if q == metric}
    rows = []
    for channel, values in probability_draws(idata).items():
        for j, model in enumerate(models):
            low, high = az.hdi(values[metric][:, j], hdi_prob=hdi_prob)
            true = known[(model, channel)]  # in %, as the simulator writes it
            rows.append(
                (
                    model,
                    channel,
                    float(values[metric][:, j].mean()),
                    float(low),
                    float(high),
                    true,
                    bool(low <= units.proportion(true) <= high),
                )
            )
    frame = pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "channel": pl.String,
            "estimate": pl.Float64,
            "conf_low": pl.Float64,
            "conf_high": pl.Float64,
            "truth": pl.Float64,
            "covered": pl.Boolean,
        },
        orient="row",
    )
    return units.percent_columns(frame, ESTIMATE_COLUMNS)


recovery = truth_check  # the name earlier versions used ("recovery" now means only PGR)


def mean_differences(first: az.InferenceData, second: az.InferenceData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """How far two fits of one model put ``name``'s posterior means apart: per element, the absolute
    difference of the means and its Monte Carlo standard error (ArviZ's mcse of each fit, combined).
    Two samplings of the same posterior differ by a few of these errors at most (a warm start
    against a cold one, summed cells against per-family ones)."""
    difference = np.abs(
        first.posterior[name].mean(("chain", "draw")).values - second.posterior[name].mean(("chain", "draw")).values
    )
    error = np.sqrt(
        az.mcse(first.posterior[[name]])[name].values ** 2 + az.mcse(second.posterior[[name]])[name].values ** 2
    )
    return difference, error
