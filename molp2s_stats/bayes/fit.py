"""Sampling the model and saving the fit (InferenceData as NetCDF, for ArviZ users)."""

from __future__ import annotations

import json
import time

import arviz as az
import pymc as pm

from .data import ModelData
from .model import build_model

DEFAULT_DRAWS, DEFAULT_TUNE, DEFAULT_CHAINS = 1000, 1000, 4


def fit(data: ModelData, *, draws: int = DEFAULT_DRAWS, tune: int = DEFAULT_TUNE, chains: int = DEFAULT_CHAINS,
        seed: int = 0, sampler: str = "nutpie", loo: bool = True, progressbar: bool = False) -> az.InferenceData:
    """Sample the model (and, for LOO, the same model without family effects).

    The InferenceData carries in ``attrs`` the seed, the sampler settings, the wall
    time, the cohort (the (family, channel) pairs) and, with ``loo``, the LOO
    comparison against the model without family effects.
    """
    started = time.perf_counter()
    model = build_model(data)
    idata = pm.sample(model=model, draws=draws, tune=tune, chains=chains, random_seed=seed,
                      nuts_sampler=sampler, progressbar=progressbar)
    seconds = time.perf_counter() - started
    attrs = {"seed": seed, "sampler": sampler, "draws": draws, "tune": tune, "chains": chains,
             "seconds": seconds, "n_candidates": data.n_candidates,
             "cohort": json.dumps(data.family_channels)}
    if loo:
        # nutpie does not store the pointwise log-likelihood: compute it before LOO.
        pm.compute_log_likelihood(idata, model=model, progressbar=False)
        plain = build_model(data, family_effects=False)
        idata_plain = pm.sample(model=plain, draws=draws, tune=tune, chains=chains, random_seed=seed,
                                nuts_sampler=sampler, progressbar=progressbar)
        pm.compute_log_likelihood(idata_plain, model=plain, progressbar=False)
        attrs.update(_loo_comparison(idata, idata_plain))
    idata.posterior.attrs.update(attrs)
    return idata


def _loo_comparison(with_family: az.InferenceData, without_family: az.InferenceData) -> dict[str, float]:
    """elpd_loo of both models over the same binomial cells, and their difference with its SE."""
    first = az.loo(_stacked_log_likelihood(with_family), pointwise=True)
    second = az.loo(_stacked_log_likelihood(without_family), pointwise=True)
    difference = first.loo_i.values - second.loo_i.values
    return {"loo_elpd": float(first.elpd_loo), "loo_elpd_no_family": float(second.elpd_loo),
            "loo_difference": float(difference.sum()),
            "loo_difference_se": float(difference.std(ddof=1) * len(difference) ** 0.5),
            "loo_pareto_k_max": float(max(first.pareto_k.values.max(), second.pareto_k.values.max()))}


def _stacked_log_likelihood(idata: az.InferenceData) -> az.InferenceData:
    """One log-likelihood variable over every observed cell (``y`` then ``y_p0``)."""
    import xarray as xr

    parts = [idata.log_likelihood[name].rename({idata.log_likelihood[name].dims[-1]: "cell"})
             for name in ("y", "y_p0") if name in idata.log_likelihood]
    stacked = xr.concat(parts, dim="cell")
    return az.InferenceData(posterior=idata.posterior, log_likelihood=xr.Dataset({"y": stacked}))
