"""Sampling the model and saving the fit (InferenceData as NetCDF, for ArviZ users)."""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

from typing import Callable

import arviz as az
import numpy as np

from . import DEFAULT_BUDGET, DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TUNE, LOW_RANK, SAMPLERS, TARGET_ACCEPT, health
from . import predictive
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
        loo: bool = False, progressbar: bool = False, budget: float = DEFAULT_BUDGET,
        on_attempt: Callable[[dict], None] | None = None) -> az.InferenceData:
    """Sample the model until it passes its health gate or the time ``budget`` (seconds) runs out.

    The first attempt uses the settings given. When it misses the gate, what went wrong
    decides the next (``next_attempt``): divergences discard the draws and sample again
    with a smaller step (a higher target acceptance, a longer warm-up; last, nutpie's
    low-rank mass matrix); too few effective draws or a high R-hat add chains to the
    draws, as many as the ESS it got says are needed, or, where the chains are too short
    to pool, sample again with longer ones. An attempt starts only if it is expected to
    end within the budget. A fit that never passes keeps its best attempt (no
    divergences first, then the most effective draws). ``on_attempt`` is called with
    each attempt's row (``health.attempts`` has the columns).

    With ``loo``, the same model without family effects is sampled too, for the LOO
    comparison; it is not part of the budget.

    The InferenceData carries in ``attrs`` the seed, the sampler settings of the first
    attempt, the wall time of the model's fit (``seconds``, every attempt, without the
    LOO refit), the attempts (JSON), the cohort (the (family, channel) pairs) and, with
    ``loo``, the LOO comparison against the model without family effects.
    """
    started = time.perf_counter()
    options = {"draws": draws, "tune": tune, "chains": chains, "seed": seed, "sampler": sampler,
               "target_accept": target_accept, "low_rank": low_rank}
    settings = {"chains": chains, "tune": tune, "draws": draws, "target_accept": target_accept, "low_rank": low_rank}
    kept, best, attempts, action = None, None, [], "first run"
    while True:
        number = len(attempts) + 1
        attempt_seed = seed if number == 1 else int(np.random.SeedSequence([seed, number]).generate_state(1)[0])
        attempt_started = time.perf_counter()
        new = sample(data, seed=attempt_seed, sampler=sampler, progressbar=progressbar, **settings)
        attempt_seconds = time.perf_counter() - attempt_started
        diverged = int(new.sample_stats["diverging"].sum()) if "diverging" in new.sample_stats else 0
        # divergent draws are never pooled: a fresh start is judged on its own
        candidate = new if kept is None or diverged else pool_chains(kept, new)
        row = health.gate(candidate)
        attempts.append({"attempt": number, "action": action, "seed": attempt_seed, "chains": settings["chains"],
                         "tune": settings["tune"], "draws_per_chain": settings["draws"],
                         "target_accept": settings["target_accept"], "low_rank": bool(settings["low_rank"]),
                         "seconds": attempt_seconds, "chains_kept": int(candidate.posterior.sizes["chain"]), **row})
        if on_attempt is not None:
            on_attempt(attempts[-1])
        kept = candidate
        if best is None or _quality(row) > _quality(attempts[best[0]]):
            best = (number - 1, candidate)
        if row["passed"]:
            break
        step = next_attempt(row, settings, chains_kept=int(candidate.posterior.sizes["chain"]), diverged=diverged,
                            previous=action, first_chains=chains, sampler=sampler)
        if step is None:
            break
        action, next_settings, pool = step
        # time per chain-step of this attempt, scaled to the next one (chains run in parallel, a few at a time)
        per_step = attempt_seconds / (_rounds(settings["chains"]) * (settings["tune"] + settings["draws"]))
        expected = per_step * _rounds(next_settings["chains"]) * (next_settings["tune"] + next_settings["draws"])
        if time.perf_counter() - started + expected > budget:
            break
        settings = next_settings
        if not pool:
            kept = None
    seconds = time.perf_counter() - started
    final, idata = best
    # NetCDF attributes hold no booleans: low_rank is saved as 0 or 1
    attrs = {**options, "low_rank": int(low_rank), "seconds": seconds, "budget": budget,
             "n_candidates": data.n_candidates, "cohort": json.dumps(data.family_channels),
             "attempts": json.dumps(attempts), "final_attempt": final + 1}
    if loo:
        # the model without family effects is sampled only for LOO, which reads LOO_DRAWS draws: no more
        # are drawn (it is small and mixes fast; on the default data 4 × 1,200 draws took 29 s)
        plain = sample(data, family_effects=False, progressbar=progressbar,
                       **{**options, "draws": min(draws, -(-LOO_DRAWS // chains))})
        attrs.update(_loo_comparison(pointwise_log_likelihood(idata, data), pointwise_log_likelihood(plain, data)))
    idata = predictive.save_data(slim(idata), data)
    idata.posterior.attrs.update(attrs)
    return idata


ESS_MARGIN = 1.25  # extensions aim at 1.25 × the gate's ESS: the ESS of new chains varies
MAX_GROWTH = 8.0  # an extension at most multiplies the draws by this
MIN_ESS_PER_CHAIN = 50  # below this, chains are made longer rather than more numerous
# after divergences, in turn, each with a longer warm-up (smaller steps need longer to adapt the mass matrix to)
RETRY_TUNE = {0.9: 500, 0.95: 800, 0.99: 1000}
TARGET_ACCEPTS = tuple(RETRY_TUNE)


def _rounds(chains: int) -> int:
    """How many chains' worth of wall time ``chains`` chains take on this machine's cores."""
    return -(-chains // max(1, min(chains, os.cpu_count() or 1)))


def _quality(row: dict) -> tuple:
    """How good an attempt's draws are when none passes: no divergences, then the smallest ESS, then R-hat."""
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    return (row["divergences"] == 0, ess if ess == ess else -1.0, -row["r_hat_max"] if row["r_hat_max"] == row["r_hat_max"] else -9.0)


def next_attempt(row: dict, settings: dict, *, chains_kept: int, diverged: int, previous: str = "first run",
                 first_chains: int = DEFAULT_CHAINS, sampler: str = "nutpie") -> tuple[str, dict, bool] | None:
    """What to do after an attempt that missed the gate: (action, settings, pool the draws?), or None.

    Divergences mean the step size is too large for some region of the posterior: the
    draws are discarded and sampling starts again with a higher target acceptance (a
    smaller step) and a longer warm-up, and finally with the low-rank mass matrix,
    which adapts to correlated parameters. Otherwise the chains are sound but too short
    or too few: new chains are added, enough for ESS_MARGIN × the gate's ESS, estimated
    from the slowest parameter's ESS per draw; a high R-hat alone doubles the chains, and
    if it is still high after that, the chains were too short to forget their start:
    sampling starts again with twice the warm-up and twice the draws per chain. Chains
    with fewer than MIN_ESS_PER_CHAIN effective draws each are too short to pool (R-hat
    cannot settle on them): sampling starts again with chains as much longer as the ESS
    says.
    """
    if diverged:
        higher = [t for t in TARGET_ACCEPTS if t > settings["target_accept"]]
        if higher:
            return (f"divergences: target acceptance {higher[0]}",
                    {**settings, "target_accept": higher[0], "tune": max(settings["tune"], RETRY_TUNE[higher[0]]),
                     "chains": first_chains}, False)
        if not settings["low_rank"] and sampler == "nutpie":  # PyMC's NUTS has no low-rank mass matrix here
            return "divergences: low-rank mass matrix", {**settings, "low_rank": True, "chains": first_chains}, False
        return None
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    growth = ESS_MARGIN * health.ESS_MIN / ess if ess > 0 else MAX_GROWTH
    r_hat_only = row["r_hat_max"] > health.R_HAT_MAX and growth <= 1.0
    if r_hat_only and previous.startswith("more chains") and "R-hat" in previous:
        return ("R-hat still high: longer chains",
                {**settings, "tune": 2 * settings["tune"], "draws": 2 * settings["draws"], "chains": first_chains}, False)
    if growth > 1.0 and ess / chains_kept < MIN_ESS_PER_CHAIN:
        # a chain this short has too few effective draws for R-hat to settle, however many are pooled
        # as many draws in all as the pooled chains had, times the growth the ESS asks for
        draws = int(np.ceil(settings["draws"] * chains_kept / first_chains * min(max(growth, 2.0), MAX_GROWTH)))
        return (f"longer chains: ESS {ess:.0f} over {chains_kept} chains",
                {**settings, "draws": draws, "tune": max(settings["tune"], DEFAULT_TUNE), "chains": first_chains}, False)
    if row["r_hat_max"] > health.R_HAT_MAX:
        growth = max(growth, 2.0)
    growth = min(max(growth, 1.0), MAX_GROWTH)
    parallel = max(1, min(settings["chains"], os.cpu_count() or 1))
    extra = -(-int(np.ceil(chains_kept * (growth - 1.0))) // parallel) * parallel
    reason = f"R-hat {row['r_hat_max']:.3f}" if r_hat_only else f"ESS {ess:.0f}"
    return f"more chains ({max(extra, parallel)}): {reason}", {**settings, "chains": max(extra, parallel)}, True


def pool_chains(first: az.InferenceData, second: az.InferenceData) -> az.InferenceData:
    """The chains of two runs of the same model and settings as one set of chains (renumbered)."""
    import xarray as xr

    groups = {}
    for group in ("posterior", "sample_stats"):
        a, b = first[group], second[group]
        b = b.assign_coords(chain=b.chain + a.sizes["chain"])
        common = [v for v in a.data_vars if v in b.data_vars]
        groups[group] = xr.concat([a[common], b[common]], dim="chain")
    return az.InferenceData(**groups)


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
