"""Model checks: prior and posterior predictive statistics, and simulation-based calibration's machinery."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from molp2s_stats.bayes import calibration, predictive
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.glossary import check_columns

COLUMNS = ["model", "channel", "condition", "statistic", "observed", "predicted", "conf_low", "conf_high", "p_value"]


def _hand_cells() -> predictive.Cells:
    """1 model, 1 channel, families F1 and F2; source, shuffled, cf (2 tasks) and P0 per family."""
    # rows: F1 source, shuffled, cf; F2 source, shuffled, cf (condition indices 0, 1, 2)
    return predictive.Cells(
        models=["m"],
        channels=["c"],
        families=["F1", "F2"],
        n_pairs=2,
        n_candidates=4.0,
        successes=np.array([1, 0, 2, 0, 0, 1]),
        trials=np.array([1, 1, 2, 1, 1, 2]),
        model=np.zeros(6, int),
        condition=np.array([0, 1, 2, 0, 1, 2]),
        channel=np.zeros(6, int),
        family=np.array([0, 0, 0, 1, 1, 1]),
        pair=np.array([0, 0, 0, 1, 1, 1]),
        p0_successes=np.array([1, 0]),
        p0_trials=np.array([1, 1]),
        p0_model=np.zeros(2, int),
        p0_family=np.array([0, 1]),
    )


def test_statistics_by_hand():
    cells = _hand_cells()
    statistics = predictive._statistics(cells)
    y = np.concatenate([cells.successes, cells.p0_successes]).astype(float)[None, :]
    values = dict(zip(statistics.keys, statistics(y)[0]))
    # accuracy: source 1/2, shuffled 0/2, cf 3/4, P0 1/2
    assert values[("m", "c", "source", "accuracy")] == 0.5
    assert values[("m", "c", "shuffled", "accuracy")] == 0.0
    assert values[("m", "c", "cf", "accuracy")] == 0.75
    assert values[("m", "none", "none", "accuracy")] == 0.5
    # every answer of a family: F1 4/5 right, F2 1/5; sd (ddof 1) of (0.8, 0.2) = 0.6 / √2 = 0.4243
    assert values[("m", "all", "all", "family_spread")] == pytest.approx(0.6 / np.sqrt(2))
    # the channel's answers (no P0): F1 3/4, F2 1/4; sd = 0.5 / √2 = 0.3536
    assert values[("m", "c", "all", "family_spread")] == pytest.approx(0.5 / np.sqrt(2))


def test_prior_predictive_is_wide_and_tidy():
    checks = predictive.prior_predictive(_hand_cells(), replicates=300, seed=2)
    assert checks.columns[:9] == COLUMNS
    check_columns(checks.columns)
    accuracy = checks.filter(pl.col("statistic") == "accuracy")
    # before any data the priors allow most accuracies: every interval spans most of 0–100 %
    assert (accuracy["conf_low"] < 10).all() and (accuracy["conf_high"] > 85).all()
    assert (checks["method"] == "prior predictive").all() and (checks["seed"] == 2).all()


def _fit(shape: Shape, seed: int):
    data, _ = simulate_cells(shape, seed)
    return bayes_fit.fit(data, draws=300, tune=300, chains=2, seed=seed, budget=0)


@pytest.fixture(scope="module")
def fitted():
    # shared family effects, as the model assumes
    return _fit(Shape("fits", models=2, channels=2, families=100, family_sd=1.0, family_channel_sd=0.2), 3)


@pytest.fixture(scope="module")
def misfit():
    # each model its own family effects (sd 2.0 and 0.1): a family × model interaction the model lacks
    return _fit(
        Shape("misfit", models=2, channels=2, families=100, family_channel_sd=0.2, family_sd_by_model=(2.0, 0.1)), 3
    )


def test_posterior_predictive_stays_quiet_on_a_fit(fitted):
    checks = predictive.posterior_predictive(fitted, seed=1)
    assert checks.columns[:9] == COLUMNS
    check_columns(checks.columns)
    # 2 models × (2 channels × 3 conditions + P0) accuracies, 2 overall and 4 per-channel family spreads
    assert checks.height == 2 * 7 + 2 + 4
    assert ((checks["conf_low"] <= checks["predicted"]) & (checks["predicted"] <= checks["conf_high"])).all()
    spread = checks.filter(pl.col("statistic") == "family_spread")
    assert spread["p_value"].is_between(0.025, 0.975).all(), spread
    assert checks["outside"].sum() <= 1
    assert "checks fall" in predictive.summary_sentence(checks)


def test_posterior_predictive_flags_a_family_by_model_interaction(misfit):
    checks = predictive.posterior_predictive(misfit, seed=1)
    overall = {
        r["model"]: r
        for r in checks.filter((pl.col("statistic") == "family_spread") & (pl.col("channel") == "all")).iter_rows(
            named=True
        )
    }
    # the model shares one family effect: the first model's families spread more than it predicts, the second's less
    assert overall["m00"]["p_value"] < 0.025 and overall["m00"]["outside"]
    assert overall["m01"]["p_value"] > 0.975 and overall["m01"]["outside"]
    sentence = predictive.summary_sentence(checks)
    assert "family spread" in sentence and "outside" in sentence


def test_predictive_from_the_cli_with_a_plot(fitted, tmp_path):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    path = tmp_path / "fit.nc"
    fitted.to_netcdf(str(path))
    runner = CliRunner()
    for what in ("predictive", "prior"):
        plot = tmp_path / f"{what}.svg"
        result = runner.invoke(app, ["posterior", str(path), "--what", what, "--format", "csv", "--plot", str(plot)])
        assert result.exit_code == 0, result.output
        frame = pl.read_csv(result.stdout.encode())
        assert frame.columns[:9] == COLUMNS and "fit_passed" in frame.columns
        assert plot.read_text().startswith("<svg")
    result = runner.invoke(app, ["posterior", str(path), "--what", "reliance", "--plot", str(tmp_path / "x.svg")])
    assert result.exit_code != 0 and "--plot draws the predictive checks" in result.output


def test_calibration_ranks_one_replicate():
    data, _ = simulate_cells(Shape("sbc", models=2, channels=2, families=12), 0)
    cells = predictive.Cells.from_data(data)
    ranks = calibration.replicate(cells, 0, seed=5, draws=150, chains=2, budget=0)
    # 2 models × 2 channels × (reliance, cf accuracy) + the two spreads
    assert ranks.height == 10
    assert set(ranks["quantity"]) == {"reliance", "responsiveness", "family_sd", "family_channel_sd"}
    assert ranks["rank"].is_between(0, calibration.RANKED_DRAWS).all()
    # the same replicate gives the same data and ranks
    again = calibration.replicate(cells, 0, seed=5, draws=150, chains=2, budget=0)
    assert again.drop("seconds").equals(ranks.drop("seconds"))


@pytest.mark.parametrize("trials", [1, 3, predictive.BERNOULLI_SUM_TRIALS, 20])
def test_replicated_counts_follow_the_binomial(trials):
    """Counts drawn as sums of Bernoulli draws (few trials) or by numpy's binomial (more) against
    scipy.stats.binom's probabilities: a chi-square test of 40,000 draws at p = 0.3 and 0.85, and
    never more successes than trials."""
    from scipy import stats

    rng = np.random.default_rng(11)
    probability = np.tile([0.3, 0.85], (20_000, 1))
    counts = predictive._binomial(np.array([trials, trials]), probability, rng)
    assert counts.min() >= 0 and counts.max() <= trials
    for column, p in enumerate((0.3, 0.85)):
        observed = np.bincount(counts[:, column], minlength=trials + 1)
        expected = stats.binom.pmf(np.arange(trials + 1), trials, p) * len(counts)
        keep = expected >= 5  # the chi-square approximation's rule; the rare tail pooled into one bin
        observed = np.append(observed[keep], observed[~keep].sum())
        expected = np.append(expected[keep], expected[~keep].sum())
        if expected[-1] < 5:
            observed, expected = observed[:-1], expected[:-1] * observed[:-1].sum() / expected[:-1].sum()
        assert stats.chisquare(observed, expected).pvalue > 0.001, (trials, p, observed, expected)
