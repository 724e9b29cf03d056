"""Plans and estimates for a model run on a fraction of the benchmark (molp2s_stats.stats.subsample)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from molp2s_stats.errors import UsageError
from molp2s_stats.stats import subsample


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=6), st.data())
def test_allocation_spends_the_budget_within_each_stratum(sizes, data):
    sizes = np.array(sizes)
    n = data.draw(st.integers(min(sizes.sum(), 2 * len(sizes)), sizes.sum()))
    spreads = np.array(data.draw(st.lists(st.floats(0.0, 5.0), min_size=len(sizes), max_size=len(sizes))))
    counts = subsample.allocate(sizes, spreads, int(n))
    assert counts.sum() == n
    assert (counts <= sizes).all() and (counts >= np.minimum(sizes, subsample.MIN_PER_STRATUM)).all()


def test_a_one_stratum_estimate_is_the_sample_mean_with_the_finite_population_correction():
    """Ten families, four answered (a = 1, 0, 1, 1), b = 1 known everywhere, no prediction:
    estimate 3/4. Around this cohort's score the variance is the design's, (1 − 4/10) · s² / 4 with
    s² = var(1, 0, 1, 1) = 1/4: cohort_se = √(0.6/16). Around the score over families like these the
    cohort's own s²/10 adds to it, 0.6 · s²/4 + s²/10 = s²/4, a simple random sample's: se = √(1/16)."""
    a = np.array([1, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    sampled = np.array([True] * 4 + [False] * 6)
    result = subsample.aipw_ratio(
        a, np.ones(10), sampled, np.zeros(10, dtype=int), np.zeros(10), None, np.zeros(10), regress=False
    )
    assert result.estimate == pytest.approx(0.75)
    assert result.se == pytest.approx(math.sqrt(0.25 / 4))
    assert result.design_se == pytest.approx(math.sqrt(0.6 * 0.25 / 4))
    assert result.n == 4 and not result.predicted


def test_a_model_that_answered_every_family_gets_a_complete_models_interval():
    """Answered in full, the design's variance is 0 and the interval is not a point: the standard error is
    the linearised one of the ratio over the families (s/√N: 12 of 20 right, s² = 0.24 · 20/19), and the
    interval Wilson's on n_eff = p(1 − p)/se² = 19, as `intervals` gives a complete model on the same rule
    (score interval everywhere); and a model that answered 90% of the families is not surer than that."""
    from molp2s_stats.stats import intervals

    rng = np.random.default_rng(5)
    a = np.zeros(20)
    a[rng.choice(20, 12, replace=False)] = 1.0
    every = np.ones(20, dtype=bool)
    args = (np.zeros(20), None, np.zeros(20), False)
    full = subsample.aipw_ratio(a, np.ones(20), every, np.zeros(20, dtype=int), *args)
    assert full.se == pytest.approx(math.sqrt(0.24 / 19))
    ends = subsample.score_interval(full.estimate, full.se, 19, families=20, capacity=20, conf_level=0.95)
    complete = intervals.rate_intervals(a[:, None], np.ones((20, 1)), np.full((10, 1), 0.6), 0.95, rule="score")
    assert ends == pytest.approx((complete[0][0], complete[1][0]))
    assert ends[1] - ends[0] > 0.3
    most = every.copy()
    most[:2] = False
    partial = subsample.aipw_ratio(np.where(most, a, 0.0), np.ones(20), most, np.zeros(20, dtype=int), *args)
    assert partial.se >= full.se  # s²/n over the 18 answered (0.118 against 0.112), not (1 − f) · s²/n (0.037)
    assert partial.design_se < full.se  # the design's error alone, the rule before, was the surer


def test_the_effective_size_is_capped_at_the_cohorts_tasks_as_a_complete_models_is():
    """A measured variance can claim far more evidence than there is: 90% with a standard error of 0.001
    reads as n_eff = 0.9 · 0.1 / 0.001² = 90,000. Capped at the cohort's tasks, 100 families of 3 tasks
    (`cohort_capacity`: 50 answered of weight 2, (2 · 150)² / (2 · 150) = 300, as `intervals.trial_capacity`
    gives for the 100 families answered in full), the interval is Wilson's on 300 trials, as
    `intervals.effective_size` caps a complete model's."""
    from scipy import stats

    from molp2s_stats.stats import intervals

    answered = np.zeros(100, dtype=bool)
    answered[::2] = True
    capacity = subsample.cohort_capacity(np.ones(100), np.full(100, 3.0), np.full(100, 2.0), answered)
    assert capacity == pytest.approx(300.0)
    assert capacity == pytest.approx(intervals.trial_capacity(np.ones((100, 1)), np.full((100, 1), 3.0))[0])
    capped = intervals.effective_size(np.array([0.9]), np.array([1e-6]), np.ones((100, 1)), np.full((100, 1), 3.0))
    assert capped[0] == pytest.approx(300.0)
    t = stats.t.ppf(0.975, 49)
    low, high = subsample.score_interval(0.9, 0.001, 49, families=50, capacity=capacity, conf_level=0.95)
    expected = intervals.wilson(np.array([0.9]), np.array([300.0]), t, 0.95)
    assert (low, high) == pytest.approx((expected[0][0], expected[1][0]))
    uncapped = subsample.score_interval(0.9, 0.001, 49, families=50, conf_level=0.95)
    assert uncapped[0] > low + 0.02  # without the cap, 90,000 trials' worth: far surer than the data


