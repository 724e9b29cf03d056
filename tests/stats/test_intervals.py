"""Intervals near 0% and 100%: golden values a reader can check by hand, scipy's Wilson interval as the
reference, and the invariants every interval keeps (hypothesis). Coverage and width are measured in
benchmarks/bench_intervals.py, not here."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from molp2s_stats.stats import compare, intervals, metrics, resample

# t(135) at 97.5%, the quantile of 136 families (135 degrees of freedom)
T135 = stats.t.ppf(0.975, 135)


def column(values) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(-1, 1)


def test_all_right_on_136_families_gets_the_score_interval():
    # 136 of 136, one task a family: n_eff = 136 families (no spread to measure a design effect with),
    # t(135) = 1.977692, lower end 136 / (136 + 1.977692²) = 136 / 139.91127 = 0.972045; upper 1.
    assert T135 == pytest.approx(1.97769, abs=1e-5)
    ones = np.ones((136, 1))
    low, high, undefined, method, draws = resample.bootstrap_ratio(
        ones, ones, draws=200, seed=1, key="k", conf_level=0.95
    )
    assert low[0] == pytest.approx(0.972045, abs=1e-6) and high[0] == 1.0
    assert method[0] == intervals.SCORE and draws == 200 and undefined[0] == 0


def test_a_clustered_rate_uses_its_design_effect():
    # 10 families of 2 tasks that always agree: 4 families right on both, 6 wrong on both. R = 8/20 = 0.4.
    # Linearised variance: 10/9 · Σ ((a_f − 0.4 · 2) / 20)² = 10/9 · (4 · 1.2² + 6 · 0.8²) / 400 = 0.026667,
    # so n_eff = 0.4 · 0.6 / 0.026667 = 9 (design effect 20/9 over the 20 tasks); minority 9 · 0.4 = 3.6 < 10,
    # so the score interval, with t(9) = 2.26216 (10 effective families):
    # k = 2.26216² / 9 = 0.568604, centre = (0.4 + k/2) / (1 + k) = 0.436255,
    # half = 2.26216 / (1 + k) · √(0.24/9 + k/36) = 0.29717  →  [0.13908, 0.73342].
    a, b = column([2] * 4 + [0] * 6), column([2] * 10)
    assert intervals.linearized_covariance(a, b, a, b)[0] == pytest.approx(0.0266667, abs=1e-6)
    variance = intervals.linearized_covariance(a, b, a, b)
    assert intervals.effective_size(np.array([0.4]), variance, b)[0] == pytest.approx(9.0)
    low, high, method = intervals.rate_intervals(a, b, np.full((100, 1), 0.4), 0.95)
    assert (low[0], high[0]) == pytest.approx((0.13908, 0.73342), abs=2e-5)
    assert method[0] == intervals.SCORE


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (1, 136), (68, 136), (136, 136), (5, 389)])
def test_wilson_matches_scipy_for_whole_counts(k, n):
    """Reference: scipy's Wilson interval (binomtest(k, n).proportion_ci), same z, whole counts."""
    reference = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    low, high = intervals.wilson(np.array([k / n]), np.array([float(n)]), stats.norm.ppf(0.975))
    assert (low[0], high[0]) == pytest.approx((reference.low, reference.high), abs=1e-12)


def test_one_success_in_thirty_takes_the_poisson_lower_end():
    # 1 of 30 families: n_eff = 29 (30/29 · Σ (y − p)² / 30² = p(1 − p)/29), so x = 29/30 = 0.967 successes;
    # Wilson's lower end would be about 0.006, above a truth of 0.5%; Brown, Cai and DasGupta's
    # modification takes χ²_0.025(2x) / (2 · 29) instead.
    a = column([1] + [0] * 29)
    low, high, method = intervals.rate_intervals(a, np.ones_like(a), np.zeros((50, 1)), 0.95)
    x = 29 / 30
    assert low[0] == pytest.approx(stats.chi2.ppf(0.025, 2 * x) / 58)
    assert low[0] < 0.005 < 1 / 30 < high[0]
    t29 = stats.t.ppf(0.975, 29)
    plain, _ = intervals.wilson(np.array([1 / 30]), np.array([29.0]), t29)
    assert plain[0] > 0.005  # the unmodified end would miss a 0.5% truth


