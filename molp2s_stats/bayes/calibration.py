"""Simulation-based calibration (Talts et al. 2018; Modrák et al. 2023) of the fit.

One replicate: parameters drawn from the priors, answers drawn from the model with
them (``predictive``), the model fitted to those answers as ``molp2s fit`` does, and
the rank of each true quantity among the posterior draws (thinned to ``RANKED_DRAWS``
roughly independent ones). If the posterior is calibrated, every rank is uniform on
0 … ``RANKED_DRAWS``: too many extreme ranks mean intervals too narrow, too many in the
middle intervals too wide, a slope a bias. The quantities are those users read:
reliance and cf accuracy per model × channel (probability scale, averaged over the
cohort's families) and the family and family × channel spreads.

benchmarks/bench_sbc.py runs the replicates; the χ² test of the ranks' uniformity that reads its
results file is ``molp2s_stats.performance.sbc_uniformity``.
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

from . import fit as bayes_fit
from . import health, posterior, predictive
from .data import MODELLED_CONDITIONS, ModelData, index

RANKED_DRAWS = 99  # ranks 0 … 99: 100 values, 10 bins of 10
RANK_SCHEMA = {
    "replicate": pl.Int64,
    "quantity": pl.String,
    "model": pl.String,
    "channel": pl.String,
    "rank": pl.Int64,
    "ranked_draws": pl.Int64,
    "passed": pl.Boolean,
    "attempts": pl.Int64,
    "seconds": pl.Float64,
    "seed": pl.Int64,
}


def data_with_successes(cells: predictive.Cells, successes: np.ndarray, p0_successes: np.ndarray) -> ModelData:
    """The model's data for the cells of ``cells`` with these successes (same trials and cohort)."""
    frame = pl.DataFrame(
        {
            "model": np.array(cells.models)[cells.model],
            "channel": np.array(cells.channels)[cells.channel],
            "condition": np.array(MODELLED_CONDITIONS)[cells.condition],
            "family_id": np.array(cells.families)[cells.family],
            "successes": successes.astype(np.int64),
            "trials": cells.trials.astype(np.int64),
        }
    )
    p0 = pl.DataFrame(
        {
            "model": np.array(cells.models)[cells.p0_model],
            "family_id": np.array(cells.families)[cells.p0_family],
            "successes": p0_successes.astype(np.int64),
            "trials": cells.p0_trials.astype(np.int64),
        }
    )
    return index(frame, p0, n_candidates=cells.n_candidates)


def _quantity_draws(
    cell: np.ndarray,
    family_sd: np.ndarray,
    family_z: np.ndarray,
    family_channel_sd: np.ndarray,
    family_channel_z: np.ndarray,
    data: ModelData,
) -> dict[tuple[str, str, str], np.ndarray]:
    families = {f: i for i, f in enumerate(data.families)}
    family = family_sd[:, None] * family_z
    effects = family[:, [families[f] for f, _ in data.family_channels]] + family_channel_sd[:, None] * family_channel_z
    out = {("family_sd", "all", "all"): family_sd, ("family_channel_sd", "all", "all"): family_channel_sd}
    for channel, values in posterior.probabilities(cell, effects, data.family_channels, data.channels).items():
        for metric in ("reliance", "responsiveness"):
            for j, model in enumerate(data.models):
                out[(metric, model, channel)] = values[metric][:, j]
    return out


def replicate(
    cells: predictive.Cells, number: int, *, seed: int = 0, draws: int = 500, chains: int = 4, budget: float = 120.0
) -> pl.DataFrame:
    """One SBC replicate: the rank of each true quantity among ``RANKED_DRAWS`` thinned posterior draws."""
    rng = np.random.default_rng([seed, number])
    truth = predictive.prior_parameters(cells, rng, 1)
    successes, p0_successes = predictive.draw_counts(*predictive.parameters_eta(truth, cells), cells, rng)
    data = data_with_successes(cells, successes[0], p0_successes[0])
    started = time.perf_counter()
    idata = bayes_fit.fit(data, draws=draws, chains=chains, seed=int(rng.integers(2**31)), budget=budget)
    seconds = time.perf_counter() - started
    row = health.diagnostics(idata).row(0, named=True)
    names = ("cell", "family_sd", "family_z", "family_channel_sd", "family_channel_z")
    thinned = posterior.thinned_draws(idata, names, RANKED_DRAWS)
    fitted = _quantity_draws(*(thinned[name] for name in names), data)
    true = _quantity_draws(
        truth["cell"],
        truth["family_sd"],
        truth["family_z"],
        truth["family_channel_sd"],
        truth["family_channel_z"],
        data,
    )
    rows = [
        (
            number,
            quantity,
            model,
            channel,
            int((fitted[key] < true[key][0]).sum()),
            RANKED_DRAWS,
            bool(row["passed"]),
            int(row["attempts"]),
            seconds,
            seed,
        )
        for key in fitted
        for quantity, model, channel in [key]
    ]  # key = (quantity, model, channel)
    return pl.DataFrame(rows, schema=RANK_SCHEMA, orient="row")