def test_a_regressed_estimate_pays_for_its_fitted_slopes():
    """Twelve families, six answered, b = 1 known, a predicted from two predictors (intercept and
    two slopes): the estimate is the mean prediction plus the answered residuals weighed N/n; its variance
    around this cohort's score is the one-stratum formula (1 − n/N) · s²_e / n of the residuals e, times
    n/(n − 2) for the two slopes, checked against numpy's own least squares."""
    rng = np.random.default_rng(0)
    own, pooled = rng.random(12), rng.random(12)
    a = (rng.random(12) < 0.5 * (own + pooled)).astype(float)
    sampled = np.array([True] * 6 + [False] * 6)
    x = np.column_stack([np.ones(12), own, pooled])
    beta, *_ = np.linalg.lstsq(x[sampled], a[sampled], rcond=None)
    e = a[sampled] - x[sampled] @ beta
    expected = (x @ beta).mean() + (12 / 6) * e.sum() / 12  # the residuals weigh N/n = 2 each
    variance = (1 - 6 / 12) * e.var(ddof=1) / 6 * 6 / (6 - 2)
    result = subsample.aipw_ratio(
        np.where(sampled, a, 0.0), np.ones(12), sampled, np.zeros(12, dtype=int), own, None, pooled, regress=True
    )
    assert result.estimate == pytest.approx(expected)
    assert result.design_se == pytest.approx(math.sqrt(variance))
    assert result.df == 6 - 1 - 1 - 2 and result.predicted


def test_each_stratum_is_a_simple_random_sample_of_its_size():
    """Two strata of 12 and 18 families sampling 3 and 9: over 1,200 plan seeds every plan holds
    exactly 3 + 9, and each family is drawn in proportion to n_h / N_h (1/4 and 1/2: 300 and 600
    times expected; a χ² test of the counts against that), as the design's weights assume."""
    from scipy import stats

    families = [f"F{i:02d}" for i in range(30)]
    plan = subsample.Design(families, np.array([1] * 12 + [2] * 18), np.array([12, 18]), np.array([3, 9]))
    counts = np.zeros(30)
    for seed in range(1200):
        selected = subsample.select(plan, seed)
        assert selected[:12].sum() == 3 and selected[12:].sum() == 9
        counts += selected
    expected = np.array([1200 / 4] * 12 + [1200 / 2] * 18)
    assert stats.chisquare(counts, expected).pvalue > 0.001


def test_a_stratified_estimate_weighs_each_stratum_by_its_size():
    """Stratum 0: 8 families, 2 answered (1, 1); stratum 1: 2 families, both answered (0, 0).
    Â = 8/2 · 2 + 2/2 · 0 = 8 of B = 10; stratum 1 is answered in full and adds no design variance;
    stratum 0's residuals u = a − 0.8 are equal, so its design variance is 0 too. The cohort's own
    spread is not: u = (0.2, 0.2, −0.8, −0.8) weighed (4, 4, 1, 1) has mean 0 and Σ w u² = 1.6, so
    n/(n − 1) · 1.6 = 4/3 · 1.6 on the scale of the sums, se = √(2.1333) / 10."""
    a = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    sampled = np.array([True, True, True, True] + [False] * 6)
    stratum = np.array([0, 0, 1, 1, 0, 0, 0, 0, 0, 0])
    result = subsample.aipw_ratio(a, np.ones(10), sampled, stratum, np.zeros(10), None, np.zeros(10), regress=False)
    assert result.estimate == pytest.approx(0.8) and result.design_se == pytest.approx(0.0)
    assert result.se == pytest.approx(math.sqrt(4 / 3 * 1.6) / 10)