def test_a_difference_at_zero_and_at_one():
    # Both rates 0 of 136 (or both 136 of 136): no discordant family, d = 0. Each part's score interval is
    # [0, t²/(136 + t²)] = [0, 3.91126 / 139.91126] = [0, 0.027955], their correlation unknown (taken as 0):
    # d in ±0.027955 (MOVER adds the two parts' distances in quadrature only when both move it; here one each way).
    zero = np.zeros((136, 1))
    for label in ("0 of n", "n of n"):
        low, high, _, method, _ = resample.bootstrap_difference(
            zero, zero, np.ones((136, 1)), draws=100, seed=0, key=label, conf_level=0.95
        )
        assert (low[0], high[0]) == pytest.approx((-0.027955, 0.027955), abs=1e-6)
        assert method[0] == intervals.MOVER
    # Every family a gain (1 − 0): d = 1, lower end 1 − √((1 − 0.972045)² + 0.027955²) = 1 − 0.039535.
    low, high, _, _, _ = resample.bootstrap_difference(
        np.ones((136, 1)), zero, np.ones((136, 1)), draws=100, seed=0, key="all", conf_level=0.95
    )
    assert (low[0], high[0]) == pytest.approx((0.960465, 1.0), abs=1e-6)


def test_several_levels_read_one_set_of_replicates():
    """The verdict's two intervals (at 1 − α and, for equivalence, at 1 − 2α) come from one resample: each
    equals the interval computed alone at its level from the same seed and key."""
    rng = np.random.default_rng(3)
    gain, loss = rng.binomial(1, 0.2, (60, 3)).astype(float), rng.binomial(1, 0.1, (60, 3)).astype(float)
    tasks = np.ones((60, 3))
    found, undefined, used = resample.bootstrap_difference_levels(
        gain, loss, tasks, levels=(0.95, 0.90), draws=300, seed=5, key="k"
    )
    for (low, high, method), level in zip(found, (0.95, 0.90)):
        alone = resample.bootstrap_difference(gain, loss, tasks, draws=300, seed=5, key="k", conf_level=level)
        np.testing.assert_array_equal(low, alone[0])
        np.testing.assert_array_equal(high, alone[1])
        assert list(method) == list(alone[3])
    assert used == 300 and undefined.tolist() == [0, 0, 0]
    assert (found[1][0] >= found[0][0]).all() and (found[1][1] <= found[0][1]).all()  # 90% inside 95%


def test_a_ceiling_model_in_the_metrics_table():
    """A model right on every task of 40 families: its accuracy is 100 with a score interval that leaves
    room below, and its RM (100 − its shuffled accuracy) is not a point either."""
    n = 40
    outcomes = pl.DataFrame(
        {
            "model": ["ceiling"] * n,
            "channel": ["ir"] * n,
            "family_id": [f"F{i:02d}" for i in range(n)],
            "y_p0": [1.0] * n,
            "y_source": [1.0] * n,
            "y_shuffled": [1.0] * n,
            "cf_tasks": [2] * n,
            "cf_correct": [2.0] * n,
            "cf_flip": [1.0] * n,
            "cf_persist": [0.0] * n,
            "cf_other": [0.0] * n,
            "n_candidates": [3] * n,
        }
    )
    result = metrics.compute_metrics(outcomes, draws=300, seed=2)
    rows = {r["metric"]: r for r in result.iter_rows(named=True)}
    t39 = stats.t.ppf(0.975, 39)
    assert rows["acc_source"]["conf_low"] == pytest.approx(100 * 40 / (40 + t39**2))
    for metric in (
        "acc_p0",
        "acc_source",
        "acc_shuffled",
        "cf_accuracy",
        "pgr",
        "cfr",
        "persist",
        "other",
        "reliance_margin",
    ):
        row = rows[metric]
        assert row["conf_low"] < row["conf_high"], metric
        assert row["method"] in (intervals.SCORE, intervals.MOVER), metric
    assert rows["persist"]["conf_low"] == 0.0 and rows["persist"]["conf_high"] > 0.0
    assert rows["random_baseline"]["method"] == intervals.PERCENTILE  # fixed by the cohort's K_f


