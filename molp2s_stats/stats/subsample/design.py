"""The design of a plan: how predictable each family's outcome is from the complete models, strata of
rising spread, the budget split between them (Neyman blended with proportional allocation), the
sample drawn in each, and the interval half-widths a budget should give."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from ... import units
from ...errors import UsageError
from .. import resample
from .data import (
    channel_data,
    cohort_variance,
    design_matrix,
    others_mean,
    pooled_difficulty,
    weighted_least_squares,
)

#: The metrics whose predictability decides the strata: the paper's headline figures.
PLAN_METRICS = ("pgr", "reliance_margin")
#: Share of the budget allocated by Neyman's rule; the rest goes proportionally to stratum size.
NEYMAN_SHARE = 0.5
MIN_PER_STRATUM = 2  # a stratum's variance needs two sampled families
MAX_STRATA = 6
FAMILIES_PER_STRATUM = 8  # at least this many sampled families per stratum, on average
#: A prediction or a stratification is used only where the complete models say it gains this many
#: times what it costs (its extra coefficients or strata over the sampled families).
SAFETY = 2.0


@dataclass(frozen=True)
class Predictability:
    """What the complete models say about how predictable a model is from the others.

    ``spread``: per family, the squared linearised residuals of the plan metrics, each channel
    × metric scaled to a mean of 1 so that every one weighs the same, averaged. ``residuals``:
    per channel, the (families, models) residuals of PGR, from which `plan` predicts its
    intervals; ``totals``: per channel, each complete model's Σ b of PGR; ``cohort``: per channel, each
    complete model's ``N · S²`` of its PGR's linearised values a − θ b over the cohort (the cohort's own
    spread around the score over families like these, which the estimate's interval carries too).
    """

    families: list[str]
    spread: np.ndarray
    residuals: dict[str, tuple[list[str], np.ndarray]]
    totals: dict[str, np.ndarray]
    cohort: dict[str, np.ndarray]


def predictability(outcomes: pl.DataFrame, models: list[str], channels: list[str]) -> Predictability:
    """Each complete model in turn predicted from the rest by the estimator's own regression.

    With fewer than two complete models there is nothing to learn from: every family gets
    spread 1 and the residuals are each model's own deviations from its mean (a plain
    random sample's).
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    residuals, totals, cohort = {}, {}, {}
    for channel in channels:
        data = channel_data(outcomes, channel, models, PLAN_METRICS)
        pool = pooled_difficulty(outcomes, models, data.families)
        for metric in PLAN_METRICS:
            residual = leave_one_model_out(data.a[metric], data.b[metric], pool)
            if metric == "pgr":
                residuals[channel] = (data.families, residual)
                totals[channel] = np.nansum(data.b[metric], axis=0)
                cohort[channel] = _cohort_spread(data.a[metric], data.b[metric])
            scale = np.nanmean(residual**2) if np.isfinite(residual).any() else np.nan
            if len(models) < 2 or not np.isfinite(scale) or scale <= 0:
                continue
            per_family = np.nanmean(residual**2, axis=1) / scale
            for family, value in zip(data.families, per_family):
                if np.isfinite(value):
                    sums[family] = sums.get(family, 0.0) + value
                    counts[family] = counts.get(family, 0) + 1
    families = universe(outcomes, channels)
    return Predictability(
        families, np.array([sums[f] / counts[f] if counts.get(f) else 1.0 for f in families]), residuals, totals, cohort
    )


def _cohort_spread(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per model (column), ``N · S²`` of u = a − θ b over the families where it is defined: the variance of
    Σ u over N families drawn like these."""
    out = np.full(a.shape[1], np.nan)
    for j in range(a.shape[1]):
        ok = np.isfinite(a[:, j]) & np.isfinite(b[:, j])
        if ok.sum() >= 2 and b[ok, j].sum() > 0:
            theta = a[ok, j].sum() / b[ok, j].sum()
            out[j] = cohort_variance(a[:, j], b[:, j], ok, np.ones(len(ok)), theta)  # every family answered
    return out


def leave_one_model_out(a: np.ndarray, b: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """(families, models) linearised residuals of each model predicted from the others: their mean
    of the quantity and their pooled difficulty (``pooled``, families × models), never its own."""
    n_families, n_models = a.shape
    out = np.full((n_families, n_models), np.nan)
    for j in range(n_models):
        others = [k for k in range(n_models) if k != j]
        pool = others_mean(pooled, others) if others else np.zeros(n_families)
        ok = np.isfinite(a[:, j]) & np.isfinite(b[:, j]) & np.isfinite(pool)
        if ok.sum() < 4:
            continue
        theta = a[ok, j].sum() / b[ok, j].sum() if b[ok, j].sum() > 0 else 0.0
        residual = np.zeros(ok.sum())
        for values, sign in ((a, 1.0), (b, -theta)):
            if others:
                x = design_matrix(others_mean(values, others)[ok], pool[ok])
            else:  # one complete model: no one to predict it from, a plain sample's deviations
                x = np.ones((ok.sum(), 1))
            beta = weighted_least_squares(x, values[ok, j], np.ones(ok.sum()))
            residual += sign * (values[ok, j] - x @ beta)
        out[ok, j] = residual
    return out


def allocate(sizes: np.ndarray, spreads: np.ndarray, n: int, *, neyman_share: float | None = None) -> np.ndarray:
    """Families to sample per stratum: ``n`` split between Neyman's rule (∝ N_h S_h) and
    proportional allocation (∝ N_h), at least ``MIN_PER_STRATUM`` and at most N_h each, by
    largest remainders.

    >>> allocate(np.array([10, 10, 10]), np.array([0.1, 1.0, 2.0]), 9).tolist()
    [2, 3, 4]
    """
    sizes = np.asarray(sizes, dtype=int)
    neyman_share = NEYMAN_SHARE if neyman_share is None else neyman_share
    if n > sizes.sum():
        raise UsageError(f"cannot sample {n} families from {sizes.sum()}")
    neyman = sizes * spreads
    weights = (1 - neyman_share) * sizes / sizes.sum()
    weights = weights + (
        neyman_share * neyman / neyman.sum() if neyman.sum() > 0 else neyman_share * sizes / sizes.sum()
    )
    floor = np.minimum(sizes, MIN_PER_STRATUM)
    # the ideal shares, with strata held at their bounds where the shares overstep them and the
    # rest of the budget spread over the others in proportion (a stratum of N_h < n_h is all taken)
    ideal = np.zeros(len(sizes))
    free = np.ones(len(sizes), dtype=bool)
    while True:
        budget = n - ideal[~free].sum()
        ideal[free] = budget * weights[free] / weights[free].sum() if weights[free].sum() > 0 else 0.0
        low, high = free & (ideal < floor), free & (ideal > sizes)
        if not (low.any() or high.any()):
            break
        ideal[low], ideal[high] = floor[low], sizes[high]
        free &= ~(low | high)
        if not free.any():
            break
    counts = np.clip(np.floor(ideal).astype(int), floor, sizes)
    while counts.sum() < n:  # largest remainders first, where there is room
        room = counts < sizes
        counts[int(np.argmax(np.where(room, ideal - counts, -np.inf)))] += 1
    while counts.sum() > n:
        over = counts > floor
        counts[int(np.argmin(np.where(over, ideal - counts, np.inf)))] -= 1
    return counts


def strata_count(n: int, families: int) -> int:
    """As many strata as keep ``FAMILIES_PER_STRATUM`` sampled families in each, up to ``MAX_STRATA``."""
    return int(max(1, min(MAX_STRATA, n // FAMILIES_PER_STRATUM, families // MIN_PER_STRATUM)))


@dataclass(frozen=True)
class Design:
    """Strata of every family and families to sample per stratum, for a budget of ``n`` families."""

    families: list[str]
    stratum: np.ndarray  # 1-based, rising with spread
    sizes: np.ndarray  # N_h
    counts: np.ndarray  # n_h

    def frame(self, selected: np.ndarray, spread: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "family_id": self.families,
                "stratum": self.stratum,
                "stratum_families": self.sizes[self.stratum - 1],
                "stratum_sampled": self.counts[self.stratum - 1],
                "inclusion_probability": self.counts[self.stratum - 1] / self.sizes[self.stratum - 1],
                "selected": selected,
                "spread": spread,
            },
            schema_overrides={"stratum": pl.Int32, "stratum_families": pl.Int32, "stratum_sampled": pl.Int32},
        )


def design(families: list[str], spread: np.ndarray, n: int, strata: int | None = None) -> Design:
    """Equal-sized strata of rising spread (``strata`` of them; default as many as keep enough
    sampled families in each), and the budget split between them by `allocate`."""
    if not 1 <= n <= len(families):
        raise UsageError(f"a plan needs between 1 and {len(families)} families (the cohorts'), not {n}")
    h = strata_count(n, len(families)) if strata is None else strata
    stratum = np.empty(len(families), dtype=int)
    for s, members in enumerate(np.array_split(np.argsort(spread, kind="stable"), h)):
        stratum[members] = s + 1
    sizes = np.bincount(stratum, minlength=h + 1)[1:]
    spreads = np.array([np.sqrt(spread[stratum == s + 1].mean()) for s in range(h)])
    return Design(list(families), stratum, sizes, allocate(sizes, spreads, n))


def select(plan: Design, seed: int) -> np.ndarray:
    """A simple random sample of n_h families in each stratum, from the seed's own stream."""
    rng = resample.rng_for(seed, "plan")
    selected = np.zeros(len(plan.families), dtype=bool)
    for s, count in enumerate(plan.counts):
        members = np.flatnonzero(plan.stratum == s + 1)
        selected[rng.choice(members, size=count, replace=False)] = True
    return selected


def universe(outcomes: pl.DataFrame, channels: list[str]) -> list[str]:
    """The families a plan draws from: those in the cohort of any of its channels."""
    return sorted(outcomes.filter(pl.col("channel").is_in(channels))["family_id"].unique().to_list())


def make_plan(
    outcomes: pl.DataFrame,
    *,
    models: list[str],
    channels: list[str],
    families: int,
    seed: int = 0,
    known: Predictability | None = None,
) -> pl.DataFrame:
    """The stratified design and its sample: one row per family of the channels' cohorts, ``family_id,
    stratum, stratum_families, stratum_sampled, inclusion_probability, selected, spread``."""
    known = known or predictability(outcomes, models, channels)
    members = universe(outcomes, channels)
    lookup = dict(zip(known.families, known.spread))
    spread = np.array([lookup.get(f, 1.0) for f in members])
    plan = design(members, spread, families, choose_strata(known, members, spread, families))
    return plan.frame(select(plan, seed), spread)


def choose_strata(known: Predictability, members: list[str], spread: np.ndarray, n: int) -> int:
    """Stratify only where the complete models say it pays: the predicted variance of PGR, averaged
    over channels, must fall by more than the strata cost (re-weighting each channel's families by
    its stratum counts adds about H/n of variance). Otherwise one stratum: a simple random sample."""
    h = strata_count(n, len(members))
    if h == 1:
        return 1
    widths = predicted_half_widths(known, members, spread, [n], strata_options=(1, h))
    mean = widths.group_by("strata").agg((pl.col("half_width") ** 2).mean())
    variance = dict(mean.iter_rows())
    return h if variance.get(h, np.inf) < variance.get(1, np.inf) * (1 - SAFETY * h / n) else 1


def predicted_half_widths(
    known: Predictability,
    members: list[str],
    spread: np.ndarray,
    budgets: list[int],
    conf_level: float = 0.95,
    strata_options: tuple[int | None, ...] | None = None,
) -> pl.DataFrame:
    """The 95% half-width (pp) of each channel's PGR that the estimate should have at each budget.

    For each complete model, its residuals when predicted from the others (`predictability`) under
    the stratified design of that budget (each stratum's families in the channel's cohort sampled in
    proportion), the variance of a stratified mean with finite-population correction, plus the cohort's
    own spread around the score over families like these (as the estimate's interval); the root mean
    over the complete models (``half_width``) is what a new model like the complete ones would get.
    ``half_width_low`` and ``half_width_high`` are the half-widths of the steadiest and the noisiest
    complete model: a new model near the ceiling (or at chance) varies less from family to family
    than the typical one and lands near the low end, or below it if it is steadier than all of them.
    """
    rows = []
    for n, strata in ((b, h) for b in budgets for h in (strata_options or (choose_strata(known, members, spread, b),))):
        plan = design(members, spread, n, strata)
        stratum_of = dict(zip(plan.families, plan.stratum))
        for channel, (families, residual) in known.residuals.items():
            strata = np.array([stratum_of.get(f, 0) for f in families])
            variances = []
            for j in range(residual.shape[1]):
                total = known.totals[channel][j]
                if not total > 0:
                    continue
                variance = 0.0
                for s in range(1, len(plan.sizes) + 1):
                    u = residual[(strata == s) & np.isfinite(residual[:, j]), j]
                    big_n = len(u)
                    expected = plan.counts[s - 1] * big_n / plan.sizes[s - 1]
                    if big_n >= 2 and expected > 0:
                        n_h = max(expected, 1.0)
                        variance += big_n**2 * max(0.0, 1 - n_h / big_n) * u.var(ddof=1) / n_h
                # and the cohort's own spread, as the estimate's standard error carries it
                variance += np.nan_to_num(known.cohort[channel][j])
                variances.append(variance / total**2)
            sampled = n * len(families) / len(members)
            df = max(1, round(sampled) - len(plan.sizes) - 3)
            quantile = stats.t.ppf(0.5 + conf_level / 2, df)
            errors = (
                [np.sqrt(np.mean(variances)), np.sqrt(np.min(variances)), np.sqrt(np.max(variances))]
                if variances
                else [np.nan] * 3
            )  # standard errors: typical, steadiest, noisiest model
            rows.append((n, len(plan.sizes), channel, *(units.percent(quantile * e) for e in errors)))
    return pl.DataFrame(
        rows,
        schema={
            "families": pl.Int64,
            "strata": pl.Int64,
            "channel": pl.String,
            "half_width": pl.Float64,
            "half_width_low": pl.Float64,
            "half_width_high": pl.Float64,
        },
        orient="row",
    )