def _population(rng, families=400, models=5):
    """Per-family outcomes of complete models and a new model that share a family difficulty."""
    d = rng.normal(0, 1.5, families)
    p = 1 / (1 + np.exp(-(rng.normal(0, 0.5, models + 1)[None, :] - d[:, None])))
    return (rng.random((families, models + 1)) < p).astype(float), d


def test_the_estimate_is_unbiased_and_its_interval_covers_over_repeated_plans():
    """Over 300 plans of 15% (a strong shared difficulty, so the prediction pays), the mean error is
    within Monte Carlo error of 0, the 95% intervals cover the full value about 95% of the time, and
    the squared error is well under that of the same families' plain mean (the random sample's)."""
    rng = np.random.default_rng(3)
    y, difficulty = _population(rng)
    truth = y[:, -1].mean()
    pooled = y[:, :-1].mean(axis=1)
    errors, covered, predicted, plain = [], [], [], []
    for _ in range(300):
        sampled = np.zeros(len(y), dtype=bool)
        sampled[rng.choice(len(y), 60, replace=False)] = True
        result = subsample.aipw_ratio(
            np.where(sampled, y[:, -1], 0.0),
            np.ones(len(y)),
            sampled,
            np.zeros(len(y), dtype=int),
            pooled,
            None,
            pooled,
            regress=True,
        )
        half = 1.96 * result.se
        errors.append(result.estimate - truth)
        covered.append(abs(result.estimate - truth) <= half)
        predicted.append(result.predicted)
        plain.append(y[sampled, -1].mean() - truth)
    errors = np.array(errors)
    assert all(predicted)
    assert np.mean(errors**2) < 0.9 * np.mean(np.square(plain))
    assert abs(errors.mean()) < 3 * errors.std() / math.sqrt(len(errors))
    assert 0.90 <= np.mean(covered) <= 0.99


def test_the_prediction_is_used_only_where_the_complete_models_say_it_pays():
    rng = np.random.default_rng(4)
    y, _ = _population(rng)
    complete = y[:, :-1]
    assert subsample.regression_pays(complete, np.ones_like(complete), complete, sampled=60)
    noise = (rng.random(complete.shape) < 0.5).astype(float)  # families do not differ: nothing to predict
    assert not subsample.regression_pays(noise, np.ones_like(noise), noise, sampled=60)


# ------------------------------------------------------------------ end to end, the CLI


@pytest.fixture(scope="module")
def simulated_db(tmp_path_factory):
    from molp2s_stats import simulate
    from tests.support.simulated_benchmark import write_simulated

    root = tmp_path_factory.mktemp("subsample")
    models = tuple(
        simulate.SimulatedModel(f"sim-{i}", skill, {"*": 1.0}, {"*": 0.5}, invalid=0.0, raw_text_share=0.0)
        for i, skill in enumerate((-0.5, 0.0, 0.5, 1.0))
    )
    db, _ = write_simulated(root, families=60, channels=("dipole_norm", "gap"), models=models, seed=11)
    return root, db