def test_two_models_at_the_ceiling_are_not_certainly_tied():
    """Figure 2's net for two models right on every task: 0 pp, with an interval on both sides."""
    tasks = pl.DataFrame(
        {
            "model": ["a"] * 30 + ["b"] * 30,
            "task_id": [f"T{i}" for i in range(30)] * 2,
            "family_id": [f"F{i}" for i in range(30)] * 2,
            "y": [1.0] * 60,
        }
    )
    row = compare.model_transitions(tasks, channel="ir", condition="source", draws=200).row(0, named=True)
    assert row["net"] == 0.0 and row["conf_low"] < 0.0 < row["conf_high"]
    assert row["method"] == intervals.MOVER


@st.composite
def family_counts(draw):
    families = draw(st.integers(2, 60))
    tasks = draw(st.integers(1, 3))
    a = draw(st.lists(st.integers(0, tasks), min_size=families, max_size=families))
    return np.array(a, dtype=float).reshape(-1, 1), np.full((families, 1), float(tasks))


@settings(max_examples=60, deadline=None)
@given(family_counts(), st.integers(0, 2**16))
def test_every_rate_interval_holds_its_estimate_and_has_width(counts, seed):
    a, b = counts
    low, high, _, method, _ = resample.bootstrap_ratio(a, b, draws=100, seed=seed, key="h", conf_level=0.95)
    estimate = a.sum() / b.sum()
    assert 0.0 <= low[0] <= estimate <= high[0] <= 1.0
    assert low[0] < high[0]
    assert method[0] in intervals.METHODS


@settings(max_examples=60, deadline=None)
@given(family_counts(), family_counts(), st.integers(0, 2**16))
def test_every_difference_interval_holds_its_estimate_and_has_width(first, second, seed):
    (x, bx), (y, _) = first, second
    n = min(len(x), len(y))
    x, y = x[:n] / bx[:n], np.minimum(y[:n], bx[:n]) / bx[:n]  # per-family shares in [0, 1], one task each
    gain, loss, b = y * (1 - x), x * (1 - y), np.ones_like(x)
    low, high, _, _, _ = resample.bootstrap_difference(gain, loss, b, draws=100, seed=seed, key="h", conf_level=0.95)
    estimate = (gain - loss).sum() / n
    assert -1.0 <= low[0] <= estimate + 1e-12 and estimate - 1e-12 <= high[0] <= 1.0
    assert low[0] < high[0]


def test_a_family_counts_as_many_trials_as_the_independent_tasks_behind_its_share():
    # PGR weighs the source task 1/2 and each of K' = 2 cf tasks 1/4: 1 / (1/4 + 2 · 1/16) = 8/3 = 4K'/(K' + 1);
    # CFR averages its K' cf tasks: 2. Forty such families hold at most (Σ b)² / Σ (b² / m) = 40 · 8/3 trials.
    frame = pl.DataFrame({"cf_tasks": [2, 0]})
    assert frame.select(metrics.metric_trials("pgr").alias("m"))["m"].to_list() == pytest.approx([8 / 3, 0.0])
    assert frame.select(metrics.metric_trials("cfr").alias("m"))["m"].to_list() == [2.0, 0.0]
    assert metrics.metric_trials("acc_source") is None
    assert intervals.trial_capacity(np.ones((40, 1)), np.full((40, 1), 8 / 3))[0] == pytest.approx(40 * 8 / 3)


