"""Evaluate a new model on a fraction of the benchmark: plan which families it answers, then
estimate every metric it would have had on the whole cohort, with a family-level interval.

The design is a stratified random sample of families. The models already answered in full
(the complete models) say, family by family, how predictable a model's outcome is from
theirs: each is predicted in turn from the others, and the families whose outcomes the
others predict badly form the strata that get more of the budget (Neyman allocation, blended
with proportional allocation so that a new model unlike the others is not starved of
families that looked predictable). Within a stratum every family has the same chance.

The estimate is the augmented inverse-probability-weighted (AIPW) estimator of survey
sampling, in its regression form (generalised regression, Särndal, Swensson and Wretman
1992, ch. 6): a family's outcome is predicted from the complete models' outcomes on it (its
difficulty in this channel, and pooled over every channel and condition), the prediction is
summed over every cohort family, and the sampled families' prediction errors, weighted by
the inverse of their inclusion probability, correct it. The correction keeps the estimate
consistent when the prediction is poor (a new model stronger than every complete one, say);
a good prediction only narrows the interval. A metric is a ratio of sums (``metrics``), so
its variance is that of the linearised residual ``(a − â) − θ (b − b̂)`` under the stratified
design, with each stratum's finite-population correction.

No library in the stack (scipy, pingouin, arviz) has survey estimators for a stratified design,
so the lines below follow the textbook formulas (Cochran 1977, ch. 5–6; Särndal et al. 1992).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from . import intervals, resample
from .. import units
from ..errors import UsageError, require_known, unknown_name
from .metrics import METRICS, RESULT_SCHEMA, family_matrices, metric_components, random_baselines

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
#: ``method`` of an estimate: the AIPW estimator with the complete models' prediction, or, where the
#: complete models say the prediction would not pay, the inverse-probability-weighted sample alone.
METHOD, METHOD_WITHOUT_PREDICTION = "aipw_stratified", "weighted_stratified"


# ----------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class ChannelData:
    """One channel's cohort families and, per metric, the (families, models) matrices of a_f and b_f."""

    channel: str
    families: list[str]
    models: list[str]
    a: dict[str, np.ndarray]
    b: dict[str, np.ndarray]


def channel_data(outcomes: pl.DataFrame, channel: str, models: list[str], metrics: tuple[str, ...],
                 families: list[str] | None = None) -> ChannelData:
    """a_f and b_f of each metric for these models on the channel's families (default: every family
    with a row); a model without a row for a family gets NaN there."""
    part = outcomes.filter(pl.col("channel") == channel)
    if families is None:
        families = sorted(part["family_id"].unique().to_list())
    exprs = [e.alias(f"{m}:{side}") for m in metrics for side, e in zip(("a", "b"), metric_components(m))]
    _, matrices = family_matrices(part.select("model", "family_id", *exprs), models=list(models),
                                  columns=[f"{m}:{side}" for m in metrics for side in "ab"], families=families,
                                  missing=np.nan)
    a = {m: matrices[f"{m}:a"] for m in metrics}
    b = {m: matrices[f"{m}:b"] for m in metrics}
    return ChannelData(channel, families, list(models), a, b)


def pooled_difficulty(outcomes: pl.DataFrame, models: list[str], families: list[str]) -> np.ndarray:
    """(families, models): each model's mean correctness on the family over every channel and
    condition (P0, source, shuffled, cf), a less noisy reading of how hard the family is than any
    one channel's. NaN where a model has no row for the family."""
    frame = (outcomes.filter(pl.col("model").is_in(models))
             .with_columns((pl.col("cf_correct") / pl.col("cf_tasks").cast(pl.Float64)).alias("y_cf"))
             .group_by("family_id", "model")
             .agg(pl.mean_horizontal("y_p0", "y_source", "y_shuffled", "y_cf").mean().alias("difficulty")))
    return family_matrices(frame, models=list(models), columns=["difficulty"], families=families,
                           missing=np.nan)[1]["difficulty"]


def _others_mean(values: np.ndarray, others: list[int]) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.nanmean(values[:, others], axis=1) if others else np.full(len(values), np.nan)


PREDICTORS = ("own", "pooled")