def test_plan_prompts_load_and_estimate_from_the_command_line(simulated_db, tmp_path):
    root, db = simulated_db
    copy = tmp_path / "runs.duckdb"
    copy.write_bytes(db.read_bytes())
    runner = CliRunner()
    plan_file = tmp_path / "plan.csv"
    result = runner.invoke(
        app, ["plan", "--db", str(copy), "--fraction", "0.3", "--seed", "2", "--out", str(plan_file)]
    )
    assert result.exit_code == 0, result.output
    assert "18 of 60 families" in result.output and "requests" in result.output and "dipole_norm" in result.output
    assert "as steady as the steadiest complete model" in result.output
    planned = pl.read_csv(plan_file)
    assert planned.columns[0] == "family_id" and planned.height == 18

    # the planned prompts: exactly those families' tasks
    prompts_file = tmp_path / "prompts.jsonl"
    result = runner.invoke(
        app, ["prompts", "--db", str(copy), "--families", str(plan_file), "--out", str(prompts_file)]
    )
    assert result.exit_code == 0, result.output
    con = store.connect(copy, read_only=True)
    tasks = con.sql("SELECT task_id, family_id FROM tasks").pl()
    con.close()
    exported = pl.read_ndjson(prompts_file).join(tasks, on="task_id")
    assert set(exported["family_id"]) == set(planned["family_id"])
    assert exported.height == tasks.filter(pl.col("family_id").is_in(planned["family_id"].to_list())).height

    # a new model answers them as sim-2 does, under its own name
    answers = (
        pl.read_parquet(root / "responses" / "sim-2.parquet")
        .join(tasks, on="task_id")
        .filter(pl.col("family_id").is_in(planned["family_id"].to_list()))
        .drop("family_id")
        .with_columns(pl.lit("new").alias("model"))
    )
    answers.write_parquet(tmp_path / "new.parquet")
    assert runner.invoke(app, ["load", "--db", str(copy), str(tmp_path / "new.parquet")]).exit_code == 0

    result = runner.invoke(app, ["estimate", "--db", str(copy), "--model", "new", "--metric", "pgr", "--format", "csv"])
    assert result.exit_code == 0, result.output
    estimate = pl.read_csv(result.stdout.encode())
    full = runner.invoke(app, ["metrics", "--db", str(copy), "--metric", "pgr", "--bootstrap", "0", "--format", "csv"])
    truth = pl.read_csv(full.stdout.encode()).filter(pl.col("model") == "sim-2")
    joined = estimate.join(truth.select("channel", pl.col("estimate").alias("truth")), on="channel")
    assert joined.height == 2 and set(joined["method"]) <= {subsample.METHOD, subsample.METHOD_WITHOUT_PREDICTION}
    assert (joined["conf_low"] <= joined["truth"]).all() and (joined["truth"] <= joined["conf_high"]).all()
    assert (joined["n"] < truth["n"]).all()  # it answered part of each cohort

    booted = runner.invoke(
        app,
        [
            "estimate",
            "--db",
            str(copy),
            "--model",
            "new",
            "--metric",
            "pgr",
            "--bootstrap",
            "200",
            "--seed",
            "4",
            "--format",
            "csv",
        ],
    )
    assert booted.exit_code == 0, booted.output
    booted = pl.read_csv(booted.stdout.encode())
    assert booted["estimate"].to_list() == pytest.approx(estimate["estimate"].to_list())
    assert booted["method"].str.ends_with("_bootstrap").all() and (booted["draws"] == 200).all()
    assert (booted["seed"] == 4).all() and (booted["conf_low"] <= booted["estimate"]).all()

    # the leaderboard shows the estimate, marked, and the partial model never shrinks the cohort
    from molp2s_stats.report import tables
    from molp2s_stats.stats import metrics

    con = store.connect(copy, read_only=True)
    result, notes = subsample.with_estimates(con, metrics.metrics_from_db(con, metrics=("pgr",), draws=0), ("pgr",))
    assert metrics.read_partial_models(con).row(0) == ("new", 18, 60)
    con.close()
    new_rows = result.filter(pl.col("model") == "new")
    assert set(new_rows["method"]) <= set(subsample.ESTIMATED_METHODS) and new_rows["conf_low"].is_not_null().all()
    html = tables.leaderboard_table(result, "pgr", title="PGR")[0].as_raw_html()
    assert "new (estimated)" in html and "planned fraction of the families" in html
    assert notes == []


def test_estimate_refuses_a_complete_model_and_an_unknown_one(simulated_db):
    _, db = simulated_db
    runner = CliRunner()
    result = runner.invoke(app, ["estimate", "--db", str(db), "--model", "sim-1"])
    assert result.exit_code != 0 and "answered every family" in result.output
    result = runner.invoke(app, ["estimate", "--db", str(db), "--model", "nobody"])
    assert result.exit_code != 0 and "unknown model 'nobody'; " in result.output


def test_the_bootstrap_standard_error_agrees_with_the_design_based_one():
    """The same estimate; the stratified bootstrap's standard error (finite-population corrected) about
    the design-based one, on a population where the prediction pays."""
    rng = np.random.default_rng(8)
    y, _ = _population(rng)
    pooled = y[:, :-1].mean(axis=1)
    sampled = np.zeros(len(y), dtype=bool)
    sampled[rng.choice(len(y), 80, replace=False)] = True
    args = (
        np.where(sampled, y[:, -1], 0.0),
        np.ones(len(y)),
        sampled,
        np.zeros(len(y), dtype=int),
        pooled,
        None,
        pooled,
        True,
    )
    point = subsample.aipw_ratio(*args)
    se, undefined = subsample.bootstrap_se(args, draws=400, rng=np.random.default_rng(1))
    assert undefined == 0 and se == pytest.approx(point.se, rel=0.25)