def test_a_near_perfect_model_is_no_surer_than_a_perfect_one():
    # cf accuracy, 100 families × 3 tasks. 300/300: Wilson on the 100 Kish families, t(99) = 1.9842,
    # lower end 100 / (100 + 1.9842²) = 96.21%. 299/300 measured as if every task were independent
    # said 98.1%, above the perfect model's; now at most 96.21%.
    b = np.full((100, 2), 3.0)
    a = b.copy()
    a[0, 1] = 2.0
    _, _, _, low, _ = intervals._score(a, b, 0.95)
    assert round(float(low[0]), 4) == round(100 / (100 + stats.t.ppf(0.975, 99) ** 2), 4) == 0.9621
    assert low[1] <= low[0]


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=2, max_size=60), family=st.integers(0, 59))
def test_one_answer_off_a_bound_is_no_surer_than_the_bound(sizes, family):
    """A perfect model and the same model with one task wrong, in any family of any size: the second's
    lower end is never above the first's; mirrored at 0 for the upper end. (Inside, the ends follow the
    measured design effect; their monotonicity there is left to the interval benchmark.)"""
    b = np.array(sizes, dtype=float)[:, None]
    one_off = np.zeros_like(b)
    one_off[family % len(sizes), 0] = 1.0
    assert intervals._score(b - one_off, b, 0.95)[3][0] <= intervals._score(b, b, 0.95)[3][0] + 1e-12
    assert intervals._score(one_off, b, 0.95)[4][0] >= intervals._score(np.zeros_like(b), b, 0.95)[4][0] - 1e-12


@pytest.mark.parametrize("rule, method", [("percentile", intervals.PERCENTILE), ("score", intervals.SCORE)])
def test_the_interval_rule_can_be_chosen(rule, method):
    """auto keeps the score interval at 100% and the percentile one mid-range; a rule asked for holds
    everywhere. At 40 of 40 families the percentile interval is the point [1, 1] (the bootstrap cannot
    move it; what the paper's tables show), the score interval's lower end 40 / (40 + t(39)²) =
    40 / (40 + 2.0227²) = 0.9072."""
    rng = np.random.default_rng(0)
    a = np.column_stack([np.ones(40), rng.binomial(1, 0.5, 40)]).astype(float)
    b = np.ones((40, 2))
    replicates = resample.ratio_of_sums(resample.family_weights(40, 400, rng), a, b)
    _, _, auto = intervals.rate_intervals(a, b, replicates, 0.95)
    assert auto.tolist() == [intervals.SCORE, intervals.PERCENTILE]
    low, high, chosen = intervals.rate_intervals(a, b, replicates, 0.95, rule=rule)
    assert chosen.tolist() == [method, method]
    expected = 1.0 if rule == "percentile" else 40 / (40 + stats.t.ppf(0.975, 39) ** 2)
    assert (low[0], high[0]) == pytest.approx((expected, 1.0), abs=1e-4)
    gain, loss = a[:, [1]], np.zeros((40, 1))
    _, _, difference = intervals.difference_intervals(gain, loss, b[:, [0]], replicates[:, [1]], 0.95, rule=rule)
    assert difference.tolist() == [intervals.PERCENTILE if rule == "percentile" else intervals.MOVER]
    with pytest.raises(ValueError, match="auto, percentile, score"):
        intervals.rate_intervals(a, b, replicates, 0.95, rule="wald")


def test_the_metrics_table_carries_the_rule_asked_for():
    from tests.stats.test_stability import outcomes_from

    outcomes = outcomes_from({"a": [1.0] * 30, "b": [1.0, 0.0] * 15})
    for rule, perfect in (("auto", intervals.SCORE), ("percentile", intervals.PERCENTILE), ("score", intervals.SCORE)):
        table = metrics.compute_metrics(outcomes, metrics=("pgr",), draws=200, seed=1, interval=rule)
        assert table.filter(pl.col("model") == "a")["method"][0] == perfect


