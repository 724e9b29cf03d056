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
from . import predictive, psis
from .convergence import usable_cores
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

    The JAX density compiles in about a second and needs no PyMC at all. nutpie runs
    every chain at once, more threads than cores: each thread spends part of its time in
    Python between gradients, and at paper size 4 chains on 2 cores took 36 s side by
    side against 43 s two at a time (same draws). ``low_rank``
    turns on nutpie's low-rank mass-matrix adaptation (nutpie only), which learns the
    correlation between the family × channel spread and its deviations: at paper size it
    took the slowest parameter's bulk ESS per draw from 4–5 % to 11–13 %
    (benchmarks/bench_bayes.py).
    """
    if sampler not in SAMPLERS:
        raise UsageError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    if sampler == "nutpie":
        return _nutpie(data, family_effects=family_effects, draws=draws, tune=tune, chains=chains, seed=seed,
                       target_accept=target_accept, low_rank=low_rank, progressbar=progressbar)
    import pymc as pm

    from .model import build_model

    return pm.sample(model=build_model(data, family_effects=family_effects), draws=draws, tune=tune, chains=chains,
                     random_seed=seed, progressbar=progressbar, target_accept=target_accept,
                     compute_convergence_checks=False)


def _nutpie(data: ModelData, *, family_effects: bool = True, blocking: bool = True, draws: int, tune: int,
            chains: int, seed: int, target_accept: float, low_rank: bool, progressbar: bool):
    """nutpie on the JAX density, every chain at once (a finished trace, or the background sampler)."""
    import nutpie

    from .density import nutpie_model

    return nutpie.sample(nutpie_model(data, family_effects=family_effects), draws=draws, tune=tune, chains=chains,
                         cores=chains, seed=seed, target_accept=target_accept, progress_bar=progressbar,
                         save_warmup=False, low_rank_modified_mass_matrix=low_rank, blocking=blocking)


MIN_DRAWS = 400  # draws per chain before the gate is first read, in a run that stops once it passes
STOP_MARGIN = 1.1  # such a run stops at an ESS of 1.1 × the gate's, not at the gate's own 400
# each later reading 15% to 100% more draws than the last: a reading costs seconds (a look at the
# trace, the gate), and an ESS read off a few hundred draws of chains that have barely mixed can be
# far below what it grows to (75 at 400 draws a chain, 426 at 1,000 on a small study)
CHECK_GROWTH = (1.15, 2.0)


def sample_until_passed(data: ModelData, *, max_draws: int, tune: int, chains: int, seed: int,
                        target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK,
                        progressbar: bool = False) -> tuple[az.InferenceData, dict]:
    """nutpie draws until the health gate passes (with ``STOP_MARGIN`` on the ESS), at most
    ``max_draws`` per chain; the draws kept and the gate's row on them.

    The chains run side by side in the background; the gate is read on the first
    ``MIN_DRAWS`` draws of every chain, then on as many more as the slowest ESS and the
    largest R-hat say are needed (``_next_checkpoint``; ``CHECK_GROWTH`` bounds the step),
    and sampling stops at the first reading
    that passes, or at the first divergence (those draws are no use: the fit starts
    again with smaller steps). Where the gate is read depends only on the draws, never
    on timing, so a seed gives the same fit on any machine. Reading the gate on the
    draws so far and stopping when it passes is why the margin is there: an ESS
    estimate that just crossed 400 is more often above its truth than below.
    """
    background = _nutpie(data, blocking=False, draws=max_draws, tune=tune, chains=chains, seed=seed,
                         target_accept=target_accept, low_rank=low_rank, progressbar=progressbar)
    checkpoint = min(MIN_DRAWS, max_draws)
    progress: list[tuple[float, int]] = []
    final = None  # the whole trace, once the chains have made every draw
    try:
        final = _wait(background, 2.0)  # the warm-up takes seconds: nothing to read before
        while True:
            trace = final if final is not None else _look(background)
            drawn = _common_draws(trace)
            progress.append((time.perf_counter(), drawn))
            if final is not None:
                checkpoint = min(checkpoint, drawn)
            elif drawn < checkpoint:
                final = _wait(background, _seconds_to(checkpoint, progress))
                continue
            kept = _first_draws(trace, checkpoint)
            last = checkpoint >= (drawn if final is not None else max_draws)

            def stops(row: dict) -> bool:
                return last or bool(row["divergences"]) or _enough(row)

            # the gate on the global parameters first: if they miss it, so does the whole (seconds saved);
            # the chains are paused while the whole gate is read, since a pass ends them anyway
            row = health.gate(kept, health.GLOBAL)
            if stops(row):
                if final is None:
                    background.pause()
                row = health.gate(kept)
                if stops(row):
                    return kept, row
                if final is None:
                    background.resume()
            checkpoint = _next_checkpoint(row, checkpoint, max_draws)
            if final is None:
                final = _wait(background, _seconds_to(checkpoint, progress))
    finally:
        if final is None:
            background.cancel()


def _enough(row: dict) -> bool:
    return row["passed"] and min(row["ess_bulk_min"], row["ess_tail_min"]) >= STOP_MARGIN * health.ESS_MIN


def _look(background) -> az.InferenceData:
    """The trace so far (before the first draw ArviZ warns that there are more chains than draws)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains")
        return background.inspect()


