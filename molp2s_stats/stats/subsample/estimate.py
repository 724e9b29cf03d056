"""The estimate of a partial model: the AIPW (regression) estimator of a ratio of sums under the
stratified design, its standard error (design-based, or the Rao-Wu rescaled bootstrap), Wilson's
score interval of a rate and the MOVER interval of a difference, every metric of the model over
the complete cohort, and the check that the families it answered look like a random draw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

from ... import units
from ...errors import require_known
from .. import intervals, resample
from ..metrics import METRICS, RESULT_SCHEMA, metric_trials, random_baselines
from .data import (
    PREDICTORS,
    channel_data,
    cohort_variance,
    design_matrix,
    pooled_difficulty,
    weighted_least_squares,
)
from .design import MIN_PER_STRATUM, SAFETY, leave_one_model_out, universe

#: ``method`` of an estimate: the AIPW estimator with the complete models' prediction, or, where the
#: complete models say the prediction would not pay, the inverse-probability-weighted sample alone.
METHOD, METHOD_WITHOUT_PREDICTION = "aipw_stratified", "weighted_stratified"


@dataclass(frozen=True)
class Estimate:
    estimate: float
    se: float  # of the score over families like these: the design's error and the cohort's own spread
    df: int
    n: int
    predicted: bool = False  # the complete models' prediction entered
    design_se: float = np.nan  # the design's alone: around this cohort's own score


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
    regressed = leave_one_model_out(a, b, pooled)
    plain = np.column_stack(
        [
            a[:, j] - (np.nansum(a[:, j]) / np.nansum(b[:, j]) if np.nansum(b[:, j]) > 0 else 0.0) * b[:, j]
            for j in range(a.shape[1])
        ]
    )
    ok = np.isfinite(regressed) & np.isfinite(plain)
    if ok.sum() < 8:
        return False
    gain = 1 - np.var(regressed[ok]) / max(np.var(plain[ok]), 1e-12)
    extra = len(PREDICTORS) * (1 if known else 2)
    # twice the break-even: the complete models' gain is an estimate too, and a new model may
    # follow them less closely than they follow one another
    return bool(gain > SAFETY * extra / sampled)


def aipw_ratio(
    a: np.ndarray,
    b: np.ndarray,
    sampled: np.ndarray,
    stratum: np.ndarray,
    predict_a: np.ndarray,
    predict_b: np.ndarray | None,
    pooled: np.ndarray,
    regress: bool = True,
    multiplicity: np.ndarray | None = None,
) -> Estimate:
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
        x = design_matrix(predictor, pooled) if regress else np.ones((len(values), 1))
        beta = weighted_least_squares(x[sampled], values[sampled], w[sampled])
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
    cohort = cohort_variance(a, b, sampled, w, theta)
    return Estimate(
        float(theta),
        float(np.sqrt(variance + cohort) / totals["b"]),
        df,
        n,
        regress,
        float(np.sqrt(variance) / totals["b"]),
    )


def bootstrap_se(args: tuple, *, draws: int, rng: np.random.Generator) -> tuple[float, int]:
    """Standard error of `aipw_ratio`'s estimate by the rescaled bootstrap of Rao and Wu (1988): in
    each group of the variance (`_design_weights`) n_g − 1 of the n_g answered families are drawn with
    replacement and each weight is rescaled by 1 − λ + λ · n_g/(n_g − 1) · (times drawn),
    λ = √(1 − n_g/N_g), which carries each group's finite-population correction; the prediction is
    refitted in every replicate. ``args`` are `aipw_ratio`'s. Returns (standard error, replicates
    undefined), the error that of the score over families like these (`cohort_variance` added); the interval is then formed as for the design-based standard error
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
    design = float(defined.std(ddof=1)) if defined.size >= 2 else np.nan
    # the replicates spread as the estimate does around this cohort's score; the cohort's own spread
    # around the score over families like these is added as `aipw_ratio` adds it
    point = aipw_ratio(*args)
    return float(np.sqrt(design**2 + max(point.se**2 - point.design_se**2, 0.0))), int(draws - defined.size)


#: A standard error (or a distance from a bound) this small is rounding, not a spread: the sums of a
#: sample whose every family is right can come out at 1 − 3e-16 with a standard error of 3e-32.
NEGLIGIBLE = 1e-9