@pytest.mark.parametrize("families, tasks", [(40, 1), (136, 1), (100, 3)])
def test_the_lower_end_never_rises_as_failures_rise(families, tasks):
    """From every task right to 44 failures, one task at a time, on the same bootstrap replicates: the
    lower end never rises. Across the passage from the score interval to the percentile one the ends
    are weighted, not switched: a hard switch at 10 families' worth let 100 families × 3 tasks gain
    0.07 pp with one more failure."""
    weights = resample.family_weights(families, 2000, np.random.default_rng(1))
    b = np.full((families, 1), float(tasks))
    a = b.copy()
    lows = []
    for failure in range(45):
        if failure:
            a[(failure - 1) % families, 0] -= 1
        replicates = resample.ratio_of_sums(weights, a, b)
        lows.append(intervals.rate_intervals(a, b, replicates, 0.95)[0][0])
    assert (np.diff(lows) <= 1e-12).all()


def test_between_the_two_rules_the_ends_are_weighted():
    """At a minority of 10 effective families the ends are half the percentile interval's, half the
    score interval's; at 5 the score interval's alone, at 15 the percentile's."""
    low, high, method = intervals._blend(
        "auto",
        np.array([5.0, 10.0, 15.0]),
        (np.array([0.80, 0.80, 0.80]), np.array([0.90, 0.90, 0.90])),
        (np.array([0.70, 0.70, 0.70]), np.array([0.94, 0.94, 0.94])),
        10.0,
        (intervals.PERCENTILE, intervals.SCORE, intervals.SCORE_BLEND),
    )
    assert low.tolist() == pytest.approx([0.70, 0.75, 0.80]) and high.tolist() == pytest.approx([0.94, 0.92, 0.90])
    assert method.tolist() == [intervals.SCORE, intervals.SCORE_BLEND, intervals.PERCENTILE]


@settings(max_examples=200, deadline=None)
@given(
    probability=st.floats(1e-9, 1 - 1e-9),
    dof=st.floats(0.01, 1e6),
)
def test_the_quantiles_are_scipy_stats_own(probability, dof):
    """chi2_quantile and t_quantile call the functions scipy.stats' ppf calls, without its machinery."""
    assert intervals.chi2_quantile(probability, dof) == stats.chi2.ppf(probability, dof)
    assert intervals.t_quantile(probability, dof) == stats.t.ppf(probability, dof)
    many = np.array([0.5, 1.0, 2.0, 7.5, 300.0])
    np.testing.assert_array_equal(intervals.chi2_quantile(0.025, many), stats.chi2.ppf(0.025, many))
    np.testing.assert_array_equal(intervals.t_quantile(0.975, many), stats.t.ppf(0.975, many))


def test_a_streams_replicates_are_drawn_once_and_shared_read_only(monkeypatch):
    """The same (families, draws, seed, stream) gives the same array, read-only, equal to a fresh draw
    from the stream; one too large for the cache is drawn afresh each time."""
    first = resample.stream_weights(12, 50, 3, "ir")
    assert resample.stream_weights(12, 50, 3, "ir") is first and not first.flags.writeable
    np.testing.assert_array_equal(first, resample.family_weights(12, 50, resample.rng_for(3, "ir")))
    assert resample.bootstrap_weights(12, draws=50, seed=3, key="ir", conf_level=0.95) is first
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = 2.0
    monkeypatch.setattr(resample, "WEIGHTS_CACHE_BYTES", first.nbytes)  # a quarter of it is too small
    big = resample.stream_weights(12, 50, 3, "a stream too large to keep")
    assert resample.stream_weights(12, 50, 3, "a stream too large to keep") is not big
    np.testing.assert_array_equal(resample.stream_weights(12, 50, 3, "a stream too large to keep"), big)
