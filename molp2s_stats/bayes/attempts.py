"""What a fit's attempts cost and what comes after one: the cost estimate made before sampling,
the default budget, the expected time of the next attempt, what to try after an attempt that
missed the health gate, how attempts are ranked, and the notes a fit's record gives the user."""

from __future__ import annotations

import json
from dataclasses import dataclass

import arviz as az
import numpy as np

from . import DEFAULT_BUDGET, DEFAULT_CHAINS, DEFAULT_TUNE, health
from .convergence import usable_cores
from .density import Compiled
from .sampler import CHECK_GROWTH, MIN_DRAWS, STOP_MARGIN, ess_growth

# The cost estimate made before sampling (estimate_cost): a fixed START_SECONDS (starting the
# sampler's threads, turning the trace into named draws) plus warm-up and draws per chain times
# STEP_COST_PER_DRAW leapfrog steps' worth of wall time a draw, a step timed just before sampling
# with as many chains running at once as the sampler runs (Compiled.step_seconds). Fitted on
# 2026-12-04 to 4 chains × (300 + 400) at 2 × 2 × 30, 3 × 2 × 40, 7 × 12 × 136, 7 × 5 × 389 and
# 14 × 5 × 389 (models × channels × families): 23, 25, 30, 66 and 68 steps' worth a draw beyond
# 3 s (the chains took 15 to 62 leapfrog steps a draw; the rest is each draw's trip through
# Python), so 40 is within 1.8× of each. How many steps a draw takes depends on the posterior's
# shape, which no count of cells tells: hence the factor, and the progress line's own pace.
# Since 2026-12-07 nutpie calls a small model's gradient with no Python between steps (native.py)
# and stores flat points: the two smallest sizes' default fits then took 3.3 and 5.3 s against
# estimates of 4.8 and 6.6 s (bench_fit_cost.py --one 2,2,30,1 and 3,2,40,1), still within 1.8×.
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
        return (
            f"{self.cells:,} binomial cells, {self.parameters:,} parameters; a leapfrog step takes "
            f"{self.step_ms:.2f} ms here with {self.chains} chains at once, so {self.chains} chains × "
            f"{self.steps:,} draws should take about {_duration(self.seconds)} (budget {_duration(budget)})"
        )


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
    return CostEstimate(
        cells=cells,
        parameters=compiled.model.ndim,
        step_ms=step * 1000,
        chains=chains,
        steps=tune + draws,
        seconds=seconds,
    )


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
        needed = ran["draws"] * ess_growth(row, STOP_MARGIN, otherwise=CHECK_GROWTH[1])
        draws = min(draws, max(MIN_DRAWS, round(needed)))
    cost = per_step * _rounds(following["chains"]) * (following["tune"] + draws)
    return cost * (SMALLER_STEP_COST if following["target_accept"] > ran["target_accept"] else 1.0)


ESS_MARGIN = 1.25  # extensions aim at 1.25 × the gate's ESS: the ESS of new chains varies
MAX_GROWTH = 8.0  # an extension at most multiplies the draws by this
MIN_ESS_PER_CHAIN = 50  # below this, chains are made longer rather than more numerous
# after divergences, in turn, each with a longer warm-up (smaller steps need longer to adapt the mass matrix to)
RETRY_TUNE = {0.9: 500, 0.95: 800, 0.99: 1000}
TARGET_ACCEPTS = tuple(RETRY_TUNE)