def score_interval(
    estimate: float, se: float, df: int, *, families: float, capacity: float = np.inf, conf_level: float
) -> tuple[float, float]:
    """Wilson's score interval of a rate on the design's effective sample size, by the rules of a
    complete model's score interval (`intervals`).

    ``estimate ± t · se`` fails at the bounds, where a model near the ceiling (or near zero) lives:
    when every answered family agrees the standard error is 0 and the interval a point, though
    families like these may hold a failure; just inside a bound it is symmetric where the truth is
    not. Wilson's interval does not collapse there (Dean and Pagano 2015 compare it with the other
    intervals for proportions from complex samples). Its sample size is Kish's effective one,
    n_eff = p(1 − p) / se², which carries the design and the prediction, at most ``capacity`` (the
    tasks behind the cohort's families: a variance measured near a bound can claim more evidence
    than there is, and no prediction tells more than answering every family would). Where se is 0 (or
    the estimate on a bound) nothing measures the design effect and n_eff is ``families``, the Kish
    count of the answered families, a simple random sample's; and the lower end is never above a
    perfect rate's on that n_eff (the upper end never below a zero rate's), so that one failure off a
    bound never gives a surer interval than the bound itself. The quantile is Student's t at the
    design's ``df``, with Brown, Cai and DasGupta's Poisson ends for a few successes or failures
    (`intervals.wilson`). Written out here because scipy's Wilson interval (``binomtest(k,
    n).proportion_ci``) takes whole counts, and n_eff is not one; where it is, the two agree
    (tests/stats/test_subsample.py).

    Twelve of twelve answered families right: n_eff = 12, and the lower end is 1 / (1 + t²/12) with
    t = t(11) at 97.5%, 2.201, so 0.712:

    >>> [round(x, 3) for x in score_interval(1.0, 0.0, 11, families=12, conf_level=0.95)]
    [0.712, 1.0]
    """
    if not np.isfinite(estimate):
        return np.nan, np.nan
    if not families > 0:
        return np.nan, np.nan
    p = min(max(estimate, 0.0), 1.0)
    measured = np.isfinite(se) and se > NEGLIGIBLE and NEGLIGIBLE < p < 1 - NEGLIGIBLE
    n_eff = min(p * (1 - p) / se**2, capacity) if measured else families
    quantile = stats.t.ppf(0.5 + conf_level / 2, max(df, 1))
    low, high = intervals.wilson(np.array([p]), np.array([n_eff]), quantile, conf_level)
    # one rule on both sides of a bound, as for complete models: a rate just inside one is no surer than
    # the bound itself on the same answered families (the lower end at most a perfect rate's, the upper
    # end at least a zero rate's); inside the range the measured n_eff stands, the prediction's gain included
    at_one, _ = intervals.wilson(np.array([1.0]), np.array([families]), quantile, conf_level)
    _, at_zero = intervals.wilson(np.array([0.0]), np.array([families]), quantile, conf_level)
    return float(min(low[0], at_one[0])), float(max(high[0], at_zero[0]))


def difference_interval(
    estimate: float, first: tuple[float, float, float], second: tuple[float, float, float], correlation: float
) -> tuple[float, float]:
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
    low, high = intervals.mover(
        np.array([estimate]),
        tuple(np.array([x]) for x in first),
        tuple(np.array([x]) for x in second),
        np.array([correlation]),
    )
    return float(low[0]), float(high[0])


#: Metrics whose b_f does not depend on the answers (1, "has a cf task", the number of cf
#: tasks): known for every cohort family, so the estimate divides by the true Σ b.
KNOWN_DENOMINATORS = frozenset(
    {"acc_p0", "acc_source", "acc_shuffled", "reliance_margin", "cf_accuracy", "pgr", "random_baseline"}
)


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


