"""Sampling the model and saving the fit (InferenceData as NetCDF, for ArviZ users)."""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

import arviz as az

from . import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TUNE, LOW_RANK, SAMPLERS, TARGET_ACCEPT
from .data import ModelData
from .model import LOO_DRAWS, pointwise_log_likelihood
from ..errors import UsageError


def show_progress() -> bool:
    """A progress bar (draws, divergences, time left) only on a terminal, never in CI or in a pipe."""
    return sys.stderr.isatty() and not os.environ.get("CI")


def sample(data: ModelData, *, draws: int, tune: int, chains: int, seed: int, sampler: str = "nutpie",
           target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK, family_effects: bool = True,
           progressbar: bool = False) -> az.InferenceData:
    """NUTS draws of the model of ``data``: nutpie on the float32 JAX log density of
    ``density`` (default), or PyMC's own NUTS on the PyMC model of ``model.build_model``.

    The JAX density compiles in about a second and needs no PyMC at all. ``low_rank``
    turns on nutpie's low-rank mass-matrix adaptation (nutpie only), which learns the
    correlation between the family × channel spread and its deviations: at paper size it
    took the slowest parameter's bulk ESS per draw from 4–5 % to 11–13 %
    (benchmarks/bench_bayes.py).
    """
    if sampler not in SAMPLERS:
        raise UsageError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    if sampler == "nutpie":
        import nutpie

        from .density import nutpie_model

        return nutpie.sample(nutpie_model(data, family_effects=family_effects), draws=draws, tune=tune,
                             chains=chains, seed=seed, target_accept=target_accept, progress_bar=progressbar,
                             save_warmup=False, low_rank_modified_mass_matrix=low_rank)
    import pymc as pm

    from .model import build_model

    return pm.sample(model=build_model(data, family_effects=family_effects), draws=draws, tune=tune, chains=chains,
                     random_seed=seed, progressbar=progressbar, target_accept=target_accept,
                     compute_convergence_checks=False)


def fit(data: ModelData, *, draws: int = DEFAULT_DRAWS, tune: int = DEFAULT_TUNE, chains: int = DEFAULT_CHAINS,
        seed: int = 0, sampler: str = "nutpie", target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK,
        loo: bool = False, progressbar: bool = False) -> az.InferenceData:
    """Sample the model (and, with ``loo``, the same model without family effects).

    LOO is asked for, not done by default: it samples a second model and computes the
    pointwise log-likelihood of both. The report asks for it; ``molp2s fit --loo`` too.

    The InferenceData carries in ``attrs`` the seed, the sampler settings, the wall
    time of the model's fit (``seconds``, without the LOO refit), the cohort (the
    (family, channel) pairs) and, with ``loo``, the LOO comparison against the model
    without family effects.
    """
    started = time.perf_counter()
    options = {"draws": draws, "tune": tune, "chains": chains, "seed": seed, "sampler": sampler,
               "target_accept": target_accept, "low_rank": low_rank}
    idata = sample(data, progressbar=progressbar, **options)
    seconds = time.perf_counter() - started
    # NetCDF attributes hold no booleans: low_rank is saved as 0 or 1
    attrs = {**options, "low_rank": int(low_rank), "seconds": seconds, "n_candidates": data.n_candidates,
             "cohort": json.dumps(data.family_channels)}
    if loo:
        # the model without family effects is sampled only for LOO, which reads LOO_DRAWS draws: no more
        # are drawn (it is small and mixes fast; on the default data 4 × 1,200 draws took 29 s)
        plain = sample(data, family_effects=False, progressbar=progressbar,
                       **{**options, "draws": min(draws, -(-LOO_DRAWS // chains))})
        attrs.update(_loo_comparison(pointwise_log_likelihood(idata, data), pointwise_log_likelihood(plain, data)))
    idata = slim(idata)
    idata.posterior.attrs.update(attrs)
    return idata


def slim(idata: az.InferenceData) -> az.InferenceData:
    """What users read, and no more: the model's variables as float32, without the warm-up
    draws and the sampler's unconstrained internals (``*_log__``, ``*_zerosum__``).

    At 7 models × 7 channels × 388 families this took the saved fit from 253 MB to about a
    third of that; float32 keeps 7 significant digits, far below the Monte Carlo error.
    """
    posterior = idata.posterior
    posterior = posterior.drop_vars([name for name in posterior.data_vars if str(name).endswith("__")])
    posterior = posterior.astype({name: "float32" for name, v in posterior.data_vars.items()
                                  if v.dtype == "float64"})
    return az.InferenceData(posterior=posterior, sample_stats=idata.sample_stats)


def _loo_comparison(with_family: az.InferenceData, without_family: az.InferenceData) -> dict[str, float]:
    """elpd_loo of both models over the same binomial cells, and their difference with its SE."""
    with warnings.catch_warnings():
        # a high Pareto k is reported in the diagnostics (loo_pareto_k_max), not as a stray warning
        warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
        first = az.loo(with_family, pointwise=True)
        second = az.loo(without_family, pointwise=True)
    difference = first.loo_i.values - second.loo_i.values
    return {"loo_elpd": float(first.elpd_loo), "loo_elpd_no_family": float(second.elpd_loo),
            "loo_difference": float(difference.sum()),
            "loo_difference_se": float(difference.std(ddof=1) * len(difference) ** 0.5),
            "loo_pareto_k_max": float(max(first.pareto_k.values.max(), second.pareto_k.values.max()))}