def _rounds(chains: int) -> int:
    """How many chains' worth of wall time ``chains`` chains take on this machine's cores."""
    return -(-chains // max(1, min(chains, usable_cores())))


def attempt_quality(row: dict) -> tuple:
    """How good an attempt's draws are: passed first (an attempt that passes is kept even where an earlier
    one that missed had more effective draws), then no divergences, the smallest ESS, and R-hat."""
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    r_hat = row["r_hat_max"]
    return (
        bool(row["passed"]),
        row["divergences"] == 0,
        ess if ess == ess else -1.0,
        -r_hat if r_hat == r_hat else -9.0,
    )


def next_attempt(
    row: dict,
    settings: dict,
    *,
    chains_kept: int,
    diverged: int,
    previous: str = "first run",
    first_chains: int = DEFAULT_CHAINS,
    sampler: str = "nutpie",
) -> tuple[str, dict, bool] | None:
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
            return (
                f"divergences: target acceptance {higher[0]}",
                {
                    **settings,
                    "target_accept": higher[0],
                    "tune": max(settings["tune"], RETRY_TUNE[higher[0]]),
                    "chains": first_chains,
                },
                False,
            )
        if not settings["low_rank"] and sampler == "nutpie":  # PyMC's NUTS has no low-rank mass matrix here
            return "divergences: low-rank mass matrix", {**settings, "low_rank": True, "chains": first_chains}, False
        return None
    ess = min(row["ess_bulk_min"], row["ess_tail_min"])
    growth = ess_growth(row, ESS_MARGIN, otherwise=MAX_GROWTH)
    r_hat_only = row["r_hat_max"] > health.R_HAT_MAX and growth <= 1.0
    if r_hat_only and previous.startswith("more chains") and "R-hat" in previous:
        return (
            "R-hat still high: longer chains",
            {**settings, "tune": 2 * settings["tune"], "draws": 2 * settings["draws"], "chains": first_chains},
            False,
        )
    if growth > 1.0 and ess / chains_kept < MIN_ESS_PER_CHAIN:
        # a chain this short has too few effective draws for R-hat to settle, however many are pooled
        # as many draws in all as the pooled chains had, times the growth the ESS asks for
        draws = int(np.ceil(settings["draws"] * chains_kept / first_chains * min(max(growth, 2.0), MAX_GROWTH)))
        return (
            f"longer chains: ESS {ess:.0f} over {chains_kept} chains",
            {**settings, "draws": draws, "tune": max(settings["tune"], DEFAULT_TUNE), "chains": first_chains},
            False,
        )
    if row["r_hat_max"] > health.R_HAT_MAX:
        growth = max(growth, 2.0)
    growth = min(max(growth, 1.0), MAX_GROWTH)
    parallel = max(1, min(settings["chains"], usable_cores()))
    extra = -(-int(np.ceil(chains_kept * (growth - 1.0))) // parallel) * parallel
    reason = f"R-hat {row['r_hat_max']:.3f}" if r_hat_only else f"ESS {ess:.0f}"
    return f"more chains ({max(extra, parallel)}): {reason}", {**settings, "chains": max(extra, parallel)}, True


def warm_start_note(idata: az.InferenceData, saved: az.InferenceData) -> str:
    """What the warm start saved: this fit's time against a cold fit's, estimated from the saved fit's
    time scaled by the cost of a gradient here and there."""
    attrs, before = idata.posterior.attrs, saved.posterior.attrs
    took = float(attrs["seconds"])
    if "step_ms" not in before or "seconds" not in before:
        return f"warm start: the fit took {took:.0f} s (the saved fit records no timing to compare with)"
    cold = float(before["seconds"]) * float(attrs["step_ms"]) / float(before["step_ms"])
    return (
        f"warm start: the fit took {took:.0f} s; a cold fit of this leaderboard would take about {cold:.0f} s "
        f"(the saved fit's {float(before['seconds']):.0f} s, scaled by the cost of a gradient), "
        f"so about {cold - took:.0f} s saved"
    )


def next_attempt_note(idata: az.InferenceData) -> str | None:
    """What the fit would have tried next had its budget allowed, and what to run for it; None if nothing was cut."""
    recorded = idata.posterior.attrs.get("next_attempt")
    if not recorded:
        return None
    skipped = json.loads(recorded)
    return (
        f"The next attempt ({skipped['action']}) would have taken about {skipped['seconds']:.0f} s, "
        f"past the budget of {float(idata.posterior.attrs['budget']):.0f} s: run again with "
        f"--budget {int(np.ceil(skipped['budget'] * 1.2 / 60) * 60)} to let it."
    )