@pytest.mark.parametrize(("right", "n"), [(0, 20), (3, 20), (10, 20), (19, 20), (20, 20), (1, 7), (37, 40)])
def test_the_score_interval_is_scipys_wilson_interval_for_a_simple_random_sample(right, n):
    """Reference: scipy's Wilson interval for ``right`` of ``n`` (binomtest, method "wilson"). The same
    counts as a rate with the binomial standard error √(p(1 − p)/n) (so n_eff = n, and, on a bound, the
    n answered families), with a normal quantile (huge df), give the same interval; but where one or two
    are right (or wrong), whose end is Brown, Cai and DasGupta's Poisson one, as for a complete model:
    χ²₀.₀₂₅(2x) / 2n (1 of 7: 0.0506 / 14 = 0.0036, under Wilson's 0.0257)."""
    from scipy import stats

    p = right / n
    reference = stats.binomtest(right, n).proportion_ci(0.95, method="wilson")
    low, high = subsample.score_interval(p, math.sqrt(p * (1 - p) / n), 10**9, families=n, conf_level=0.95)
    poisson = lambda x: stats.chi2.ppf(0.025, 2 * x) / (2 * n)  # noqa: E731
    expected_low = min(reference.low, poisson(right)) if 0 < right <= 2 else reference.low
    expected_high = max(reference.high, 1 - poisson(n - right)) if 0 < n - right <= 2 else reference.high
    assert (low, high) == pytest.approx((expected_low, expected_high), abs=1e-9)


def test_a_model_at_the_ceiling_gets_an_interval_not_a_point():
    """300 families, a model right on all but 3 (truth 99%), 30 answered (10%). When the sample holds
    no failure (about three samples in four) the estimate is 100% with a zero standard error; the
    interval still reaches down to 1 / (1 + t²/n_eff) with n_eff = the 30 answered families and
    t = t(28), 2.048: 0.877. Over 400 samples the 95% intervals cover the 99% at least 95% of the time (a t
    interval, a point whenever no failure was drawn, covered it in about one sample in four)."""
    from scipy import stats

    a = np.ones(300)
    a[:3] = 0.0
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(400):
        sampled = np.zeros(300, dtype=bool)
        sampled[rng.choice(300, 30, replace=False)] = True
        result = subsample.aipw_ratio(
            np.where(sampled, a, 0.0),
            np.ones(300),
            sampled,
            np.zeros(300, dtype=int),
            np.zeros(300),
            None,
            np.zeros(300),
            regress=False,
        )
        low, high = subsample.score_interval(result.estimate, result.se, result.df, families=30, conf_level=0.95)
        if result.se == 0:
            t = stats.t.ppf(0.975, 28)
            assert result.estimate == 1.0 and low == pytest.approx(1 / (1 + t * t / 30))
        covered += low <= 0.99 <= high
    assert covered / 400 >= 0.95


def test_a_rate_a_rounding_error_from_its_bound_is_read_as_on_it():
    """Every answered family right can sum to 1 − 3e-16 with a standard error of 3e-32; Kish's
    n_eff = p(1 − p)/se² would then be about 10⁴⁸ and the interval a point. It is read as the bound."""
    on_bound = subsample.score_interval(1.0, 0.0, 21, families=23, conf_level=0.95)
    rounded = subsample.score_interval(1 - 3e-16, 3e-32, 21, families=23, conf_level=0.95)
    assert rounded == pytest.approx(on_bound) and on_bound[0] < 0.9


def test_the_difference_interval_is_the_t_interval_where_the_rates_are_far_from_their_bounds():
    """Symmetric rate intervals ± t·se₁ and ± t·se₂ with correlation ρ: MOVER gives
    ± t·√(se₁² + se₂² − 2ρ se₁ se₂), the t interval of the difference (here 0.1 and 0.05, ρ = 0.3:
    √(0.01 + 0.0025 − 0.003) = √0.0095)."""
    low, high = subsample.difference_interval(0.2, (0.6, 0.5, 0.7), (0.4, 0.35, 0.45), 0.3)
    assert (low, high) == pytest.approx((0.2 - math.sqrt(0.0095), 0.2 + math.sqrt(0.0095)))


def test_strata_with_one_answered_family_keep_their_own_weight():
    """Three strata of 100 families sampled 20, 2 and 1; only the third holds right answers (a third
    of all). Each stratum keeps N_h / n_h, so the estimate is unbiased over repeated samples (merging
    the small strata for the weights would give about 0.22)."""
    rng = np.random.default_rng(5)
    stratum = np.repeat([1, 2, 3], 100)
    a = (stratum == 3).astype(float)
    estimates = []
    for _ in range(400):
        sampled = np.zeros(300, dtype=bool)
        for s, n in ((1, 20), (2, 2), (3, 1)):
            sampled[rng.choice(np.flatnonzero(stratum == s), n, replace=False)] = True
        estimates.append(
            subsample.aipw_ratio(
                np.where(sampled, a, 0.0),
                np.ones(300),
                sampled,
                stratum,
                np.zeros(300),
                None,
                np.zeros(300),
                regress=False,
            ).estimate
        )
    assert np.mean(estimates) == pytest.approx(1 / 3, abs=1e-9)


