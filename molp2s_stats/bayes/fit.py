"""Fitting the model: sample until the health gate passes or the time budget runs out, keep the
best attempt, and save the fit (InferenceData as NetCDF, for ArviZ users).

``fit`` orchestrates; the draws themselves and the stopping rule are in ``sampler``, the cost and
retry policy in ``attempts``, the LOO comparison in ``loo``. The names callers use from here
(``sample``, ``default_budget``, ``WARM_TUNE``, the notes, ...) are re-exported."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import arviz as az
import numpy as np

from ..errors import UsageError
from . import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TUNE, LOW_RANK, TARGET_ACCEPT, health, predictive
from .attempts import (
    EXPECTED_DRAWS,
    SMALLER_STEP_COST,
    CostEstimate,
    attempt_quality,
    default_budget,
    estimate_cost,
    expected_seconds,
    next_attempt,
    next_attempt_note,
    warm_start_note,
)
from .data import ModelData, pooled_over_families
from .density import Compiled
from .loo import loo_comparison
from .model import LOO_DRAWS
from .progress import Progress
from .sampler import AUTO_DRAWS, WARM_TUNE, WarmStart, pool_chains, sample, sample_until_passed, slim

# fit, and what callers (the CLI, the report, benchmarks/) import from here
__all__ = [
    "fit",
    "CostEstimate",
    "WARM_TUNE",
    "WarmStart",
    "default_budget",
    "next_attempt_note",
    "sample",
    "sample_until_passed",
    "warm_start_note",
]


def fit(
    data: ModelData,
    *,
    draws: int | None = None,
    tune: int = DEFAULT_TUNE,
    chains: int = DEFAULT_CHAINS,
    seed: int = 0,
    sampler: str = "nutpie",
    target_accept: float = TARGET_ACCEPT,
    low_rank: bool = LOW_RANK,
    loo: bool = False,
    progress: Progress | None = None,
    budget: float | None = None,
    on_attempt: Callable[[dict], None] | None = None,
    on_estimate: Callable[[CostEstimate], None] | None = None,
    warm_start: az.InferenceData | None = None,
    device: str | None = None,
    on_sampled: Callable[[], None] | None = None,
) -> az.InferenceData:
    """Sample the model until it passes its health gate or the time ``budget`` (seconds) runs out.

    ``draws`` per chain; ``None`` (the default, nutpie only) samples until the gate passes
    (``sample_until_passed``: at least ``MIN_DRAWS``, at most ``AUTO_DRAWS`` per chain in
    a first run), so a posterior that mixes fast is not sampled for longer than its gate
    needs and one that mixes slowly is sampled on without a second warm-up.

    Before sampling (nutpie), the cost is estimated from a timed gradient on this machine
    (``estimate_cost``) and passed to ``on_estimate``; ``budget`` None scales the budget
    with it (``default_budget``).

    When an attempt misses the gate, what went wrong decides the next (``next_attempt``):
    divergences discard the draws and sample again with a smaller step (a higher target
    acceptance, a longer warm-up; last, nutpie's low-rank mass matrix); too few effective
    draws or a high R-hat add chains to the draws, as many as the ESS it got says are
    needed, or, where the chains are too short to pool, sample again with longer ones.
    An attempt starts only if it is expected to end within the budget (``expected_seconds``);
    one that is not is recorded as ``next_attempt`` in ``attrs`` (its action and the seconds
    it would have taken). A fit keeps the attempt that passed, or, where none did, its best
    (no divergences first, then the most effective draws). ``on_attempt`` is called with each
    attempt's row (``health.attempts`` has the columns).

    ``device`` (``cpu`` or ``gpu``; None: JAX's default) is where the gradient is evaluated.

    ``warm_start``, a saved fit of the same benchmark (typically before a model was added),
    starts the first attempt's chains from its draws with its step size and a shorter
    warm-up (``warm_start``); the gate is the same as a cold fit's, and a warm first attempt
    that misses it is followed by cold ones.

    With ``loo``, the same model without family effects is sampled too, for the LOO
    comparison; it is not part of the budget. ``on_sampled`` is called once the attempts are
    over, before that refit (``report.site`` starts rendering the pages that read no fit then).

    The InferenceData carries in ``attrs`` the seed, the sampler settings of the first
    attempt (``draws`` 0: until the gate passed), the wall time of the model's fit
    (``seconds``, every attempt, without the LOO refit), the budget and the estimate, the
    attempts (JSON), the cohort (the (family, channel) pairs) and, with ``loo``, the LOO
    comparison against the model without family effects.
    """
    started = time.perf_counter()
    until_passed = draws is None and sampler == "nutpie"
    draws = draws if draws is not None else (AUTO_DRAWS if until_passed else DEFAULT_DRAWS)
    compiled, warm, estimate = _prepare(
        data,
        sampler=sampler,
        chains=chains,
        tune=tune,
        draws=draws,
        until_passed=until_passed,
        warm_start=warm_start,
        device=device,
        on_estimate=on_estimate,
    )
    if budget is None:
        budget = default_budget(estimate)
    options = {
        "draws": 0 if until_passed else draws,
        "tune": tune,
        "chains": chains,
        "seed": seed,
        "sampler": sampler,
        "target_accept": target_accept,
        "low_rank": low_rank,
    }
    settings = {
        "chains": chains,
        "tune": WARM_TUNE if warm is not None else tune,
        "draws": draws,
        "target_accept": target_accept,
        "low_rank": low_rank,
    }
    kept, best, attempts, action, pool = None, None, [], "warm start" if warm is not None else "first run", False
    skipped = None  # the attempt the budget did not leave time for
    expected = estimate.seconds if estimate is not None else None
    while True:
        number = len(attempts) + 1
        attempt_seed = seed if number == 1 else int(np.random.SeedSequence([seed, number]).generate_state(1)[0])
        attempt_started = time.perf_counter()
        shared = {"progress": progress, "compiled": compiled, "attempt": number, "warm": warm if number == 1 else None}
        if until_passed and not pool:  # an extension's chains must match the draws they are pooled with
            new, row = sample_until_passed(
                data,
                max_draws=settings["draws"],
                seed=attempt_seed,
                expected=expected,
                **shared,
                **{k: v for k, v in settings.items() if k != "draws"},
            )
        else:
            new, row = sample(data, seed=attempt_seed, sampler=sampler, **shared, **settings), None
        attempt_seconds = time.perf_counter() - attempt_started
        drawn = int(new.posterior.sizes["draw"])
        diverged = int(new.sample_stats["diverging"].sum()) if "diverging" in new.sample_stats else 0
        # divergent draws are never pooled: a fresh start is judged on its own
        candidate = new if kept is None or diverged else pool_chains(kept, new)
        if row is None or candidate is not new:
            row = health.gate(candidate)
        attempts.append(
            {
                "attempt": number,
                "action": action,
                "seed": attempt_seed,
                "chains": settings["chains"],
                "tune": settings["tune"],
                "draws_per_chain": drawn,
                "target_accept": settings["target_accept"],
                "low_rank": bool(settings["low_rank"]),
                "seconds": attempt_seconds,
                "chains_kept": int(candidate.posterior.sizes["chain"]),
                **row,
            }
        )
        if progress is not None:
            progress.close()
        if on_attempt is not None:
            on_attempt(attempts[-1])
        kept = candidate
        if best is None or attempt_quality(row) > attempt_quality(attempts[best[0]]):
            best = (number - 1, candidate)
        if row["passed"]:
            break
        ran = {**settings, "draws": drawn}
        step = next_attempt(
            row,
            ran,
            chains_kept=int(candidate.posterior.sizes["chain"]),
            diverged=diverged,
            previous=action,
            first_chains=chains,
            sampler=sampler,
        )
        if step is None:
            break
        action, next_settings, pool = step
        if warm is not None and not pool:  # a warm start that missed is followed by cold fits
            next_settings = {**next_settings, "tune": max(next_settings["tune"], tune)}
        if until_passed and not pool:  # a fresh start stops when it passes, as the first did
            next_settings = {**next_settings, "draws": max(next_settings["draws"], AUTO_DRAWS)}
        expected = expected_seconds(
            attempt_seconds, ran, next_settings, row=row, until_passed=until_passed and not pool
        )
        if diverged and estimate is not None:
            # steps that diverge were too large for the posterior's narrow parts, and such a run also takes
            # long trajectories (28 × 5: 154 leapfrog steps a draw at 0.8, 31 at 0.9): its pace says little
            # about the restart's, which the estimate made before sampling prices better
            restart_draws = min(next_settings["draws"], EXPECTED_DRAWS) if until_passed else next_settings["draws"]
            expected = min(
                expected,
                SMALLER_STEP_COST
                * estimate.seconds_for(next_settings["tune"] + restart_draws, chains=next_settings["chains"]),
            )
        if time.perf_counter() - started + expected > budget:
            skipped = {
                "action": action,
                "seconds": round(expected, 1),
                "budget": round(time.perf_counter() - started + expected, 1),
            }
            break
        settings = next_settings
        if not pool:
            kept = None
    seconds = time.perf_counter() - started
    final, idata = best
    # NetCDF attributes hold no booleans: low_rank is saved as 0 or 1
    attrs = {
        **options,
        "low_rank": int(low_rank),
        "seconds": seconds,
        "budget": budget,
        "n_candidates": data.n_candidates,
        "cohort": json.dumps(data.family_channels),
        "attempts": json.dumps(attempts),
        "final_attempt": final + 1,
        "warm_start": int(warm is not None),
        "device": device or "default",
    }
    if estimate is not None:
        attrs |= {"estimated_seconds": estimate.seconds, "step_ms": estimate.step_ms}
    if compiled is not None:
        attrs["gradient"] = compiled.gradient
    if skipped is not None:
        attrs["next_attempt"] = json.dumps(skipped)
    if on_sampled is not None:
        on_sampled()
    if loo:
        attrs.update(
            _loo_without_family_effects(idata, data, options=options, draws=draws, chains=chains, progress=progress)
        )
    idata = predictive.save_data(slim(idata), data)
    idata.posterior.attrs.update(attrs)
    return idata


def _prepare(
    data: ModelData,
    *,
    sampler: str,
    chains: int,
    tune: int,
    draws: int,
    until_passed: bool,
    warm_start: az.InferenceData | None,
    device: str | None,
    on_estimate: Callable[[CostEstimate], None] | None,
) -> tuple[Compiled | None, WarmStart | None, CostEstimate | None]:
    """Before sampling (nutpie): the density compiled for ``device``, the warm start read from the saved
    fit, and the first attempt's cost estimated (and passed to ``on_estimate``); (None, None, None) for
    PyMC's NUTS, which takes neither a warm start nor a device."""
    compiled, estimate = None, None
    warm = None
    if sampler == "nutpie":
        from .density import compile_density

        compiled = compile_density(data, device=device)
        warm = WarmStart.from_fit(warm_start, compiled) if warm_start is not None else None
        first_tune = WARM_TUNE if warm is not None else tune
        estimate = estimate_cost(
            compiled,
            chains=chains,
            tune=first_tune,
            draws=EXPECTED_DRAWS if until_passed else draws,
            cells=data.cells.height + data.p0.height,
        )
        if on_estimate is not None:
            on_estimate(estimate)
    elif warm_start is not None or device is not None:
        raise UsageError("a warm start or a device needs the nutpie sampler")
    return compiled, warm, estimate


def _loo_without_family_effects(
    idata: az.InferenceData, data: ModelData, *, options: dict, draws: int, chains: int, progress: Progress | None
) -> dict[str, float]:
    """The model without family effects sampled with the fit's options, and the LOO comparison of the
    fit against it (``loo.loo_comparison``); not part of the budget."""
    # the model without family effects is sampled only for LOO, which reads LOO_DRAWS draws: no more
    # are drawn (it is small and mixes fast). It is sampled on the cells summed over families, the same
    # posterior (data.pooled_over_families), a few hundred cells instead of every family's; its LOO is
    # still over every cell. Figures: benchmarks/bench_loo_plain.py
    loo_draws = min(draws, -(-LOO_DRAWS // chains))
    if progress is not None:  # its lines name it, not "attempt 1" again after the fit's own attempts
        progress.say(f"sampling the model without family effects for LOO ({chains} chains × {loo_draws} draws)")
        progress.stage = "LOO's model without family effects"
    try:
        plain = sample(
            pooled_over_families(data), family_effects=False, progress=progress, **{**options, "draws": loo_draws}
        )
    finally:
        if progress is not None:
            progress.stage = None
    return loo_comparison(idata, plain, data)