def estimate_model(
    outcomes: pl.DataFrame,
    plan: pl.DataFrame | None,
    *,
    model: str,
    complete: list[str],
    channels: list[str],
    metrics: tuple[str, ...] = METRICS,
    conf_level: float = 0.95,
    seed: int = 0,
    draws: int = 0,
) -> pl.DataFrame:
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
        families = sorted(
            outcomes.filter((pl.col("channel") == channel) & pl.col("model").is_in(complete))["family_id"]
            .unique()
            .to_list()
        )
        data = channel_data(outcomes, channel, [*complete, model], needed, families)
        stratum = strata_of(plan, families)
        pooled = pooled_difficulty(outcomes, complete, families)
        with np.errstate(invalid="ignore"):
            pool = np.nan_to_num(np.nanmean(pooled, axis=1), nan=0.5)
        tasks = _family_trials(outcomes, channel, families, needed)
        fitted = {}
        for metric in needed:
            a_all, b_all = data.a[metric], data.b[metric]
            a, b = a_all[:, -1], b_all[:, -1]
            sampled = np.isfinite(a) & np.isfinite(b)
            known = metric in KNOWN_DENOMINATORS
            b_use = b_all[:, 0] if known else np.where(sampled, b, 0.0)
            regress = regression_pays(a_all[:, :-1], b_all[:, :-1], pooled, int(sampled.sum()), known)
            args = (
                np.where(sampled, a, 0.0),
                b_use,
                sampled,
                stratum,
                np.nanmean(a_all[:, :-1], axis=1),
                None if known else np.nanmean(b_all[:, :-1], axis=1),
                pool,
                regress,
            )
            result = aipw_ratio(*args) if sampled.sum() >= 2 else Estimate(np.nan, np.nan, 0, int(sampled.sum()))
            se, undefined = result.se, 0
            if draws and np.isfinite(result.estimate):
                se, undefined = bootstrap_se(
                    args, draws=draws, rng=resample.rng_for(seed, f"{model}:{channel}:{metric}")
                )
            # the answered families that enter the rate (b > 0), their Kish count and the cohort's tasks
            # (for CFR and its kin, only initially right sources count: a chance-level model has few, and
            # its degrees of freedom are theirs, not every answered family's)
            counted = sampled & (b_use > 0)
            w, _ = _design_weights(stratum, sampled)
            ends = (
                (np.nan, np.nan)
                if metric in DIFFERENCES
                else score_interval(
                    result.estimate,
                    se,
                    min(result.df, int(counted.sum()) - 1),
                    families=float(intervals.kish_families(b_use[counted][:, None])[0]),
                    capacity=cohort_capacity(b_use, tasks[metric], w, counted),
                    conf_level=conf_level,
                )
            )
            fitted[metric] = (result, se, undefined, ends)
        for metric in metrics:
            result, se, undefined, (low, high) = fitted[metric]
            if metric in DIFFERENCES:
                parts = [fitted[part] for part in DIFFERENCES[metric]]
                (first, se1, _, ends1), (second, se2, _, ends2) = parts
                # from var(RM) = var₁ + var₂ − 2 cov; no spread on a side: taken as uncorrelated
                correlation = (se1**2 + se2**2 - se**2) / (2 * se1 * se2) if min(se1, se2) > NEGLIGIBLE else 0.0
                low, high = (
                    difference_interval(
                        result.estimate, (first.estimate, *ends1), (second.estimate, *ends2), correlation
                    )
                    if np.isfinite(result.estimate)
                    else (np.nan, np.nan)
                )
            method = METHOD if result.predicted else METHOD_WITHOUT_PREDICTION
            booted = bool(draws) and np.isfinite(result.estimate)
            rows.append(
                (
                    model,
                    channel,
                    metric,
                    result.estimate,
                    low,
                    high,
                    conf_level,
                    result.n,
                    f"{method}_bootstrap" if booted else method,
                    draws if booted else 0,
                    undefined,
                    seed,
                    "wrong",
                    None,
                )
            )
    frame = pl.DataFrame(rows, schema=RESULT_SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    frame = frame.drop("baseline").join(baselines, on=["channel", "metric"], how="left", maintain_order="left")
    return units.percent_columns(frame.select(list(RESULT_SCHEMA)), ("estimate", "conf_low", "conf_high", "baseline"))


def _family_trials(outcomes: pl.DataFrame, channel: str, families: list[str], metrics: tuple[str, ...]) -> dict:
    """Per metric, the independent tasks each family's share averages over (`metrics.metric_trials`), in
    ``families``' order; None where that is the family's b."""
    design = (
        outcomes.filter(pl.col("channel") == channel)
        .group_by("family_id")
        .agg(pl.col("cf_tasks").max())
        .with_columns(pl.col("family_id").cast(pl.String))
    )
    order = pl.DataFrame({"family_id": families}, schema={"family_id": pl.String})
    design = order.join(design, on="family_id", how="left", maintain_order="left")
    out = {}
    for metric in metrics:
        expression = metric_trials(metric)
        out[metric] = None if expression is None else design.select(expression).to_series().to_numpy()
    return out


def cohort_capacity(b: np.ndarray, trials: np.ndarray | None, w: np.ndarray, counted: np.ndarray) -> float:
    """The most effective trials a complete model's rate could hold on this cohort (`intervals.trial_capacity`,
    ``(Σ b)² / Σ b²/m``), each sum over the answered families as the design weighs them.

    Three answered families of b = 1 and m = 3 tasks each, weights 2: (2 · 3)² / (2 · 3 / 3) = 18:

    >>> cohort_capacity(np.ones(3), np.full(3, 3.0), np.full(3, 2.0), np.ones(3, dtype=bool))
    18.0
    """
    m = b if trials is None else trials
    use = counted & (m > 0)
    spread = (w * b**2 / np.where(m > 0, m, 1.0))[use].sum()
    return float((w * b)[use].sum() ** 2 / spread) if spread > 0 else np.inf


#: |z| past this says the answered families are not the draw the design describes. Over 200 plans
#: of 15% on each of bench_adaptive's data sets, z had a spread of 0.95-1.12 and passed 3 in 0-1.5%
#: of them (a mean of a skewed difficulty over some 45 families is not quite normal), 4 in 0-0.5%;
#: the 20 easiest of 60 families give z = 15.6 (tests/stats/test_subsample.py).
SELECTION_Z = 4.0


def selection_check(
    outcomes: pl.DataFrame, plan: pl.DataFrame | None, *, model: str, complete: list[str], channels: list[str]
) -> tuple[float, float, float] | None:
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
    result = aipw_ratio(
        np.where(sampled, difficulty, 0.0),
        np.ones(len(members)),
        sampled,
        strata_of(plan, members),
        zeros,
        None,
        zeros,
        regress=False,
    )
    if not result.se > NEGLIGIBLE:
        return None
    cohort = float(difficulty.mean())
    return result.estimate, cohort, (result.estimate - cohort) / result.se