def test_with_one_complete_model_the_plan_still_predicts_an_interval(simulated_db, tmp_path):
    """No other model to predict it from: the plan's half-widths are a random sample's, not zero."""
    _, db = simulated_db
    con = store.connect(db, read_only=True)
    from molp2s_stats.stats import metrics

    outcomes = metrics.read_family_outcomes(con)[0].filter(pl.col("model") == "sim-1")
    con.close()
    channels = ["dipole_norm", "gap"]
    known = subsample.predictability(outcomes, ["sim-1"], channels)
    members = subsample.universe(outcomes, channels)
    widths = subsample.predicted_half_widths(known, members, np.ones(len(members)), [20])
    assert (widths["half_width"] > 1).all()
    # one model: the steadiest and the noisiest are the same one
    np.testing.assert_allclose(widths["half_width_low"], widths["half_width"])
    np.testing.assert_allclose(widths["half_width_high"], widths["half_width"])


def test_the_predicted_half_width_lies_between_the_steadiest_and_the_noisiest_model(simulated_db):
    """The root mean variance over the complete models lies between their smallest and largest."""
    _, db = simulated_db
    con = store.connect(db, read_only=True)
    from molp2s_stats.stats import metrics

    outcomes = metrics.read_family_outcomes(con)[0]
    con.close()
    models = sorted(outcomes["model"].unique())
    channels = ["dipole_norm", "gap"]
    known = subsample.predictability(outcomes, models, channels)
    members = subsample.universe(outcomes, channels)
    widths = subsample.predicted_half_widths(known, members, np.ones(len(members)), [10, 30])
    assert len(models) >= 2 and widths.height == 4
    assert (widths["half_width_low"] <= widths["half_width"]).all()
    assert (widths["half_width"] <= widths["half_width_high"]).all()
    assert (widths["half_width_low"] < widths["half_width_high"]).all()  # the simulated models differ


def test_cfr_divides_by_the_new_models_own_right_sources():
    """CFR's b_f is y(source): never taken from the complete models, even when there is one."""
    assert "cfr" not in subsample.KNOWN_DENOMINATORS and "persist" not in subsample.KNOWN_DENOMINATORS
    assert {"pgr", "reliance_margin", "acc_source", "cf_accuracy"} <= subsample.KNOWN_DENOMINATORS


def test_a_partial_model_at_the_ceiling_gets_intervals_that_reach_its_full_value():
    """120 families, three complete models of middling skill, and a new model right on every task but
    the source tasks of F000–F001 and the shuffled ones of F002–F003 (source and shuffled accuracy
    118/120 = 98.3% each, RM 0). It answered 20 families, none of those four, so every answer it gave
    is right: a t interval would be the point 100% (and RM the point 0). The estimate's intervals
    reach down past 98.3% and hold RM = 0 strictly inside, as a leaderboard row should show it."""
    rng = np.random.default_rng(12)
    families = [f"F{i:03d}" for i in range(120)]
    frames = []
    for model, skill in (("c1", 0.3), ("c2", 0.5), ("c3", 0.7), ("top", None)):
        if skill is None:
            y_source = np.ones(120)
            y_source[:2] = 0.0
            y_shuffled = np.ones(120)
            y_shuffled[2:4] = 0.0
            y_p0, flip = np.ones(120), np.ones(120)
        else:
            y_source, y_shuffled, y_p0 = (rng.random((3, 120)) < skill).astype(float)
            flip = rng.integers(0, 4, 120) / 3
        frames.append(
            pl.DataFrame(
                {
                    "model": model,
                    "channel": "ir",
                    "family_id": families,
                    "y_p0": y_p0,
                    "y_source": y_source,
                    "y_shuffled": y_shuffled,
                    "cf_tasks": 3,
                    "cf_correct": flip * 3,
                    "cf_flip": flip,
                    "cf_persist": (1 - flip) / 2,
                    "cf_other": (1 - flip) / 2,
                    "n_candidates": 4,
                }
            )
        )
    outcomes = pl.concat(frames)
    answered = families[10:30]
    seen = outcomes.filter((pl.col("model") != "top") | pl.col("family_id").is_in(answered))
    result = subsample.estimate_model(
        seen,
        None,
        model="top",
        complete=["c1", "c2", "c3"],
        channels=["ir"],
        metrics=("acc_source", "acc_shuffled", "reliance_margin"),
    )
    rows = {r["metric"]: r for r in result.iter_rows(named=True)}
    for metric in ("acc_source", "acc_shuffled"):
        assert rows[metric]["estimate"] == pytest.approx(100.0) and rows[metric]["n"] == 20
        assert rows[metric]["conf_low"] < 118 / 120 * 100 and rows[metric]["conf_high"] == pytest.approx(100.0)
    rm = rows["reliance_margin"]
    assert rm["estimate"] == pytest.approx(0.0) and rm["conf_low"] < 0.0 < rm["conf_high"]


