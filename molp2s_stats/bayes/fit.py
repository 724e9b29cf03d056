"""Sampling the model and saving the fit (InferenceData as NetCDF, for ArviZ users)."""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import arviz as az
import numpy as np

from . import DEFAULT_BUDGET, DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_TUNE, LOW_RANK, SAMPLERS, TARGET_ACCEPT, health
from . import predictive, psis
from .convergence import usable_cores
from .data import ModelData
from .density import Compiled
from .model import LOO_DRAWS, log_likelihood_blocks, thinned
from .progress import Progress
from ..errors import UsageError


def sample(data: ModelData, *, draws: int, tune: int, chains: int, seed: int, sampler: str = "nutpie",
           target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK, family_effects: bool = True,
           progress: Progress | None = None, compiled: Compiled | None = None, warm: WarmStart | None = None,
           attempt: int = 1) -> az.InferenceData:
    """NUTS draws of the model of ``data``: nutpie on the float32 JAX log density of
    ``density`` (default), or PyMC's own NUTS on the PyMC model of ``model.build_model``.

    The JAX density compiles in about a second and needs no PyMC at all. nutpie runs
    every chain at once, more threads than cores: each thread spends part of its time in
    Python between gradients, and at paper size 4 chains on 2 cores took 36 s side by
    side against 43 s two at a time (same draws). ``low_rank``
    turns on nutpie's low-rank mass-matrix adaptation (nutpie only), which learns the
    correlation between the family × channel spread and its deviations: at paper size it
    took the slowest parameter's bulk ESS per draw from 4–5 % to 11–13 %
    (benchmarks/bench_bayes.py). ``compiled`` reuses a density already compiled (nutpie
    only); ``warm`` starts the chains from a saved fit (``warm_start``).
    """
    if sampler not in SAMPLERS:
        raise UsageError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    if sampler == "nutpie":
        background = _nutpie(data, family_effects=family_effects, draws=draws, tune=tune, chains=chains,
                             seed=seed, target_accept=target_accept, low_rank=low_rank, compiled=compiled,
                             warm=warm, blocking=progress is None)
        if progress is None:
            return background
        return _follow(background, progress, attempt=attempt, draws=draws)
    import pymc as pm

    from .model import build_model

    return pm.sample(model=build_model(data, family_effects=family_effects), draws=draws, tune=tune, chains=chains,
                     random_seed=seed, progressbar=progress is not None and bool(progress.terminal),
                     target_accept=target_accept, compute_convergence_checks=False)


def _nutpie(data: ModelData, *, family_effects: bool = True, blocking: bool = True, draws: int, tune: int,
            chains: int, seed: int, target_accept: float, low_rank: bool, compiled: Compiled | None = None,
            warm: WarmStart | None = None):
    """nutpie on the JAX density, every chain at once (a finished trace, or the background sampler)."""
    import nutpie

    from .density import compile_density, nutpie_model

    compiled = compiled or compile_density(data, family_effects=family_effects)
    extra = {} if warm is None else {"initial_step": warm.step_size}
    return nutpie.sample(nutpie_model(compiled, initial_points=None if warm is None else warm.initial_points),
                         draws=draws, tune=tune, chains=chains, cores=chains, seed=seed, target_accept=target_accept,
                         progress_bar=False, save_warmup=False, low_rank_modified_mass_matrix=low_rank,
                         blocking=blocking, **extra)


def _follow(background, progress: Progress, *, attempt: int, draws: int) -> az.InferenceData:
    """Wait for a run of fixed length, reporting its draws and divergences as they come."""
    started = time.perf_counter()
    first = None  # (when, draws) at the first look that found draws: the pace is measured from there
    try:
        while True:
            final = _wait(background, 1.0 if progress.terminal else progress.every)
            if final is not None:
                return final
            trace = _look(background)
            drawn, now = _common_draws(trace), time.perf_counter()
            if drawn and first is None:
                first = (now, drawn)
            pace = None if first is None or drawn <= first[1] else (drawn - first[1]) / (now - first[0])
            progress.update(attempt=attempt, drawn=drawn, max_draws=draws, divergences=_divergences(trace),
                            elapsed=now - started, left=None if pace is None else (draws - drawn) / pace,
                            warming_up=drawn == 0)
    except BaseException:
        background.cancel()
        raise


