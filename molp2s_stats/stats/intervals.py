"""Intervals for ratios of family sums that keep their coverage over the whole range, 0% and 100% included.

Every metric is ``R = Σ_f a_f / Σ_f b_f`` over the cohort's families. The family bootstrap's
percentile interval covers well in the middle of the range, but it cannot leave the range of the
sample: a model right on every family gets [100, 100], though its rate over new families may be
98%. BCa and bootstrap-t do not help there (every replicate is 100%, so is every jackknife value
and every replicate's standard error). A score interval does: Wilson's interval on the design's
effective sample size (Kish's n_eff = R(1 − R) / Var(R), Var from the linearised cluster variance
of a ratio estimator) is never a point unless the sample is infinite, and near a bound it is
asymmetric the way the truth is. Where the sample holds no spread to measure a design effect
with (every family right), n_eff is Kish's count of families ``(Σ b)² / Σ b²``: each family's share
a_f / b_f lies in [0, 1], so its variance is at most R(1 − R) and that n_eff is the smallest the
design allows (the most honest guess, never an optimistic one). Nor can n_eff exceed the
independent tasks behind the families' shares (`trial_capacity`): near a bound a measured
variance can claim more than the sample holds.

Which interval a statistic gets is decided per column from the sample (``method`` says which):

- ``family_bootstrap_percentile`` when the rate's minority, ``n_eff · min(R, 1 − R)``, counts at
  least 1.5 × :data:`MIN_MINORITY` (15) families' worth (the normal regime where the bootstrap is right);
- ``family_score_wilson`` at half of it (5) or less (at or near 0% or 100%);
- ``family_percentile_score_blend`` in between: each end the two intervals' ends weighted linearly
  by the minority (`percentile_weight`), so that an interval never jumps from one rule to the other.

A difference of two rates on the same denominators (RM, a paired input comparison, a model
pair's net) is split into its discordant parts, ``d = gain − loss``, gain and loss each a rate in
[0, 1] (the tasks right under one side only). Where the two parts' minorities together count at
least 15 families' worth (as McNemar's test counts discordant pairs) the difference keeps its
percentile interval; at 5 or fewer it is the MOVER interval (Zou and Donner 2008; Newcombe 1998
for paired rates) built from the two parts' intervals and their correlation,
``family_mover_wilson``; between, the two weighted (``family_percentile_mover_blend``). Working on the discordant parts matters at the bound of a difference:
two models that agree on every task have d = 0 with no spread at all, yet a new family could
split them; each part's score interval says by how much.

scipy's Wilson interval (``binomtest(k, n).proportion_ci``) takes whole counts, and n_eff is not
one, so the formula is written out here; tests/stats/test_intervals.py checks it against scipy where
n_eff is whole.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..errors import UsageError

PERCENTILE = "family_bootstrap_percentile"
SCORE = "family_score_wilson"
MOVER = "family_mover_wilson"
FIXED = "fixed_by_design"  # a quantity the design fixes (an input compared with itself): a point, rightly
# between the two: the percentile interval's ends and the score (or MOVER) interval's, weighted by the minority
SCORE_BLEND = "family_percentile_score_blend"
MOVER_BLEND = "family_percentile_mover_blend"
METHODS = (PERCENTILE, SCORE, MOVER, FIXED, SCORE_BLEND, MOVER_BLEND)

#: The minority, in effective families, at the middle of the passage from the score interval to the
#: percentile one. At 10 (the usual "ten events each way" rule for a normal approximation to a
#: binomial) the percentile interval's coverage is back at its mid-range value; below it, it falls off
#: (benchmarks/bench_intervals.py prints both sides). The passage runs from half of it (5: the score
#: interval alone below) to one and a half times it (15: the percentile interval alone above), the ends
#: weighted linearly in between, so that one more failure never makes an interval jump from one rule
#: to the other (a hard switch at 10 moved an end by up to 1.4 pp at 136 families).
MIN_MINORITY = 10.0

#: A variance (or a distance from a bound) this small is rounding, not a spread.
NEGLIGIBLE = 1e-12

#: Which interval a rate or difference gets: ``auto`` (the package's rule: the percentile interval
#: in the middle of the range, the score or MOVER interval near a bound, weighted in between),
#: ``percentile`` (the family bootstrap's percentile interval everywhere, as the paper computed its
#: tables; a point where no replicate moves), ``score`` (the score or MOVER interval everywhere).
RULES = ("auto", "percentile", "score")


def check_rule(rule: str) -> str:
    """``rule`` if it is one of `RULES`, else a UsageError naming them."""
    if rule not in RULES:
        raise UsageError(f"the interval rule must be one of {', '.join(RULES)}, got {rule!r}")
    return rule


def percentile_weight(minority: np.ndarray, threshold: float = MIN_MINORITY) -> np.ndarray:
    """The weight of the percentile interval's ends (the rest the score interval's) for a minority of
    effective families: 0 up to ``threshold`` / 2, 1 from 1.5 × ``threshold``, linear between.
    (Rounding: a minority within 1e-9 of a knot counts as on it.)

    >>> percentile_weight(np.array([0.0, 5.0, 7.5, 10.0, 15.0, 40.0])).tolist()
    [0.0, 0.0, 0.25, 0.5, 1.0, 1.0]
    """
    if not np.isfinite(threshold):
        return np.zeros(np.shape(minority))
    weight = (np.asarray(minority, dtype=float) - threshold / 2) / threshold
    return np.clip(np.where(np.abs(weight - np.rint(weight)) < 1e-9, np.rint(weight), weight), 0.0, 1.0)


def _blend(rule, minority, percentile_ends, score_ends, threshold, methods):
    """(low, high, method) by ``rule``: the percentile ends, the score ends, or (``auto``) the two weighted
    by `percentile_weight` (none for a percentile interval that is a point: the bootstrap did not move)."""
    (low_pct, high_pct), (low_score, high_score) = percentile_ends, score_ends
    percentile, score, blend = methods
    if check_rule(rule) == "percentile":
        weight = np.ones(np.shape(minority))
    elif rule == "score":
        weight = np.zeros(np.shape(minority))
    else:
        weight = np.where(high_pct > low_pct, percentile_weight(minority, threshold), 0.0)
    with np.errstate(invalid="ignore"):  # 0 × NaN where one side has no interval: that side is not used
        mixed_low = weight * low_pct + (1 - weight) * low_score
        mixed_high = weight * high_pct + (1 - weight) * high_score
    pure_percentile, pure_score = weight >= 1, weight <= 0
    return (
        np.where(pure_percentile, low_pct, np.where(pure_score, low_score, mixed_low)),
        np.where(pure_percentile, high_pct, np.where(pure_score, high_score, mixed_high)),
        np.where(pure_percentile, percentile, np.where(pure_score, score, blend)).astype(object),
    )


def linearized_covariance(a1: np.ndarray, b1: np.ndarray, a2: np.ndarray, b2: np.ndarray) -> np.ndarray:
    """Covariance of two ratio estimators ``Σ a1 / Σ b1`` and ``Σ a2 / Σ b2`` over resampled families, per
    column: ``F / (F − 1) · Σ_f e1_f e2_f`` with ``e_f = (a_f − R b_f) / Σ b`` (Taylor linearisation; the
    cluster-robust variance when the two are the same). Shapes (families, columns); NaN where a
    denominator sums to 0 or F < 2.

    Two families with shares 1 and 0 of one task each: R = ½, e = ±¼, Var = 2 · (1/16 + 1/16) = ¼:

    >>> float(linearized_covariance(*[np.array([[1.0], [0.0]]), np.ones((2, 1))] * 2)[0])
    0.25
    """
    families = a1.shape[0]
    out = np.full(a1.shape[1], np.nan)
    t1, t2 = b1.sum(axis=0), b2.sum(axis=0)
    ok = (t1 > 0) & (t2 > 0) & (families > 1)
    if not ok.any():
        return out
    e1 = (a1[:, ok] - a1[:, ok].sum(axis=0) / t1[ok] * b1[:, ok]) / t1[ok]
    e2 = (a2[:, ok] - a2[:, ok].sum(axis=0) / t2[ok] * b2[:, ok]) / t2[ok]
    out[ok] = families / (families - 1) * (e1 * e2).sum(axis=0)
    return out


def kish_families(b: np.ndarray) -> np.ndarray:
    """Kish's effective number of families for weights b, ``(Σ b)² / Σ b²``, per column (0 where Σ b = 0).

    >>> kish_families(np.array([[1.0], [1.0], [2.0]])).tolist()
    [2.6666666666666665]
    """
    total, squares = b.sum(axis=0), (b**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(squares > 0, total**2 / np.where(squares > 0, squares, 1.0), 0.0)


def trial_capacity(b: np.ndarray, trials: np.ndarray | None = None) -> np.ndarray:
    """The most effective trials a ratio ``Σ a / Σ b`` can hold, per column: ``(Σ b)² / Σ (b² / m)``, with
    m_f the independent tasks family f's share averages over (its variance is then at least
    R(1 − R) / m_f when the tasks of a family are not negatively correlated). ``trials`` gives m; by
    default m = b, which makes it ``Σ b``: a task is one trial, however many samples it had.

    One family of 1 task and one of 3: with b = (1, 1) and m = (1, 3), (1 + 1)² / (1 + 1/3) = 3:

    >>> trial_capacity(np.ones((2, 1)), np.array([[1.0], [3.0]])).tolist()
    [3.0]
    """
    m = b if trials is None else trials
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where((b > 0) & (m > 0), b**2 / np.where(m > 0, m, 1.0), 0.0).sum(axis=0)
        return np.where(spread > 0, b.sum(axis=0) ** 2 / np.where(spread > 0, spread, 1.0), 0.0)


def effective_size(
    estimate: np.ndarray, variance: np.ndarray, b: np.ndarray, trials: np.ndarray | None = None
) -> np.ndarray:
    """Kish's effective sample size ``R(1 − R) / Var(R)`` per column, at most :func:`trial_capacity` (tasks,
    never the samples averaged within a task).

    The cap: a variance measured near a bound can claim far more evidence than the sample holds.
    Three samples per task at 99.5% show it: the sample's few failures are single samples scattered
    over families, so the measured variance speaks for ~3 trials a task, while the population's
    failures come from the rare family that fails every time (benchmarks/bench_intervals.py, its
    ``mix`` simulator: 65–77% coverage uncapped, 93.5% and up capped). Where R sits on a bound or
    the variance is negligible nothing measures the design effect, and the effective number of
    families (:func:`kish_families`) stands in: a family's share lies in [0, 1], so its variance is
    at most R(1 − R), and no smaller n_eff is possible.
    """
    p = np.clip(estimate, 0.0, 1.0)
    measured = np.isfinite(variance) & (variance > NEGLIGIBLE) & (p > NEGLIGIBLE) & (p < 1 - NEGLIGIBLE)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            measured,
            np.minimum(p * (1 - p) / np.where(measured, variance, 1.0), trial_capacity(b, trials)),
            kish_families(b),
        )


# The χ² and Student's t quantiles as scipy.stats computes them inside its ppf (scipy 1.17,
# ``chi2_gen._ppf`` and ``t_gen._ppf``), called directly: the frozen-distribution machinery
# around them (argument checks and broadcasting, ~0.1 ms a call) was a tenth of a report page's
# time, thousands of calls on arrays of a few values. Equal to ``stats.chi2.ppf`` and
# ``stats.t.ppf`` wherever the probability is in (0, 1) and the degrees of freedom positive, all
# these ever pass (tests/stats/test_intervals.py).
def chi2_quantile(probability, dof):
    return 2 * special.gammaincinv(np.asarray(dof) / 2, probability)


def t_quantile(probability, dof):
    return special.stdtrit(dof, probability)


def wilson(
    estimate: np.ndarray, n_eff: np.ndarray, quantile: float | np.ndarray, conf_level: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of a rate with ``n_eff`` effective trials (need not be whole), clipped to [0, 1].

    With ``conf_level``, Brown, Cai and DasGupta's (2001) modification for a few successes (or
    failures): where the effective count x = R · n_eff is positive but at most 2 (3 when n_eff > 50),
    the lower end is at most the Poisson bound ``χ²_{α/2}(2x) / (2 n_eff)``, and the upper end
    mirrored. Wilson's own end is too close there (1 of 30 puts it at 0.6%, above a truth of 0.5%).

    136 of 136 right, z = 1.96: the lower end is 136 / (136 + 1.96²) = 0.9725, the upper 1:

    >>> [round(float(x[0]), 4) for x in wilson(np.array([1.0]), np.array([136.0]), 1.959964)]
    [0.9725, 1.0]
    """
    p = np.clip(np.asarray(estimate, dtype=float), 0.0, 1.0)
    n = np.asarray(n_eff, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = quantile**2 / n
        centre = (p + k / 2) / (1 + k)
        half = quantile / (1 + k) * np.sqrt(p * (1 - p) / n + k / (4 * n))
        # at a bound the end is the bound itself (centre − half rounds to 7e-18 there)
        low = np.where(p <= NEGLIGIBLE, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(p >= 1 - NEGLIGIBLE, 1.0, np.clip(centre + half, 0.0, 1.0))
        if conf_level is not None:
            few = np.where(n > 50, 3.0, 2.0)
            alpha = 1 - conf_level
            for count, end, sign in ((p * n, low, 1), ((1 - p) * n, high, -1)):
                small = (count > NEGLIGIBLE) & (count <= few)
                poisson = chi2_quantile(alpha / 2, 2 * np.where(small, count, 1.0)) / (2 * n)
                end[small] = (np.minimum(end, poisson) if sign == 1 else np.maximum(end, 1 - poisson))[small]
    bad = ~(n > 0) | ~np.isfinite(p)
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def percentile_interval(replicates: np.ndarray, conf_level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval per column, leaving out undefined (NaN) replicates.

    Returns (low, high, undefined_count); low and high are NaN for a column with no
    defined replicate.

    >>> low, high, undefined = percentile_interval(np.array([[1.0], [2.0], [3.0], [np.nan]]), 0.5)
    >>> float(low[0]), float(high[0]), int(undefined[0])
    (1.5, 2.5, 1)
    """
    alpha = (1.0 - conf_level) / 2.0
    undefined = np.isnan(replicates).sum(axis=0)
    low = np.full(replicates.shape[1], np.nan)
    high = np.full(replicates.shape[1], np.nan)
    complete, partly = undefined == 0, (undefined > 0) & (undefined < replicates.shape[0])
    # np.quantile where no replicate is undefined: nanquantile is many times slower on wide matrices
    if complete.any():
        low[complete], high[complete] = np.quantile(replicates[:, complete], [alpha, 1.0 - alpha], axis=0)
    if partly.any():
        low[partly], high[partly] = np.nanquantile(replicates[:, partly], [alpha, 1.0 - alpha], axis=0)
    return low, high, undefined


def _quantile(b: np.ndarray, conf_level: float) -> np.ndarray:
    # Student's t on the effective families' degrees of freedom, per column: the variance is estimated
    # from that many clusters (a CFR with three initially right sources rests on about three)
    return t_quantile(0.5 + conf_level / 2, np.maximum(kish_families(b) - 1, 1.0))


def _score(
    a: np.ndarray, b: np.ndarray, conf_level: float, trials: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, variance, minority, low, high) of each rate ``Σ a / Σ b``, the interval Wilson's on the
    effective sample size; the minority, ``n_eff · min(R, 1 − R)``, is the evidence the normal regime needs."""
    total = b.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(total > 0, a.sum(axis=0) / np.where(total > 0, total, 1.0), np.nan)
    variance = linearized_covariance(a, b, a, b)
    n_eff = effective_size(estimate, variance, b, trials)
    quantile = _quantile(b, conf_level)
    low, high = wilson(estimate, n_eff, quantile, conf_level)
    # One rule on both sides of a bound: a rate just inside one is no surer than the bound itself on
    # the same families. At 100% nothing measures the design effect and n_eff is the Kish families;
    # just inside, a failure or two measure it as if every task were independent (n_eff up to the
    # tasks), which put a near-perfect model's lower end above a perfect one's (cf accuracy, 100
    # families × 3 tasks: 299/300 at 98.1%, 300/300 at 96.2%). So the lower end is at most the
    # perfect rate's, and the upper end at least the zero rate's: ends move with the successes.
    families = kish_families(b)
    at_one, _ = wilson(np.ones_like(families), families, quantile, conf_level)
    _, at_zero = wilson(np.zeros_like(families), families, quantile, conf_level)
    low = np.where(np.isfinite(at_one), np.fmin(low, at_one), low)
    high = np.where(np.isfinite(at_zero), np.fmax(high, at_zero), high)
    return estimate, variance, n_eff * np.minimum(estimate, 1 - estimate), low, high


def near_ceiling(
    a: np.ndarray, b: np.ndarray, *, min_minority: float = MIN_MINORITY, trials: np.ndarray | None = None
) -> np.ndarray:
    """Per column: the rate ``Σ a / Σ b`` is at 100% or so close that its failures count fewer than
    ``min_minority`` effective families (where its interval is a score interval, not the bootstrap's).

    >>> near_ceiling(np.array([[1.0, 1.0], [1.0, 0.0]] * 20), np.ones((40, 2))).tolist()
    [True, False]
    """
    estimate, _, minority, _, _ = _score(a, b, 0.95, trials)
    return (estimate > 0.5) & (minority < min_minority)


def rate_intervals(
    a: np.ndarray,
    b: np.ndarray,
    replicates: np.ndarray,
    conf_level: float,
    *,
    min_minority: float = MIN_MINORITY,
    trials: np.ndarray | None = None,
    rule: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval of each rate ``Σ a / Σ b`` (columns of a and b, shape (families, columns)), given its
    bootstrap ``replicates`` (draws, columns; NaN where undefined): the percentile interval in the
    normal regime, Wilson's score interval on the effective sample size near a bound, the two ends
    weighted by `percentile_weight` in between.

    ``trials``: the independent tasks each family's share averages over (`trial_capacity`); default b.
    ``rule`` (`RULES`): ``auto`` as above, or the percentile or the score interval everywhere.
    Returns (low, high, method) per column, as proportions; NaN where the rate is undefined.

    Ten families, every one right: the percentile interval would be [1, 1]; the score interval on
    ten families with t(9) = 2.2622 has lower end 10 / (10 + 2.2622²) = 0.6615:

    >>> low, high, method = rate_intervals(np.ones((10, 1)), np.ones((10, 1)), np.ones((50, 1)), 0.95)
    >>> round(float(low[0]), 4), float(high[0]), str(method[0])
    (0.6615, 1.0, 'family_score_wilson')
    """
    estimate, _, minority, low_score, high_score = _score(a, b, conf_level, trials)
    low_pct, high_pct, _ = percentile_interval(replicates, conf_level)
    return _blend(
        rule, minority, (low_pct, high_pct), (low_score, high_score), min_minority, (PERCENTILE, SCORE, SCORE_BLEND)
    )


def mover(
    estimate: np.ndarray,
    first: tuple[np.ndarray, np.ndarray, np.ndarray],
    second: tuple[np.ndarray, np.ndarray, np.ndarray],
    correlation: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The MOVER interval of ``first − second`` (Zou and Donner 2008) from each rate's (estimate, low, high)
    and the correlation of the two estimates (0 where unknown). Each side takes the distance to the
    bound that moves the difference that way, so a rate near its floor adds little downwards.

    Both rates 0 with intervals [0, 0.1], uncorrelated: the difference is 0, uncertain by 0.1 each way:

    >>> z = np.zeros(1); u = np.full(1, 0.1)
    >>> [round(float(x[0]), 3) for x in mover(z, (z, z, u), (z, z, u), z)]
    [-0.1, 0.1]
    """
    (p1, l1, u1), (p2, l2, u2) = first, second
    r = np.clip(np.nan_to_num(correlation, nan=0.0), -1.0, 1.0)
    down = np.sqrt(np.maximum(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2)))
    up = np.sqrt(np.maximum(0.0, (u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2)))
    return np.maximum(-1.0, estimate - down), np.minimum(1.0, estimate + up)


def difference_intervals(
    gain: np.ndarray,
    loss: np.ndarray,
    b: np.ndarray,
    replicates: np.ndarray,
    conf_level: float,
    *,
    min_minority: float = MIN_MINORITY,
    rule: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval of each difference ``Σ (gain − loss) / Σ b`` from its two discordant rates, given the
    bootstrap ``replicates`` of the difference. The percentile interval stays while the discordant
    minority (gain's and loss's together, as McNemar's test counts them) holds 1.5 × ``min_minority``
    effective families; at half of it or less, MOVER on the two parts' score intervals; between, the
    two weighted by `percentile_weight`.

    ``rule`` (`RULES`): ``auto`` as above, or the percentile or the MOVER interval everywhere.
    Returns (low, high, method) per column, as proportions.

    Two inputs that agree on all 20 families: d = 0, and the percentile interval would be a point.
    Each part is 0 of 20, whose score interval is [0, t²/(20 + t²)] = [0, 0.180] with t(19) = 2.093;
    their correlation is unknown (taken as 0), so d lies in ±0.180:

    >>> zero = np.zeros((20, 1))
    >>> low, high, method = difference_intervals(zero, zero, np.ones((20, 1)), np.zeros((40, 1)), 0.95)
    >>> round(float(low[0]), 3), round(float(high[0]), 3), str(method[0])
    (-0.18, 0.18, 'family_mover_wilson')
    """
    p_gain, v_gain, m_gain, l_gain, u_gain = _score(gain, b, conf_level)
    p_loss, v_loss, m_loss, l_loss, u_loss = _score(loss, b, conf_level)
    covariance = linearized_covariance(gain, b, loss, b)
    # gain and loss are exclusive outcomes of one task, so at most 0 correlated there; a positive estimate
    # comes from splitting shares into expected counts (x = y = ½ in every family gives gain = loss = ¼), and
    # would shrink the interval towards a point: it is not trusted
    with np.errstate(invalid="ignore", divide="ignore"):
        measured = (v_gain > NEGLIGIBLE) & (v_loss > NEGLIGIBLE)
        correlation = np.minimum(
            np.where(measured, covariance / np.sqrt(np.where(measured, v_gain * v_loss, 1.0)), 0.0), 0.0
        )
    estimate = p_gain - p_loss
    low_m, high_m = mover(estimate, (p_gain, l_gain, u_gain), (p_loss, l_loss, u_loss), correlation)
    low_pct, high_pct, _ = percentile_interval(replicates, conf_level)
    return _blend(
        rule, m_gain + m_loss, (low_pct, high_pct), (low_m, high_m), min_minority, (PERCENTILE, MOVER, MOVER_BLEND)
    )