def test_a_run_on_the_easiest_families_is_flagged_and_a_random_one_is_not(simulated_db):
    """A new model that answered the 20 families the complete models find easiest (a harness that
    stopped early, a first-N subset) is not the random draw the estimate's interval assumes; the
    check says so (the complete models' correctness there is far above their cohort mean: z = 15.6, past 4).
    The same model on 20 families drawn at random passes."""
    from molp2s_stats.stats import metrics

    _, db = simulated_db
    con = store.connect(db, read_only=True)
    outcomes = metrics.read_family_outcomes(con)[0]
    con.close()
    complete, channels = ["sim-0", "sim-1", "sim-3"], ["dipole_norm", "gap"]
    families = subsample.universe(outcomes, channels)
    ease = np.nanmean(subsample.pooled_difficulty(outcomes, complete, families), axis=1)
    easiest = [families[i] for i in np.argsort(-ease)[:20]]
    at_random = list(np.random.default_rng(2).choice(families, 20, replace=False))
    checks = {}
    for name, chosen in (("easiest", easiest), ("random", at_random)):
        seen = outcomes.filter(
            pl.col("model").is_in(complete) | ((pl.col("model") == "sim-2") & pl.col("family_id").is_in(chosen))
        )
        checks[name] = subsample.selection_check(seen, None, model="sim-2", complete=complete, channels=channels)
    drawn, cohort, z = checks["easiest"]
    assert drawn > cohort and z > subsample.SELECTION_Z, z
    assert cohort == pytest.approx(np.mean(ease))
    assert abs(checks["random"][2]) < subsample.SELECTION_Z


def _planned_copy(simulated_db, tmp_path, *, families: int, seed: int) -> tuple[Path, list[str], pl.DataFrame]:
    """A copy of the simulated database with a plan of ``families`` recorded: (its path, the planned
    families, every task with its family and channel)."""
    _, db = simulated_db
    copy = tmp_path / "runs.duckdb"
    copy.write_bytes(db.read_bytes())
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "--db",
            str(copy),
            "--families",
            str(families),
            "--seed",
            str(seed),
            "--out",
            str(tmp_path / "plan.csv"),
        ],
    )
    assert result.exit_code == 0, result.output
    con = store.connect(copy, read_only=True)
    tasks = con.sql("SELECT task_id, family_id, channel FROM tasks").pl()
    con.close()
    return copy, pl.read_csv(tmp_path / "plan.csv")["family_id"].to_list(), tasks


def _load_as_new(root, copy, tmp_path, tasks: pl.DataFrame, keep: pl.Expr) -> None:
    """sim-2's answers to the tasks ``keep`` selects, loaded as the model "new"."""
    answers = pl.read_parquet(root / "responses" / "sim-2.parquet").join(tasks, on="task_id").filter(keep)
    answers.drop("family_id", "channel").with_columns(pl.lit("new").alias("model")).write_parquet(
        tmp_path / "new.parquet"
    )
    assert CliRunner().invoke(app, ["load", "--db", str(copy), str(tmp_path / "new.parquet")]).exit_code == 0