def _design_matrix(own: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """Intercept, the complete models' mean of the quantity itself, and the pooled difficulty."""
    columns = [np.ones_like(own)]
    if "own" in PREDICTORS:
        columns.append(own)
    if "pooled" in PREDICTORS:
        columns.append(pooled)
    return np.column_stack(columns)


def _fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares coefficients (minimum-norm where the design is singular: a constant
    predictor on the sample, say)."""
    sw = np.sqrt(w)
    beta, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    return beta


# --------------------------------------------------------------------------- the design


@dataclass(frozen=True)
class Predictability:
    """What the complete models say about how predictable a model is from the others.

    ``spread``: per family, the squared linearised residuals of the plan metrics, each channel
    × metric scaled to a mean of 1 so that every one weighs the same, averaged. ``residuals``:
    per channel, the (families, models) residuals of PGR, from which `plan` predicts its
    intervals; ``totals``: per channel, each complete model's Σ b of PGR.
    """

    families: list[str]
    spread: np.ndarray
    residuals: dict[str, tuple[list[str], np.ndarray]]
    totals: dict[str, np.ndarray]


def predictability(outcomes: pl.DataFrame, models: list[str], channels: list[str]) -> Predictability:
    """Each complete model in turn predicted from the rest by the estimator's own regression.

    With fewer than two complete models there is nothing to learn from: every family gets
    spread 1 and the residuals are each model's own deviations from its mean (a plain
    random sample's).
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    residuals, totals = {}, {}
    for channel in channels:
        data = channel_data(outcomes, channel, models, PLAN_METRICS)
        pool = pooled_difficulty(outcomes, models, data.families)
        for metric in PLAN_METRICS:
            residual = _leave_one_model_out(data.a[metric], data.b[metric], pool)
            if metric == "pgr":
                residuals[channel] = (data.families, residual)
                totals[channel] = np.nansum(data.b[metric], axis=0)
            scale = np.nanmean(residual ** 2) if np.isfinite(residual).any() else np.nan
            if len(models) < 2 or not np.isfinite(scale) or scale <= 0:
                continue
            per_family = np.nanmean(residual ** 2, axis=1) / scale
            for family, value in zip(data.families, per_family):
                if np.isfinite(value):
                    sums[family] = sums.get(family, 0.0) + value
                    counts[family] = counts.get(family, 0) + 1
    families = universe(outcomes, channels)
    return Predictability(families, np.array([sums[f] / counts[f] if counts.get(f) else 1.0 for f in families]),
                          residuals, totals)


def _leave_one_model_out(a: np.ndarray, b: np.ndarray, pooled: np.ndarray) -> np.ndarray:
    """(families, models) linearised residuals of each model predicted from the others: their mean
    of the quantity and their pooled difficulty (``pooled``, families × models), never its own."""
    n_families, n_models = a.shape
    out = np.full((n_families, n_models), np.nan)
    for j in range(n_models):
        others = [k for k in range(n_models) if k != j]
        pool = _others_mean(pooled, others) if others else np.zeros(n_families)
        ok = np.isfinite(a[:, j]) & np.isfinite(b[:, j]) & np.isfinite(pool)
        if ok.sum() < 4:
            continue
        theta = a[ok, j].sum() / b[ok, j].sum() if b[ok, j].sum() > 0 else 0.0
        residual = np.zeros(ok.sum())
        for values, sign in ((a, 1.0), (b, -theta)):
            if others:
                x = _design_matrix(_others_mean(values, others)[ok], pool[ok])
            else:  # one complete model: no one to predict it from, a plain sample's deviations
                x = np.ones((ok.sum(), 1))
            beta = _fit(x, values[ok, j], np.ones(ok.sum()))
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
    weights = weights + (neyman_share * neyman / neyman.sum() if neyman.sum() > 0 else neyman_share * sizes / sizes.sum())
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
        return pl.DataFrame({
            "family_id": self.families, "stratum": self.stratum,
            "stratum_families": self.sizes[self.stratum - 1], "stratum_sampled": self.counts[self.stratum - 1],
            "inclusion_probability": self.counts[self.stratum - 1] / self.sizes[self.stratum - 1],
            "selected": selected, "spread": spread,
        }, schema_overrides={"stratum": pl.Int32, "stratum_families": pl.Int32, "stratum_sampled": pl.Int32})


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


def make_plan(outcomes: pl.DataFrame, *, models: list[str], channels: list[str], families: int,
              seed: int = 0, known: Predictability | None = None) -> pl.DataFrame:
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


def predicted_half_widths(known: Predictability, members: list[str], spread: np.ndarray, budgets: list[int],
                          conf_level: float = 0.95, strata_options: tuple[int | None, ...] | None = None
                          ) -> pl.DataFrame:
    """The 95% half-width (pp) of each channel's PGR that the estimate should have at each budget.

    For each complete model, its residuals when predicted from the others (`predictability`) under
    the stratified design of that budget (each stratum's families in the channel's cohort sampled in
    proportion), the variance of a stratified mean with finite-population correction; the root mean
    over the complete models (``half_width``) is what a new model like the complete ones would get.
    ``half_width_low`` and ``half_width_high`` are the half-widths of the steadiest and the noisiest
    complete model: a new model near the ceiling (or at chance) varies less from family to family
    than the typical one and lands near the low end, or below it if it is steadier than all of them.
    """
    rows = []
    for n, strata in ((n, h) for n in budgets
                      for h in (strata_options or (choose_strata(known, members, spread, n),))):
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
                        variance += big_n ** 2 * max(0.0, 1 - n_h / big_n) * u.var(ddof=1) / n_h
                variances.append(variance / total ** 2)
            sampled = n * len(families) / len(members)
            df = max(1, round(sampled) - len(plan.sizes) - 3)
            quantile = stats.t.ppf(0.5 + conf_level / 2, df)
            errors = [np.sqrt(np.mean(variances)), np.sqrt(np.min(variances)), np.sqrt(np.max(variances))] \
                if variances else [np.nan] * 3  # standard errors: typical, steadiest, noisiest model
            rows.append((n, len(plan.sizes), channel, *(units.percent(quantile * e) for e in errors)))
    return pl.DataFrame(rows, schema={"families": pl.Int64, "strata": pl.Int64, "channel": pl.String,
                                      "half_width": pl.Float64, "half_width_low": pl.Float64,
                                      "half_width_high": pl.Float64}, orient="row")


# ------------------------------------------------------------------------- the estimate


@dataclass(frozen=True)
class Estimate:
    estimate: float
    se: float
    df: int
    n: int
    predicted: bool = False  # the complete models' prediction entered


def _collapse(stratum: np.ndarray, sampled: np.ndarray, minimum: int) -> np.ndarray:
    """Merge strata with fewer than ``minimum`` sampled families into their neighbour (strata are
    ordered by spread, so neighbours are alike); labels 0, 1, … of the groups."""
    labels = sorted(set(stratum.tolist()))
    groups: list[list[int]] = []
    for label in labels:
        if groups and (sampled & np.isin(stratum, groups[-1])).sum() < minimum:
            groups[-1].append(label)
        else:
            groups.append([label])
    if len(groups) > 1 and (sampled & np.isin(stratum, groups[-1])).sum() < minimum:
        groups[-2].extend(groups.pop())
    out = np.empty_like(stratum)
    for g, members in enumerate(groups):
        out[np.isin(stratum, members)] = g
    return out


def _design_weights(stratum: np.ndarray, sampled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each family's weight N_h / n_h in its stratum (a stratum none of whose families was answered
    borrows its neighbour's sample, the one approximation), and the groups the variance is computed
    over: strata with fewer than two answered families merged into a neighbour (the collapsed-strata
    variance, which errs on the wide side)."""
    weighting = _collapse(stratum, sampled, 1)
    sizes = np.bincount(weighting)
    taken = np.bincount(weighting, weights=sampled.astype(float))
    w = (sizes / np.where(taken > 0, taken, 1))[weighting]
    return w, _collapse(weighting, sampled, MIN_PER_STRATUM)


def regression_pays(a: np.ndarray, b: np.ndarray, pooled: np.ndarray, sampled: int, known: bool = True) -> bool:
    # a, b, pooled: (families, complete models)
    """Whether predicting from the complete models narrows the interval, judged on the complete
    models alone (each predicted from the others) so that the choice cannot bias the estimate: the
    residual variance must fall by more than fitting the prediction's extra coefficients costs
    (about their number over the sampled families)."""
    if a.shape[1] < 2 or sampled < 8:
        return False
    regressed = _leave_one_model_out(a, b, pooled)
    plain = np.column_stack([
        a[:, j] - (np.nansum(a[:, j]) / np.nansum(b[:, j]) if np.nansum(b[:, j]) > 0 else 0.0) * b[:, j]
        for j in range(a.shape[1])])
    ok = np.isfinite(regressed) & np.isfinite(plain)
    if ok.sum() < 8:
        return False
    gain = 1 - np.var(regressed[ok]) / max(np.var(plain[ok]), 1e-12)
    extra = len(PREDICTORS) * (1 if known else 2)
    # twice the break-even: the complete models' gain is an estimate too, and a new model may
    # follow them less closely than they follow one another
    return bool(gain > SAFETY * extra / sampled)


def aipw_ratio(a: np.ndarray, b: np.ndarray, sampled: np.ndarray, stratum: np.ndarray,
               predict_a: np.ndarray, predict_b: np.ndarray | None, pooled: np.ndarray,
               regress: bool = True, multiplicity: np.ndarray | None = None) -> Estimate:
    """The AIPW (regression) estimate of Σ a / Σ b over every family and its standard error.

    ``a`` and ``b`` hold the new model's values where ``sampled``; ``predict_*`` the complete models'
    mean of each, ``pooled`` their pooled difficulty, for every family; ``predict_b`` None when b_f is
    known for every family (it does not depend on the answers: PGR's "has a cf task", say), and ``b``
    then holds it everywhere. ``multiplicity`` (per family, summing to n_h in each stratum) is a
    bootstrap replicate's draw of the sampled families; the standard error is then not computed.
    """
    n = int(sampled.sum())
    w, groups = _design_weights(stratum, sampled)
    if multiplicity is not None:
        w = w * multiplicity
    fitted = {}
    totals = {}
    for name, values, predictor in (("a", a, predict_a), ("b", b, predict_b)):
        if predictor is None:
            fitted[name] = values
            totals[name] = values.sum()
            continue
        x = _design_matrix(predictor, pooled) if regress else np.ones((len(values), 1))
        beta = _fit(x[sampled], values[sampled], w[sampled])
        prediction = x @ beta
        fitted[name] = prediction
        totals[name] = prediction.sum() + (w[sampled] * (values[sampled] - prediction[sampled])).sum()
    if totals["b"] <= 0:
        return Estimate(np.nan, np.nan, 0, n)
    theta = totals["a"] / totals["b"]
    if multiplicity is not None:
        return Estimate(float(theta), np.nan, 0, n, regress)
    # the stratified variance of the weighted linearised residuals, z = w u: per group
    # (1 − n_g/N_g) · n_g/(n_g − 1) · Σ (z − z̄)², which for one stratum of equal weights N/n
    # is the textbook N²(1 − n/N) s²_u / n
    z = w * ((a - fitted["a"]) - theta * (b - fitted["b"]))
    variance = 0.0
    for g in range(groups.max() + 1):
        members = sampled & (groups == g)
        n_g, big_n = int(members.sum()), int((groups == g).sum())
        if n_g >= 2 and big_n > n_g:
            variance += (1 - n_g / big_n) * n_g / (n_g - 1) * ((z[members] - z[members].mean()) ** 2).sum()
    slopes = sum(p is not None for p in (predict_a, predict_b)) * (len(PREDICTORS) if regress else 0)
    # residuals from a fitted prediction are smaller than its errors on new families by about
    # (n − slopes)/n (each group's n_g/(n_g − 1) already pays for its mean): without this the
    # intervals of a regressed estimate covered 93–94% at 10–15% of families (bench_adaptive, agree)
    if slopes and n > slopes + 1:
        variance *= n / (n - slopes)
    df = max(1, n - int(groups.max() + 1) - 1 - slopes)
    return Estimate(float(theta), float(np.sqrt(variance) / totals["b"]), df, n, regress)


def bootstrap_se(args: tuple, *, draws: int, rng: np.random.Generator) -> tuple[float, int]:
    """Standard error of `aipw_ratio`'s estimate by the rescaled bootstrap of Rao and Wu (1988): in
    each group of the variance (`_design_weights`) n_g − 1 of the n_g answered families are drawn with
    replacement and each weight is rescaled by 1 − λ + λ · n_g/(n_g − 1) · (times drawn),
    λ = √(1 − n_g/N_g), which carries each group's finite-population correction; the prediction is
    refitted in every replicate. ``args`` are `aipw_ratio`'s. Returns (standard error, replicates
    undefined); the interval is then formed as for the design-based standard error
    (`score_interval`), so that it too stays off a bound's single point."""
    a, b, sampled, stratum, *rest = args
    _, groups = _design_weights(stratum, sampled)
    members = [np.flatnonzero(sampled & (groups == g)) for g in range(groups.max() + 1)]
    scale = [np.sqrt(max(0.0, 1 - len(m) / (groups == g).sum())) for g, m in enumerate(members)]
    replicates = np.full(draws, np.nan)
    for r in range(draws):
        multiplicity = np.ones(len(a))
        for chosen, lam in zip(members, scale):
            if len(chosen) < 2:
                continue
            drawn = np.bincount(rng.integers(0, len(chosen), len(chosen) - 1), minlength=len(chosen))
            multiplicity[chosen] = 1 - lam + lam * len(chosen) / (len(chosen) - 1) * drawn
        replicates[r] = aipw_ratio(a, b, sampled, stratum, *rest, multiplicity=multiplicity).estimate
    defined = replicates[np.isfinite(replicates)]
    se = float(defined.std(ddof=1)) if defined.size >= 2 else np.nan
    return se, int(draws - defined.size)


#: A standard error (or a distance from a bound) this small is rounding, not a spread: the sums of a
#: sample whose every family is right can come out at 1 − 3e-16 with a standard error of 3e-32.
NEGLIGIBLE = 1e-9


def score_interval(estimate: float, se: float, df: int, *, families: int, sampling_fraction: float,
                   conf_level: float) -> tuple[float, float]:
    """Wilson's score interval of a rate on the design's effective sample size.

    ``estimate ± t · se`` fails at the bounds, where a model near the ceiling (or near zero) lives:
    when every answered family agrees the standard error is 0 and the interval a point, though the
    unanswered families may hold a failure; just inside a bound it is symmetric where the truth is
    not. Wilson's interval does not collapse there (Dean and Pagano 2015 compare it with the other
    intervals for proportions from complex samples). Its sample size is Kish's effective one,
    n_eff = p(1 − p) / se², which carries the design, the prediction and the finite-population
    correction; where se is 0 (or the estimate on a bound) nothing measures the design effect and it
    is taken as 1: n_eff = the answered ``families`` over 1 − the ``sampling_fraction``, a simple
    random sample's. The quantile is Student's t at the design's ``df``. Written out here because
    scipy's Wilson interval (``binomtest(k, n).proportion_ci``) takes whole counts, and n_eff is
    not one; where it is, the two agree (tests/stats/test_subsample.py).

    Twelve of twelve answered families right, a fifth of the cohort answered: n_eff = 12 / 0.8 = 15,
    and the lower end is 1 / (1 + t²/15) with t = t(11) at 97.5%, 2.201, so 0.756:

    >>> [round(x, 3) for x in score_interval(1.0, 0.0, 11, families=12, sampling_fraction=0.2, conf_level=0.95)]
    [0.756, 1.0]
    """
    if not np.isfinite(estimate):
        return np.nan, np.nan
    p = min(max(estimate, 0.0), 1.0)
    if np.isfinite(se) and se > NEGLIGIBLE and NEGLIGIBLE < p < 1 - NEGLIGIBLE:
        n_eff = p * (1 - p) / se ** 2
    elif sampling_fraction < 1 and families > 0:
        n_eff = families / (1 - sampling_fraction)
    elif sampling_fraction >= 1:  # every family answered: the value itself, no uncertainty left
        return p, p
    else:
        return np.nan, np.nan
    low, high = intervals.wilson(np.array([p]), np.array([n_eff]), stats.t.ppf(0.5 + conf_level / 2, max(df, 1)))
    return float(low[0]), float(high[0])


def difference_interval(estimate: float, first: tuple[float, float, float], second: tuple[float, float, float],
                        correlation: float) -> tuple[float, float]:
    """Interval of a difference of two rates from each rate's own interval: the method of variance
    estimates recovery (MOVER, Zou and Donner 2008; Newcombe 1998's square-and-add for paired rates),
    ``first`` and ``second`` as (estimate, low, high) and ``correlation`` between the two estimates.
    Each side takes the distance to the bound on the side that moves the difference that way, so a
    rate near its ceiling contributes little upwards and its full score interval downwards; with
    symmetric intervals it is ``estimate ± t · se`` of the difference.

    Both rates 1 with intervals [0.9, 1], uncorrelated: the difference 0 is uncertain by 0.1 each way:

    >>> [round(x, 3) for x in difference_interval(0.0, (1.0, 0.9, 1.0), (1.0, 0.9, 1.0), 0.0)]
    [-0.1, 0.1]
    """
    low, high = intervals.mover(np.array([estimate]), tuple(np.array([x]) for x in first),
                                tuple(np.array([x]) for x in second), np.array([correlation]))
    return float(low[0]), float(high[0])


#: Metrics whose b_f does not depend on the answers (1, "has a cf task", the number of cf
#: tasks): known for every cohort family, so the estimate divides by the true Σ b.
KNOWN_DENOMINATORS = frozenset({"acc_p0", "acc_source", "acc_shuffled", "reliance_margin", "cf_accuracy", "pgr",
                                "random_baseline"})


def strata_of(plan: pl.DataFrame | None, families: list[str]) -> np.ndarray:
    """Each family's stratum in the plan (`make_plan`'s frame); 0 for every family without a plan (a
    simple random sample) and for a family the plan does not hold."""
    if plan is None:
        return np.zeros(len(families), dtype=int)
    strata = dict(plan.select("family_id", "stratum").iter_rows())
    return np.array([strata.get(f, 0) for f in families], dtype=int)


#: A difference of two rates, with the rates it is the difference of: its interval is built from
#: theirs (`difference_interval`); every other metric is a rate in [0, 1] (`score_interval`).
DIFFERENCES = {"reliance_margin": ("acc_source", "acc_shuffled")}


def estimate_model(outcomes: pl.DataFrame, plan: pl.DataFrame | None, *, model: str, complete: list[str],
                   channels: list[str], metrics: tuple[str, ...] = METRICS, conf_level: float = 0.95,
                   seed: int = 0, draws: int = 0) -> pl.DataFrame:
    """Every metric of a partial model over the complete cohort, as the rows of ``metrics``.

    ``plan`` is the design (`make_plan`'s frame, every cohort family with its stratum); None reads
    the families the model answered as a simple random sample of the cohort. ``n`` counts the
    cohort families the model answered; ``method`` names the estimator. The standard error is the
    design's (``draws`` = 0) or the stratified bootstrap's; the interval around it is Wilson's score
    interval for a rate and, for RM, the MOVER interval of a difference of two rates, so that a model
    near the ceiling or at zero gets an interval, not a point.
    """
    resample.check_options(draws=draws, conf_level=conf_level)
    require_known("metric", None, list(metrics), list(METRICS))
    needed = tuple(dict.fromkeys([*metrics, *(part for m in metrics for part in DIFFERENCES.get(m, ()))]))
    rows = []
    baselines = random_baselines(outcomes.filter(pl.col("model").is_in(complete)), metrics)
    for channel in channels:
        families = sorted(outcomes.filter((pl.col("channel") == channel) & pl.col("model").is_in(complete))
                          ["family_id"].unique().to_list())
        data = channel_data(outcomes, channel, [*complete, model], needed, families)
        stratum = strata_of(plan, families)
        pooled = pooled_difficulty(outcomes, complete, families)
        with np.errstate(invalid="ignore"):
            pool = np.nan_to_num(np.nanmean(pooled, axis=1), nan=0.5)
        fitted = {}
        for metric in needed:
            a_all, b_all = data.a[metric], data.b[metric]
            a, b = a_all[:, -1], b_all[:, -1]
            sampled = np.isfinite(a) & np.isfinite(b)
            known = metric in KNOWN_DENOMINATORS
            b_use = b_all[:, 0] if known else np.where(sampled, b, 0.0)
            regress = regression_pays(a_all[:, :-1], b_all[:, :-1], pooled, int(sampled.sum()), known)
            args = (np.where(sampled, a, 0.0), b_use, sampled, stratum, np.nanmean(a_all[:, :-1], axis=1),
                    None if known else np.nanmean(b_all[:, :-1], axis=1), pool, regress)
            result = aipw_ratio(*args) if sampled.sum() >= 2 else Estimate(np.nan, np.nan, 0, int(sampled.sum()))
            se, undefined = result.se, 0
            if draws and np.isfinite(result.estimate):
                se, undefined = bootstrap_se(args, draws=draws, rng=resample.rng_for(seed, f"{model}:{channel}:{metric}"))
            # the answered families that enter the rate (b > 0), and the share of the cohort answered
            # (for CFR and its kin, only initially right sources count: a chance-level model has few, and
            # its degrees of freedom are theirs, not every answered family's)
            counted = int((sampled & (b_use > 0)).sum())
            ends = (np.nan, np.nan) if metric in DIFFERENCES else score_interval(
                result.estimate, se, min(result.df, counted - 1), families=counted,
                sampling_fraction=sampled.sum() / max(len(sampled), 1), conf_level=conf_level)
            fitted[metric] = (result, se, undefined, ends)
        for metric in metrics:
            result, se, undefined, (low, high) = fitted[metric]
            if metric in DIFFERENCES:
                parts = [fitted[part] for part in DIFFERENCES[metric]]
                (first, se1, _, ends1), (second, se2, _, ends2) = parts
                # from var(RM) = var₁ + var₂ − 2 cov; no spread on a side: taken as uncorrelated
                correlation = ((se1 ** 2 + se2 ** 2 - se ** 2) / (2 * se1 * se2)
                               if min(se1, se2) > NEGLIGIBLE else 0.0)
                low, high = difference_interval(result.estimate, (first.estimate, *ends1),
                                                (second.estimate, *ends2), correlation) \
                    if np.isfinite(result.estimate) else (np.nan, np.nan)
            method = METHOD if result.predicted else METHOD_WITHOUT_PREDICTION
            booted = bool(draws) and np.isfinite(result.estimate)
            rows.append((model, channel, metric, result.estimate, low, high, conf_level, result.n,
                         f"{method}_bootstrap" if booted else method, draws if booted else 0, undefined, seed,
                         "wrong", None))
    frame = pl.DataFrame(rows, schema=RESULT_SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    frame = frame.drop("baseline").join(baselines, on=["channel", "metric"], how="left", maintain_order="left")
    return units.percent_columns(frame.select(list(RESULT_SCHEMA)), ("estimate", "conf_low", "conf_high", "baseline"))


# ---------------------------------------------------------------------- the database


def complete_models(con) -> list[str]:
    """The models answered in full: the ones a plan learns from and an estimate predicts with."""
    return con.sql("SELECT model FROM model_coverage WHERE NOT partial ORDER BY model").pl()["model"].to_list()


def _cohort_outcomes(con) -> tuple[pl.DataFrame, list[str]]:
    from .metrics import read_family_outcomes

    outcomes, channels, _ = read_family_outcomes(con)
    present = set(outcomes["channel"].unique().to_list())
    return outcomes, [c for c in channels if c in present]


def tasks_per_family(con, families: list[str], channels: list[str]) -> dict[str, int]:
    """Requests a family costs: its P0 task and its tasks in the channels (bundles included)."""
    rows = con.execute(
        """SELECT family_id, count(*) FROM stg_tasks
           WHERE list_contains($families, family_id) AND (channel = 'none' OR list_contains($channels, channel))
           GROUP BY family_id""", {"families": families, "channels": channels}).fetchall()
    return dict(rows)


#: Budgets printed beside the one asked for, as fractions of the plan's families.
OTHER_FRACTIONS = (0.05, 0.10, 0.15, 0.30, 0.50)


@dataclass(frozen=True)
class Plan:
    plan_id: str
    families: pl.DataFrame  # make_plan's frame
    channels: list[str]
    models: list[str]
    seed: int
    requests: int
    budgets: pl.DataFrame  # families, fraction, requests, strata, channel, half_width (_low, _high)


def plan_from_db(con, *, fraction: float | None = None, families: int | None = None,
                 channels: list[str] | None = None, seed: int = 0) -> Plan:
    """Choose the families a new model answers, from the complete models in the database, and
    predict each channel's PGR half-width at that budget and at a few others."""
    if (fraction is None) == (families is None):
        raise UsageError("give a fraction or a number of families (one of them)")
    models = complete_models(con)
    if not models:
        raise UsageError("no complete model in the database: a plan learns from models that answered every family")
    outcomes, all_channels = _cohort_outcomes(con)
    outcomes = outcomes.filter(pl.col("model").is_in(models))
    channels = [c for c in all_channels if c in channels] if channels else all_channels
    if not channels:
        raise UsageError("no channel with a cohort to plan for")
    members = universe(outcomes, channels)
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise UsageError(f"the fraction must be in (0, 1], got {fraction}")
        families = max(MIN_PER_STRATUM, round(fraction * len(members)))
    if families < MIN_PER_STRATUM:
        raise UsageError(f"a plan needs at least {MIN_PER_STRATUM} families for an interval, not {families}")
    known = predictability(outcomes, models, channels)
    frame = make_plan(outcomes, models=models, channels=channels, families=families, seed=seed, known=known)
    chosen = frame.filter("selected")["family_id"].to_list()
    cost = tasks_per_family(con, members, channels)
    per_family = np.mean([cost.get(f, 0) for f in members])
    budgets = sorted({families, *(max(2, round(f * len(members))) for f in OTHER_FRACTIONS)} - {0})
    budgets = [b for b in budgets if b <= len(members)]
    widths = predicted_half_widths(known, members, frame["spread"].to_numpy(), budgets).with_columns(
        (pl.col("families") / len(members)).alias("fraction"),
        pl.when(pl.col("families") == families).then(sum(cost.get(f, 0) for f in chosen))
        .otherwise((pl.col("families") * per_family).round().cast(pl.Int64)).alias("requests"))
    plan_id = f"plan-{seed}-{families}-" + _digest(chosen, channels, models)
    return Plan(plan_id, frame, channels, models, seed, sum(cost.get(f, 0) for f in chosen),
                widths.select("families", "fraction", "requests", "strata", "channel", "half_width",
                              "half_width_low", "half_width_high"))


def _digest(*parts) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:10]


def save_plan(con, plan: Plan) -> None:
    """Record the plan (every family, selected or not, with its stratum): `estimate` reads it back."""
    from ..store import transaction

    with transaction(con):
        con.execute("DELETE FROM plan_families WHERE plan_id = $id", {"id": plan.plan_id})
        con.execute("DELETE FROM plans WHERE plan_id = $id", {"id": plan.plan_id})
        con.execute("INSERT INTO plans VALUES ($id, now(), $seed, $n, $channels, $models, $share)",
                    {"id": plan.plan_id, "seed": plan.seed, "n": int(plan.families["selected"].sum()),
                     "channels": plan.channels, "models": plan.models, "share": NEYMAN_SHARE})
        rows = plan.families.with_columns(pl.lit(plan.plan_id).alias("plan_id")).select(
            "plan_id", "family_id", "stratum", "stratum_families", "stratum_sampled", "inclusion_probability",
            "selected", "spread")
        con.register("new_plan_families", rows.to_arrow())
        con.execute("INSERT INTO plan_families SELECT * FROM new_plan_families")
        con.unregister("new_plan_families")


def find_plan(con, model: str, plan_id: str | None = None) -> tuple[str | None, pl.DataFrame | None, str | None]:
    """The plan a partial model was run on: ``plan_id`` if given, else the recorded plan whose selected
    families hold most of the families the model answered. Returns (plan id, its families, a note
    for the user or None)."""
    plans = [row[0] for row in con.execute("SELECT plan_id FROM plans ORDER BY created_at DESC").fetchall()]
    if plan_id is not None and plan_id not in plans:
        raise UsageError(f"no plan {plan_id!r} in the database (plans: {', '.join(plans) or 'none'})")
    # the plan whose chosen families hold most of the model's, the newest among equals
    found = con.execute(
        """WITH answered AS (SELECT DISTINCT family_id FROM family_coverage WHERE model = $m AND answered_tasks > 0)
           SELECT f.plan_id, count(a.family_id) AS overlap
           FROM plan_families AS f JOIN plans AS p USING (plan_id)
           LEFT JOIN answered AS a ON a.family_id = f.family_id AND f.selected
           WHERE $id IS NULL OR f.plan_id = $id
           GROUP BY f.plan_id, p.created_at ORDER BY overlap DESC, p.created_at DESC LIMIT 1""",
        {"m": model, "id": plan_id}).fetchall()
    answered = {row[0] for row in con.execute(
        "SELECT DISTINCT family_id FROM family_coverage WHERE model = $m AND answered_tasks > 0", {"m": model}
    ).fetchall()}
    # a plan that holds only a few of them is a coincidence, not the model's plan (another model's run
    # of a first-N subset shares families with any plan); one named with --plan is taken as given
    if not found or found[0][1] == 0 or (plan_id is None and 2 * found[0][1] <= len(answered)):
        closest = (f" (the closest, {found[0][0]}, holds {found[0][1]} of its {len(answered)})"
                   if found and found[0][1] else "")
        return None, None, (f"no recorded plan covers {model}'s families{closest}: they are read as a simple random "
                            "sample of the cohort (run `molp2s plan` before the model, to weigh its families by design)")
    best = found[0][0]
    frame = con.sql("SELECT * FROM plan_families WHERE plan_id = $id", params={"id": best}).pl()
    chosen = set(frame.filter("selected")["family_id"])
    notes = []
    if extra := len(answered - chosen):
        notes.append(f"{extra} answered families are outside plan {best} and are left out")
    if missing := len(chosen - answered):
        notes.append(f"{missing} planned families have no answer from {model}: read as missing at random "
                     "within their stratum")
    return best, frame, "; ".join(notes) or None


#: |z| past this says the answered families are not the draw the design describes. Over 200 plans
#: of 15% on each of bench_adaptive's data sets, z had a spread of 0.95-1.12 and passed 3 in 0-1.5%
#: of them (a mean of a skewed difficulty over some 45 families is not quite normal), 4 in 0-0.5%;
#: the 20 easiest of 60 families give z = 15.6 (tests/stats/test_subsample.py).
SELECTION_Z = 4.0


def selection_check(outcomes: pl.DataFrame, plan: pl.DataFrame | None, *, model: str, complete: list[str],
                    channels: list[str]) -> tuple[float, float, float] | None:
    """Are the families the model answered the random draw the estimate assumes? The complete models'
    correctness on them (pooled over channels, conditions and models), weighed as the design weighs
    them, against the same over every family of the channels' cohorts, which is known: (answered,
    cohort, z), z the difference over its design-based standard error; None when there is too
    little to tell. A run on the first N families, or on the ones a harness happened to finish,
    shows here when the families it reached differ in difficulty."""
    members = universe(outcomes.filter(pl.col("model").is_in(complete)), channels)
    answered = set(outcomes.filter((pl.col("model") == model) & pl.col("channel").is_in(channels))["family_id"])
    with np.errstate(invalid="ignore"):
        difficulty = np.nanmean(pooled_difficulty(outcomes, complete, members), axis=1)
    known = np.isfinite(difficulty)
    difficulty, members = difficulty[known], [f for f, k in zip(members, known) if k]
    sampled = np.array([f in answered for f in members], dtype=bool)
    if sampled.sum() < 2 or sampled.all():
        return None
    zeros = np.zeros(len(members))
    result = aipw_ratio(np.where(sampled, difficulty, 0.0), np.ones(len(members)), sampled, strata_of(plan, members),
                        zeros, None, zeros, regress=False)
    if not result.se > NEGLIGIBLE:
        return None
    cohort = float(difficulty.mean())
    return result.estimate, cohort, (result.estimate - cohort) / result.se


def estimate_from_db(con, model: str, *, plan_id: str | None = None, metrics: tuple[str, ...] = METRICS,
                     conf_level: float = 0.95, seed: int = 0, draws: int = 0) -> tuple[pl.DataFrame, str | None]:
    """Every metric of a partial model over the complete cohort (`estimate_model`), with the plan
    it was run on found in the database; returns the rows and a note for the user (or None)."""
    coverage = con.sql("SELECT * FROM model_coverage").pl()
    if model not in coverage["model"].to_list():
        raise UsageError(unknown_name("model", None, [model], coverage["model"].to_list()))
    complete = complete_models(con)
    if model in complete:
        raise UsageError(f"{model} answered every family: `molp2s metrics` gives its figures directly")
    if not complete:
        raise UsageError("no complete model in the database to estimate against")
    outcomes, channels = _cohort_outcomes(con)
    found, plan, note = find_plan(con, model, plan_id)
    notes = [note]
    if plan is not None:
        chosen = set(plan.filter("selected")["family_id"])
        outcomes = outcomes.filter((pl.col("model") != model) | pl.col("family_id").is_in(chosen))
        # only the plan's channels: elsewhere a cohort holds families the plan could never draw
        planned = con.execute("SELECT channels FROM plans WHERE plan_id = $id", {"id": found}).fetchall()[0][0]
        if left := [c for c in channels if c not in planned]:
            notes.append(f"plan {found} covers {', '.join(planned)}: {len(left)} other channel(s) not estimated")
        channels = [c for c in channels if c in planned]
    outcomes = outcomes.filter(pl.col("model").is_in([*complete, model]))
    result = estimate_model(outcomes, plan, model=model, complete=complete, channels=channels, metrics=metrics,
                            conf_level=conf_level, seed=seed, draws=draws)
    if silent := [c for c in channels if c not in set(outcomes.filter(pl.col("model") == model)["channel"])]:
        notes.append(f"{model} answered no cohort family in {len(silent)} channel(s) ({', '.join(silent)}): "
                     "no estimate there")
    check = selection_check(outcomes, plan, model=model, complete=complete, channels=channels)
    if check is not None and abs(check[2]) > SELECTION_Z:
        drawn, cohort, z = check
        notes.append(
            f"the families {model} answered are not like a random draw from "
            f"{'plan ' + found if plan is not None else 'the cohort'}: the complete models are right on "
            f"{drawn:.0%} of their tasks there and on {cohort:.0%} over the cohort (z = {z:.1f}); the estimate "
            "corrects for what the complete models' outcomes predict, but its interval assumes a random draw, so "
            "read it with care (`molp2s plan` draws the families at random)")
    return result, "; ".join(filter(None, notes)) or None


def read_family_list(path, *, known: list[str]) -> list[str]:
    """The ``family_id`` column of a CSV, JSONL or Parquet file (a plan), read as the benchmark's
    tables are and every id checked against the benchmark's families; errors name the file and
    the row."""
    from pathlib import Path

    from ..ingest.benchmark import read_table
    from ..ingest.errors import InputError

    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    frame = read_table(path, "family list", spec={"family_id": ("id", True)})
    known_set = set(known)
    for family, where in frame.select("family_id", "_where").iter_rows():
        if family not in known_set:
            raise InputError(path, f"family_id {family!r} is not a family of the benchmark", where=where)
    return list(dict.fromkeys(frame["family_id"].to_list()))


#: The ``method`` values of estimated rows: a leaderboard marks them.
ESTIMATED_METHODS = (METHOD, METHOD_WITHOUT_PREDICTION, f"{METHOD}_bootstrap", f"{METHOD_WITHOUT_PREDICTION}_bootstrap")


def with_estimates(con, result: pl.DataFrame, metrics: tuple[str, ...]) -> tuple[pl.DataFrame, list[str]]:
    """``metrics``' rows with each partial model's rows replaced by its estimate over the complete
    cohort (what a leaderboard shows for it), and the notes the estimates gave."""
    from .metrics import read_partial_models

    notes = []
    for model in read_partial_models(con)["model"].to_list():
        try:
            estimate, note = estimate_from_db(con, model, metrics=metrics)
        except UsageError as exc:  # no complete model to estimate against: its plain rows stay
            notes.append(f"{model}: not estimated ({exc})")
            continue
        if note:
            notes.append(f"{model}: {note}")
        result = pl.concat([result.filter(pl.col("model") != model),
                            estimate.select(result.columns).filter(pl.col("metric").is_in(list(metrics)))])
    return result, notes