def _wait(background, seconds: float) -> az.InferenceData | None:
    """The whole trace if the chains finish within ``seconds``, else None (nutpie raises TimeoutError).

    nutpie's ``is_finished`` is not asked: in nutpie 0.16 it raises the last wait's
    TimeoutError while the chains run, and ``inspect`` fails once the trace was taken.
    """
    try:
        return background.wait(timeout=seconds)
    except TimeoutError:
        return None


def _common_draws(trace: az.InferenceData) -> int:
    """Draws every chain has made so far (chains behind the others are padded with NaN)."""
    if "posterior" not in trace or trace.posterior.sizes.get("draw", 0) == 0:
        return 0
    first = trace.posterior["condition_mean"].values.reshape(trace.posterior.sizes["chain"],
                                                             trace.posterior.sizes["draw"], -1)[:, :, 0]
    return int(np.isfinite(first).sum(axis=1).min())


def _first_draws(trace: az.InferenceData, draws: int) -> az.InferenceData:
    return az.InferenceData(posterior=trace.posterior.isel(draw=slice(0, draws)),
                            sample_stats=trace.sample_stats.isel(draw=slice(0, draws)))


def _next_checkpoint(row: dict, drawn: int, max_draws: int) -> int:
    """Draws per chain at the next reading: as many as the slowest ESS (with the margin) asks for, and
    as many as the largest R-hat does (R-hat − 1 shrinks about as 1 / draws once the chains have mixed;
    with thousands of parameters the largest is what binds: on the default data 1.020 at 400 draws a
    chain, 1.009 at 1,000)."""
    wanted = _ess_growth(row, STOP_MARGIN, otherwise=CHECK_GROWTH[1])
    if row["r_hat_max"] > health.R_HAT_MAX:
        wanted = max(wanted, (row["r_hat_max"] - 1.0) / (health.R_HAT_MAX - 1.0))
    growth = min(max(wanted * 1.05, CHECK_GROWTH[0]), CHECK_GROWTH[1])  # a little past the linear reach
    return min(max_draws, int(np.ceil(drawn * growth / 50) * 50))


def _ess_growth(row: dict, margin: float, *, otherwise: float) -> float:
    """How many times the draws ``row`` was read on are needed for ``margin`` × the gate's ESS
    (ESS grows about linearly with draws); ``otherwise`` where there was no ESS at all."""
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    return margin * health.ESS_MIN / ess if ess > 0 else otherwise