def _first_divergence(trace: az.InferenceData, drawn: int) -> int | None:
    """The first draw (among the ``drawn`` every chain has made) at which any chain diverged, or None."""
    if not drawn or "sample_stats" not in trace or "diverging" not in trace.sample_stats:
        return None
    diverged = np.asarray(trace.sample_stats["diverging"].values[:, :drawn], dtype=bool).any(axis=0)
    return int(np.argmax(diverged)) if diverged.any() else None


def _divergences(trace: az.InferenceData) -> int:
    if "sample_stats" not in trace or "diverging" not in trace.sample_stats:
        return 0
    return int(np.nansum(trace.sample_stats["diverging"].values))


MIN_DRAWS = 400  # draws per chain before the gate is first read, in a run that stops once it passes
STOP_MARGIN = 1.1  # such a run stops at an ESS of 1.1 × the gate's, not at the gate's own 400
# each later reading 15% to 100% more draws than the last: a reading costs seconds (a look at the
# trace, the gate), and an ESS read off a few hundred draws of chains that have barely mixed can be
# far below what it grows to (75 at 400 draws a chain, 426 at 1,000 on a small study)
CHECK_GROWTH = (1.15, 2.0)


def sample_until_passed(data: ModelData, *, max_draws: int, tune: int, chains: int, seed: int,
                        target_accept: float = TARGET_ACCEPT, low_rank: bool = LOW_RANK,
                        progress: Progress | None = None, compiled: Compiled | None = None,
                        warm: WarmStart | None = None, attempt: int = 1,
                        expected: float | None = None) -> tuple[az.InferenceData, dict]:
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

    With ``progress``, the draws and divergences so far are reported as the chains go
    (``expected``: the seconds the attempt is expected to take, for the time left during
    the warm-up, when there are no draws to pace it by).
    """
    started = time.perf_counter()
    background = _nutpie(data, blocking=False, draws=max_draws, tune=tune, chains=chains, seed=seed,
                         target_accept=target_accept, low_rank=low_rank, compiled=compiled, warm=warm)
    checkpoint = min(MIN_DRAWS, max_draws)
    progress_so_far: list[tuple[float, int]] = []
    divergences = 0

    def report(drawn: int, left: float | None, force: bool = False) -> None:
        if progress is None:
            return
        elapsed = time.perf_counter() - started
        if drawn == 0 and expected is not None:
            left = expected - elapsed
        progress.update(attempt=attempt, drawn=drawn, max_draws=max_draws, divergences=divergences,
                        elapsed=elapsed, left=left, warming_up=drawn == 0, force=force, reading=checkpoint)

    def wait(seconds: float, drawn: int):
        """_wait, in slices short enough for a progress line, with the draws made meanwhile extrapolated."""
        if progress is None:
            return _wait(background, seconds)
        until = time.perf_counter() + seconds
        while True:
            step = min(until - time.perf_counter(), 1.0 if progress.terminal else progress.every)
            done = _wait(background, max(step, 0.05))
            now = time.perf_counter()
            if done is not None or now >= until:
                return done
            report(_extrapolated(progress_so_far, now) or drawn, until - now + 0.0)

    final = None  # the whole trace, once the chains have made every draw
    try:
        report(0, None, force=True)
        final = wait(2.0, 0)  # the warm-up takes seconds: nothing to read before
        while True:
            trace = final if final is not None else _look(background)
            drawn = _common_draws(trace)
            first_divergence = _first_divergence(trace, drawn)
            divergences = 0 if first_divergence is None else 1
            progress_so_far.append((time.perf_counter(), drawn))
            if first_divergence is not None and final is None:
                # divergent draws are never kept (the next attempt starts afresh with smaller steps):
                # sampling on to the checkpoint would only spend time. The draws up to the first
                # divergence are what the attempt made, whenever the look came: the same on any machine
                background.pause()
                kept = _first_draws(trace, first_divergence + 1)
                return kept, health.gate(kept)
            if final is not None:
                checkpoint = min(checkpoint, drawn)
            elif drawn < checkpoint:
                seconds = _seconds_to(checkpoint, progress_so_far)
                report(drawn, seconds if drawn else None)
                final = wait(seconds, drawn)
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
                seconds = _seconds_to(checkpoint, progress_so_far)
                report(drawn, seconds)
                final = wait(seconds, drawn)
    finally:
        if final is None:
            background.cancel()


def _extrapolated(progress: list[tuple[float, int]], now: float) -> int | None:
    """Draws a chain has probably made by ``now``, at the pace of the looks so far (None before two looks with draws)."""
    drawing = [(when, drawn) for when, drawn in progress if drawn > 0]
    if len(drawing) < 2 or drawing[-1][1] <= drawing[0][1]:
        return None
    (then, before), (last, drawn) = drawing[0], drawing[-1]
    return int(drawn + (now - last) * (drawn - before) / (last - then))


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
        loo: bool = False, progress: Progress | None = None, budget: float | None = None,
        on_attempt: Callable[[dict], None] | None = None, on_estimate: Callable[[CostEstimate], None] | None = None,
        warm_start: az.InferenceData | None = None, device: str | None = None) -> az.InferenceData:
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
    comparison; it is not part of the budget.

    The InferenceData carries in ``attrs`` the seed, the sampler settings of the first
    attempt (``draws`` 0: until the gate passed), the wall time of the model's fit
    (``seconds``, every attempt, without the LOO refit), the budget and the estimate, the
    attempts (JSON), the cohort (the (family, channel) pairs) and, with ``loo``, the LOO
    comparison against the model without family effects.
    """
    started = time.perf_counter()
    until_passed = draws is None and sampler == "nutpie"
    draws = draws if draws is not None else (AUTO_DRAWS if until_passed else DEFAULT_DRAWS)
    compiled, estimate = None, None
    warm = None
    if sampler == "nutpie":
        from .density import compile_density

        compiled = compile_density(data, device=device)
        warm = WarmStart.from_fit(warm_start, compiled) if warm_start is not None else None
        first_tune = WARM_TUNE if warm is not None else tune
        estimate = estimate_cost(compiled, chains=chains, tune=first_tune,
                                 draws=EXPECTED_DRAWS if until_passed else draws,
                                 cells=data.cells.height + data.p0.height)
        if on_estimate is not None:
            on_estimate(estimate)
    elif warm_start is not None or device is not None:
        raise UsageError("a warm start or a device needs the nutpie sampler")
    if budget is None:
        budget = default_budget(estimate)
    options = {"draws": 0 if until_passed else draws, "tune": tune, "chains": chains, "seed": seed,
               "sampler": sampler, "target_accept": target_accept, "low_rank": low_rank}
    settings = {"chains": chains, "tune": WARM_TUNE if warm is not None else tune, "draws": draws,
                "target_accept": target_accept, "low_rank": low_rank}
    kept, best, attempts, action, pool = None, None, [], "warm start" if warm is not None else "first run", False
    skipped = None  # the attempt the budget did not leave time for
    expected = estimate.seconds if estimate is not None else None
    while True:
        number = len(attempts) + 1
        attempt_seed = seed if number == 1 else int(np.random.SeedSequence([seed, number]).generate_state(1)[0])
        attempt_started = time.perf_counter()
        shared = {"progress": progress, "compiled": compiled, "attempt": number,
                  "warm": warm if number == 1 else None}
        if until_passed and not pool:  # an extension's chains must match the draws they are pooled with
            new, row = sample_until_passed(data, max_draws=settings["draws"], seed=attempt_seed, expected=expected,
                                           **shared, **{k: v for k, v in settings.items() if k != "draws"})
        else:
            new, row = sample(data, seed=attempt_seed, sampler=sampler, **shared, **settings), None
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
        if progress is not None:
            progress.close()
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
        if warm is not None and not pool:  # a warm start that missed is followed by cold fits
            next_settings = {**next_settings, "tune": max(next_settings["tune"], tune)}
        if until_passed and not pool:  # a fresh start stops when it passes, as the first did
            next_settings = {**next_settings, "draws": max(next_settings["draws"], AUTO_DRAWS)}
        expected = expected_seconds(attempt_seconds, ran, next_settings, row=row,
                                    until_passed=until_passed and not pool)
        if diverged and estimate is not None:
            # steps that diverge were too large for the posterior's narrow parts, and such a run also takes
            # long trajectories (28 × 5: 154 leapfrog steps a draw at 0.8, 31 at 0.9): its pace says little
            # about the restart's, which the estimate made before sampling prices better
            restart_draws = min(next_settings["draws"], EXPECTED_DRAWS) if until_passed else next_settings["draws"]
            expected = min(expected, SMALLER_STEP_COST * estimate.seconds_for(
                next_settings["tune"] + restart_draws, chains=next_settings["chains"]))
        if time.perf_counter() - started + expected > budget:
            skipped = {"action": action, "seconds": round(expected, 1),
                       "budget": round(time.perf_counter() - started + expected, 1)}
            break
        settings = next_settings
        if not pool:
            kept = None
    seconds = time.perf_counter() - started
    final, idata = best
    # NetCDF attributes hold no booleans: low_rank is saved as 0 or 1
    attrs = {**options, "low_rank": int(low_rank), "seconds": seconds, "budget": budget,
             "n_candidates": data.n_candidates, "cohort": json.dumps(data.family_channels),
             "attempts": json.dumps(attempts), "final_attempt": final + 1,
             "warm_start": int(warm is not None), "device": device or "default"}
    if estimate is not None:
        attrs |= {"estimated_seconds": estimate.seconds, "step_ms": estimate.step_ms}
    if skipped is not None:
        attrs["next_attempt"] = json.dumps(skipped)
    if loo:
        # the model without family effects is sampled only for LOO, which reads LOO_DRAWS draws: no more
        # are drawn (it is small and mixes fast)
        loo_draws = min(draws, -(-LOO_DRAWS // chains))
        if progress is not None:  # its lines name it, not "attempt 1" again after the fit's own attempts
            progress.say(f"sampling the model without family effects for LOO ({chains} chains × {loo_draws} draws)")
            progress.stage = "LOO's model without family effects"
        try:
            plain = sample(data, family_effects=False, progress=progress, **{**options, "draws": loo_draws})
        finally:
            if progress is not None:
                progress.stage = None
        attrs.update(_loo_comparison(idata, plain, data))
    idata = predictive.save_data(slim(idata), data)
    idata.posterior.attrs.update(attrs)
    return idata


def warm_start_note(idata: az.InferenceData, saved: az.InferenceData) -> str:
    """What the warm start saved: this fit's time against a cold fit's, estimated from the saved fit's
    time scaled by the cost of a gradient here and there."""
    attrs, before = idata.posterior.attrs, saved.posterior.attrs
    took = float(attrs["seconds"])
    if "step_ms" not in before or "seconds" not in before:
        return f"warm start: the fit took {took:.0f} s (the saved fit records no timing to compare with)"
    cold = float(before["seconds"]) * float(attrs["step_ms"]) / float(before["step_ms"])
    return (f"warm start: the fit took {took:.0f} s; a cold fit of this leaderboard would take about {cold:.0f} s "
            f"(the saved fit's {float(before['seconds']):.0f} s, scaled by the cost of a gradient), "
            f"so about {cold - took:.0f} s saved")


def next_attempt_note(idata: az.InferenceData) -> str | None:
    """What the fit would have tried next had its budget allowed, and what to run for it; None if nothing was cut."""
    recorded = idata.posterior.attrs.get("next_attempt")
    if not recorded:
        return None
    skipped = json.loads(recorded)
    return (f"The next attempt ({skipped['action']}) would have taken about {skipped['seconds']:.0f} s, "
            f"past the budget of {float(idata.posterior.attrs['budget']):.0f} s: run again with "
            f"--budget {int(np.ceil(skipped['budget'] * 1.2 / 60) * 60)} to let it.")


# The cost estimate made before sampling (estimate_cost): a fixed START_SECONDS (starting the
# sampler's threads, turning the trace into InferenceData) plus warm-up and draws per chain times
# STEP_COST_PER_DRAW leapfrog steps' worth of wall time a draw, a step timed just before sampling
# with as many chains running at once as the sampler runs (Compiled.step_seconds). Fitted on
# 2026-12-04 to 4 chains × (300 + 400) at 2 × 2 × 30, 3 × 2 × 40, 7 × 12 × 136, 7 × 5 × 389 and
# 14 × 5 × 389 (models × channels × families): 23, 25, 30, 66 and 68 steps' worth a draw beyond
# 3 s (the chains took 15 to 62 leapfrog steps a draw; the rest is each draw's trip through
# Python), so 40 is within 1.8× of each. How many steps a draw takes depends on the posterior's
# shape, which no count of cells tells: hence the factor, and the progress line's own pace.
START_SECONDS = 3.0
STEP_COST_PER_DRAW = 40
EXPECTED_DRAWS = 1000
BUDGET_PER_ESTIMATE = 5.0  # the default budget: this many first attempts' worth, at least DEFAULT_BUDGET
SMALLER_STEP_COST = 1.3  # a restart with a higher target acceptance takes about this much longer a draw


@dataclass(frozen=True)
class CostEstimate:
    """What a fit is about to cost, said before it samples."""

    cells: int  # binomial cells with answers (cohort cells and P0)
    parameters: int  # the sampler's dimensions
    step_ms: float  # one leapfrog step of one chain, all chains running, timed here just now
    chains: int
    steps: int  # warm-up + expected draws per chain
    seconds: float  # the first attempt, expected

    def seconds_for(self, steps: int, *, chains: int) -> float:
        """The estimate for ``steps`` warm-up and draws a chain, ``chains`` chains (in rounds of this many)."""
        per_draw = (self.seconds - START_SECONDS) / self.steps
        return START_SECONDS + steps * per_draw * -(-chains // self.chains)

    def line(self, budget: float) -> str:
        return (f"{self.cells:,} binomial cells, {self.parameters:,} parameters; a leapfrog step takes "
                f"{self.step_ms:.2f} ms here with {self.chains} chains at once, so {self.chains} chains × "
                f"{self.steps:,} draws should take about {_duration(self.seconds)} (budget {_duration(budget)})")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def estimate_cost(compiled: Compiled, *, chains: int, tune: int, draws: int, cells: int) -> CostEstimate:
    """The first attempt's expected wall time, from leapfrog steps timed on this machine now."""
    parallel = max(1, min(chains, usable_cores()))
    step = compiled.step_seconds(chains)
    # nutpie runs every chain at once, a thread each: the step time was taken that way; expanding a
    # draw is Python, one thread at a time per core
    per_draw = STEP_COST_PER_DRAW * step + compiled.expand_seconds() * chains / parallel
    seconds = START_SECONDS + (tune + draws) * per_draw
    return CostEstimate(cells=cells, parameters=compiled.model.ndim, step_ms=step * 1000, chains=chains,
                        steps=tune + draws, seconds=seconds)


def default_budget(estimate: CostEstimate | None) -> float:
    """The budget of a fit given none: DEFAULT_BUDGET, or BUDGET_PER_ESTIMATE first attempts if that is longer
    (room for a restart with smaller steps and an extension on a large leaderboard)."""
    return DEFAULT_BUDGET if estimate is None else max(DEFAULT_BUDGET, BUDGET_PER_ESTIMATE * estimate.seconds)


def expected_seconds(seconds: float, ran: dict, following: dict, *, row: dict, until_passed: bool) -> float:
    """How long the ``following`` attempt should take, scaled from one that ``ran`` in ``seconds``.

    Per chain-step of the last attempt (chains run a few at a time), times the next one's
    steps. A fresh start that samples until its gate passes is costed at the draws the
    last attempt's ESS says it will need (not its ceiling, which it rarely reaches), and a
    higher target acceptance at SMALLER_STEP_COST a step.
    """
    per_step = seconds / (_rounds(ran["chains"]) * (ran["tune"] + ran["draws"]))
    draws = following["draws"]
    if until_passed:
        needed = ran["draws"] * _ess_growth(row, STOP_MARGIN, otherwise=CHECK_GROWTH[1])
        draws = min(draws, max(MIN_DRAWS, round(needed)))
    cost = per_step * _rounds(following["chains"]) * (following["tune"] + draws)
    return cost * (SMALLER_STEP_COST if following["target_accept"] > ran["target_accept"] else 1.0)


# A warm start (WarmStart): its chains start in the saved fit's posterior with its step size,
# so the warm-up only adapts the mass matrix to the new model's parameters.
WARM_TUNE = 150
WARM_POINTS = 32  # saved draws the chains' starting points are chosen from


@dataclass(frozen=True)
class WarmStart:
    """Starting points and step size for the chains of a leaderboard one model larger than a saved fit.

    nutpie takes starting points and an initial step size but no mass matrix (nutpie 0.16
    has no setting for one), so the mass matrix is adapted anew, from a start already in the
    typical set: a shorter warm-up (WARM_TUNE) suffices. Parameters are matched by label:
    the models, families and (family, channel) pairs the saved fit has start at its draws,
    new ones at the usual jitter around the prior centres.
    """

    points: np.ndarray  # (WARM_POINTS, parameters)
    step_size: float
    carried: dict[str, int]  # how many models and families came from the saved fit

    def initial_points(self, seed: int) -> np.ndarray:
        return self.points[int(np.random.default_rng(seed).integers(len(self.points)))].copy()

    @classmethod
    def from_fit(cls, saved: az.InferenceData, compiled: Compiled) -> "WarmStart":
        from .density import effects_of, initial_point, pack

        model = compiled.model
        post = saved.posterior
        if "family_z" not in post or "cell" not in post:
            raise UsageError("the warm start needs a fit saved by `molp2s fit` (with its family effects)")
        if list(post.coords["channel"].values) != model.coords["channel"]:
            raise UsageError("the warm start's fit has other channels ("
                             f"{', '.join(map(str, post.coords['channel'].values))}); it needs the same ones")
        chains, draws = post.sizes["chain"], post.sizes["draw"]
        picks = np.linspace(0, chains * draws - 1, WARM_POINTS).astype(int)

        def flat(name):
            values = post[name].values
            return values.reshape(chains * draws, *values.shape[2:])[picks].astype(float)

        old_models = {m: i for i, m in enumerate(post.coords["model"].values)}
        old_families = {f: i for i, f in enumerate(post.coords["family"].values)}
        old_pairs = {p: i for i, p in enumerate(post.coords["family_channel"].values)}
        models = [(i, old_models[m]) for i, m in enumerate(model.coords["model"]) if m in old_models]
        families = [(i, old_families[f]) for i, f in enumerate(model.coords["family"]) if f in old_families]
        pairs = [(i, old_pairs[p]) for i, p in enumerate(model.coords["family_channel"]) if p in old_pairs]
        saved_values = {name: flat(name) for name in ("condition_mean", "channel_sd", "cell", "p0_mean",
                                                      "family_sd", "family_z", "family_channel_sd",
                                                      "family_channel_z")}
        points = []
        for row in range(WARM_POINTS):
            effects = effects_of(model.reported(initial_point(model, row))) | {
                "family_sd": saved_values["family_sd"][row],
                "family_channel_sd": saved_values["family_channel_sd"][row],
                "family_effect": np.zeros(len(model.coords["family"])),
                "family_channel_effect": np.zeros(len(model.coords["family_channel"]))}
            old = {name: values[row] for name, values in saved_values.items()}
            for new_at, old_at in models:
                effects["condition_mean"][new_at] = old["condition_mean"][old_at]
                effects["p0_mean"][new_at] = old["p0_mean"][old_at]
                effects["channel_sd"][new_at] = old["channel_sd"][old_at]
                effects["channel_effect"][new_at] = old["cell"][old_at] - old["condition_mean"][old_at][:, None]
            for new_at, old_at in families:
                effects["family_effect"][new_at] = old["family_sd"] * old["family_z"][old_at]
            for new_at, old_at in pairs:
                effects["family_channel_effect"][new_at] = old["family_channel_sd"] * old["family_channel_z"][old_at]
            points.append(pack(model, effects))
        step = float(np.median(saved.sample_stats["step_size"].values)) if "step_size" in saved.sample_stats else None
        return cls(np.array(points), step if step and np.isfinite(step) else 0.1,
                   {"models": len(models), "families": len(families)})


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
    """How good an attempt's draws are: passed first (an attempt that passes is kept even where an earlier
    one that missed had more effective draws), then no divergences, the smallest ESS, and R-hat."""
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    r_hat = row["r_hat_max"]
    return (bool(row["passed"]), row["divergences"] == 0, ess if ess == ess else -1.0,
            -r_hat if r_hat == r_hat else -9.0)


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


def _blocked_loo(idata: az.InferenceData, data: ModelData) -> tuple[np.ndarray, np.ndarray]:
    """``_pointwise_loo`` of the fit's cells, read a block of cells at a time (memory bounded by the block)."""
    reff = psis.relative_efficiency(thinned(idata).posterior[["cell"]])
    parts = [psis.loo_pointwise(block, reff) for block in log_likelihood_blocks(idata, data)]
    return np.concatenate([elpd for elpd, _ in parts]), np.concatenate([k for _, k in parts])


def _loo_comparison(with_family: az.InferenceData, without_family: az.InferenceData,
                    data: ModelData) -> dict[str, float]:
    """elpd_loo of both models over the same binomial cells, and their difference with its SE."""
    with warnings.catch_warnings():
        # a high Pareto k is reported in the diagnostics (loo_pareto_k_max), not as a stray warning
        warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
        first, first_k = _blocked_loo(with_family, data)
        second, second_k = _blocked_loo(without_family, data)
    difference = first - second
    return {"loo_elpd": float(first.sum()), "loo_elpd_no_family": float(second.sum()),
            "loo_difference": float(difference.sum()),
            "loo_difference_se": float(difference.std(ddof=1) * len(difference) ** 0.5),
            "loo_pareto_k_max": float(max(first_k.max(), second_k.max()))}