def test_a_run_that_shares_a_few_families_with_a_plan_is_not_read_as_run_on_it(simulated_db, tmp_path):
    """A plan of 18 families is recorded; a model then answers the 18 the complete models find
    easiest, a few of them in the plan by chance. The plan is not taken as its design (that would
    leave most of its answers out): its families are read as a random sample, and the note says so,
    names the closest plan, and flags that they are not like a random draw."""
    from molp2s_stats.stats import metrics

    copy, planned, tasks = _planned_copy(simulated_db, tmp_path, families=18, seed=5)
    con = store.connect(copy, read_only=True)
    outcomes = metrics.read_family_outcomes(con)[0]
    con.close()
    families = subsample.universe(outcomes, ["dipole_norm", "gap"])
    ease = np.nanmean(subsample.pooled_difficulty(outcomes, ["sim-0", "sim-1", "sim-2", "sim-3"], families), axis=1)
    easiest = [families[i] for i in np.argsort(-ease)[:18]]
    assert 0 < len(set(planned) & set(easiest)) <= 9
    _load_as_new(simulated_db[0], copy, tmp_path, tasks, pl.col("family_id").is_in(easiest))
    result = CliRunner().invoke(
        app, ["estimate", "--db", str(copy), "--model", "new", "--metric", "pgr", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    note = result.stderr
    assert "no recorded plan covers new's families (the closest, plan-5-18-" in note
    assert "not like a random draw from the cohort" in note
    # every answer counts: n is the easiest families in each channel's cohort, none left out
    estimate = pl.read_csv(result.stdout.encode())
    for channel, n in estimate.select("channel", "n").iter_rows():
        cohort = set(outcomes.filter((pl.col("channel") == channel) & (pl.col("model") == "sim-0"))["family_id"])
        assert n == len(cohort & set(easiest))


def test_a_model_run_on_one_channel_is_estimated_there_and_says_where_it_is_not(simulated_db, tmp_path):
    """The planned families' dipole_norm and P0 tasks only: dipole_norm is estimated; gap has no
    answer to estimate from, its row is empty and the note names it."""
    copy, planned, tasks = _planned_copy(simulated_db, tmp_path, families=20, seed=6)
    _load_as_new(
        simulated_db[0],
        copy,
        tmp_path,
        tasks,
        pl.col("family_id").is_in(planned) & pl.col("channel").is_in(["dipole_norm", "none"]),
    )
    result = CliRunner().invoke(
        app, ["estimate", "--db", str(copy), "--model", "new", "--metric", "pgr", "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    assert "new answered no cohort family in 1 channel(s) (gap): no estimate there" in result.stderr
    rows = dict(pl.read_csv(result.stdout.encode()).select("channel", "estimate").iter_rows())
    assert rows["dipole_norm"] is not None and rows["gap"] is None


@pytest.mark.parametrize("families", [12, 30, 60])
def test_one_failure_off_the_ceiling_is_no_surer_than_the_ceiling(families):
    """A partial model right on every answered family, and one wrong on one of them with the small
    standard error a near-ceiling sample gives (measured n_eff far above the families answered): the
    second's lower end is not above the first's (capped at the bound's, on the answered families)."""
    perfect = subsample.score_interval(1.0, 0.0, families - 1, families=families, conf_level=0.95)
    p = 1 - 1 / families
    sure = math.sqrt(p * (1 - p) / (50 * families))  # as if 50 × the answered families
    one_off = subsample.score_interval(p, sure, families - 1, families=families, conf_level=0.95)
    assert one_off[0] <= perfect[0] + 1e-12


@given(right=st.integers(0, 40), extra=st.integers(0, 40))
@settings(max_examples=60, deadline=None)
def test_a_partial_models_lower_end_never_falls_as_successes_rise(right, extra):
    """Forty answered families: one more right family never lowers the lower end (nor the upper), at the
    bound and off it alike, whether the cohort's tasks cap the effective size (a standard error as if the
    answers were ten times as many, capacity 40–80) or not."""
    right = min(right, 39)

    def ends(k: int) -> tuple[float, float]:
        p = k / 40
        se = math.sqrt(p * (1 - p) / 400)
        return subsample.score_interval(p, se, 39, families=40, capacity=40 + extra, conf_level=0.95)

    assert ends(right + 1)[0] >= ends(right)[0] - 1e-12 and ends(right + 1)[1] >= ends(right)[1] - 1e-12


def test_a_plan_for_a_half_width_takes_the_fewest_families_that_reach_it(simulated_db):
    """A new model's budget: at the chosen size every channel's expected PGR half-width is within the
    target, and one family fewer leaves a channel outside it."""
    _, db = simulated_db
    con = store.connect(db, read_only=True)
    plan = subsample.plan_from_db(con, half_width=12.0, seed=3)
    with pytest.raises(UsageError, match="give a fraction, a number of families or a half-width"):
        subsample.plan_from_db(con, half_width=5.0, families=20)
    # the estimate's interval is about families like these: even all of them leave a complete model's width
    with pytest.raises(UsageError, match=r"a half-width of 0.5 pp is out of reach: answering all \d+ families"):
        subsample.plan_from_db(con, half_width=0.5, seed=3)
    from molp2s_stats.stats import metrics

    outcomes = metrics.read_family_outcomes(con)[0].filter(pl.col("model").is_in(plan.models))
    con.close()
    chosen = int(plan.families["selected"].sum())
    known = subsample.predictability(outcomes, plan.models, plan.channels)
    members = subsample.universe(outcomes, plan.channels)
    spread = plan.families["spread"].to_numpy()
    at = subsample.predicted_half_widths(known, members, spread, [chosen])["half_width"].max()
    before = subsample.predicted_half_widths(known, members, spread, [chosen - 1])["half_width"].max()
    assert at <= 12.0 < before