def _seconds_to(checkpoint: int, progress: list[tuple[float, int]]) -> float:
    """How long to wait before looking again (each look copies the whole trace: a second at paper size).

    While the chains are still warming up, twice as long as the last wait (2, 4, 8, 10 s …);
    then the time they need to reach ``checkpoint`` at their pace since the first look
    that found draws (the whole span, so that the looks and gate readings on the way are
    in it), at most 5 s while that span is the only one: a pace measured across the end of
    the warm-up is too slow, and would overshoot the checkpoint.
    """
    drawing = [(when, drawn) for when, drawn in progress if drawn > 0]
    if not drawing:
        return min(2.0 ** len(progress), 10.0)
    (then, before), (now, drawn) = drawing[0], drawing[-1]
    if drawn <= before:
        (then, before) = progress[-len(drawing) - 1] if len(progress) > len(drawing) else (then - 1.0, 0)
        return min(5.0, max(0.5, (checkpoint - drawn) * (now - then) / max(drawn - before, 1)))
    return max(0.5, 1.03 * (checkpoint - drawn) * (now - then) / (drawn - before))


def fit(data: ModelData, *, draws: int | None = None, tune: int = DEFAULT_TUNE, chains: int = DEFAULT_CHAINS,
        seed: int = 0, sampler: str = "nutpie", target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK,
        loo: bool = False, progressbar: bool = False, budget: float = DEFAULT_BUDGET,
        on_attempt: Callable[[dict], None] | None = None) -> az.InferenceData:
    """Sample the model until it passes its health gate or the time ``budget`` (seconds) runs out.

    ``draws`` per chain; ``None`` (the default, nutpie only) samples until the gate passes
    (``sample_until_passed``: at least ``MIN_DRAWS``, at most ``AUTO_DRAWS`` per chain in
    a first run), so a posterior that mixes fast is not sampled for longer than its gate
    needs and one that mixes slowly is sampled on without a second warm-up.

    When an attempt misses the gate, what went wrong decides the next (``next_attempt``):
    divergences discard the draws and sample again with a smaller step (a higher target
    acceptance, a longer warm-up; last, nutpie's low-rank mass matrix); too few effective
    draws or a high R-hat add chains to the draws, as many as the ESS it got says are
    needed, or, where the chains are too short to pool, sample again with longer ones.
    An attempt starts only if it is expected to end within the budget. A fit that never
    passes keeps its best attempt (no divergences first, then the most effective draws).
    ``on_attempt`` is called with each attempt's row (``health.attempts`` has the columns).

    With ``loo``, the same model without family effects is sampled too, for the LOO
    comparison; it is not part of the budget.

    The InferenceData carries in ``attrs`` the seed, the sampler settings of the first
    attempt (``draws`` 0: until the gate passed), the wall time of the model's fit
    (``seconds``, every attempt, without the LOO refit), the attempts (JSON), the cohort
    (the (family, channel) pairs) and, with ``loo``, the LOO comparison against the
    model without family effects.
    """
    started = time.perf_counter()
    until_passed = draws is None and sampler == "nutpie"
    draws = draws if draws is not None else (AUTO_DRAWS if until_passed else DEFAULT_DRAWS)
    options = {"draws": 0 if until_passed else draws, "tune": tune, "chains": chains, "seed": seed,
               "sampler": sampler, "target_accept": target_accept, "low_rank": low_rank}
    settings = {"chains": chains, "tune": tune, "draws": draws, "target_accept": target_accept, "low_rank": low_rank}
    kept, best, attempts, action, pool = None, None, [], "first run", False
    while True:
        number = len(attempts) + 1
        attempt_seed = seed if number == 1 else int(np.random.SeedSequence([seed, number]).generate_state(1)[0])
        attempt_started = time.perf_counter()
        if until_passed and not pool:  # an extension's chains must match the draws they are pooled with
            new, row = sample_until_passed(data, max_draws=settings["draws"], seed=attempt_seed,
                                           progressbar=progressbar, **{k: v for k, v in settings.items()
                                                                       if k != "draws"})
        else:
            new, row = sample(data, seed=attempt_seed, sampler=sampler, progressbar=progressbar, **settings), None
        attempt_seconds = time.perf_counter() - attempt_started
        drawn = int(new.posterior.sizes["draw"])
        diverged = int(new.sample_stats["diverging"].sum()) if "diverging" in new.sample_stats else 0
        # divergent draws are never pooled: a fresh start is judged on its own
        candidate = new if kept is None or diverged else pool_chains(kept, new)
        if row is None or candidate is not new:
            row = health.gate(candidate)
        attempts.append({"attempt": number, "action": action, "seed": attempt_seed, "chains": settings["chains"],
                         "tune": settings["tune"], "draws_per_chain": drawn,
                         "target_accept": settings["target_accept"], "low_rank": bool(settings["low_rank"]),
                         "seconds": attempt_seconds, "chains_kept": int(candidate.posterior.sizes["chain"]), **row})
        if on_attempt is not None:
            on_attempt(attempts[-1])
        kept = candidate
        if best is None or _quality(row) > _quality(attempts[best[0]]):
            best = (number - 1, candidate)
        if row["passed"]:
            break
        ran = {**settings, "draws": drawn}
        step = next_attempt(row, ran, chains_kept=int(candidate.posterior.sizes["chain"]), diverged=diverged,
                            previous=action, first_chains=chains, sampler=sampler)
        if step is None:
            break
        action, next_settings, pool = step
        if until_passed and not pool:  # a fresh start stops when it passes, as the first did
            next_settings = {**next_settings, "draws": max(next_settings["draws"], AUTO_DRAWS)}
        # time per chain-step of this attempt, scaled to the next one (chains run in parallel, a few at a time)
        per_step = attempt_seconds / (_rounds(settings["chains"]) * (settings["tune"] + drawn))
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
        # are drawn (it is small and mixes fast)
        plain = sample(data, family_effects=False, progressbar=progressbar,
                       **{**options, "draws": min(draws, -(-LOO_DRAWS // chains))})
        attrs.update(_loo_comparison(pointwise_log_likelihood(idata, data), pointwise_log_likelihood(plain, data)))
    idata = predictive.save_data(slim(idata), data)
    idata.posterior.attrs.update(attrs)
    return idata


AUTO_DRAWS = 2 * DEFAULT_DRAWS  # at most this many draws per chain in a first run that stops once it passes
ESS_MARGIN = 1.25  # extensions aim at 1.25 × the gate's ESS: the ESS of new chains varies
MAX_GROWTH = 8.0  # an extension at most multiplies the draws by this
MIN_ESS_PER_CHAIN = 50  # below this, chains are made longer rather than more numerous
# after divergences, in turn, each with a longer warm-up (smaller steps need longer to adapt the mass matrix to)
RETRY_TUNE = {0.9: 500, 0.95: 800, 0.99: 1000}
TARGET_ACCEPTS = tuple(RETRY_TUNE)


def _rounds(chains: int) -> int:
    """How many chains' worth of wall time ``chains`` chains take on this machine's cores."""
    return -(-chains // max(1, min(chains, usable_cores())))


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
    growth = _ess_growth(row, ESS_MARGIN, otherwise=MAX_GROWTH)
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
    parallel = max(1, min(settings["chains"], usable_cores()))
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


def _pointwise_loo(log_likelihood: az.InferenceData) -> tuple[np.ndarray, np.ndarray]:
    """PSIS-LOO of every observation (elpd_loo_i, Pareto k), as ``az.loo(pointwise=True)`` gives them
    (``psis``: the same steps on many observations at once; 28 s → about 2 s for the two models
    of the default data)."""
    values = log_likelihood.log_likelihood["y"]
    draws = values.values.reshape(-1, values.shape[-1]).T  # observations × (chain, draw)
    return psis.loo_pointwise(draws, psis.relative_efficiency(log_likelihood.posterior))


def _loo_comparison(with_family: az.InferenceData, without_family: az.InferenceData) -> dict[str, float]:
    """elpd_loo of both models over the same binomial cells, and their difference with its SE."""
    with warnings.catch_warnings():
        # a high Pareto k is reported in the diagnostics (loo_pareto_k_max), not as a stray warning
        warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
        first, first_k = _pointwise_loo(with_family)
        second, second_k = _pointwise_loo(without_family)
    difference = first - second
    return {"loo_elpd": float(first.sum()), "loo_elpd_no_family": float(second.sum()),
            "loo_difference": float(difference.sum()),
            "loo_difference_se": float(difference.std(ddof=1) * len(difference) ** 0.5),
            "loo_pareto_k_max": float(max(first_k.max(), second_k.max()))}
