"""Adding a model to a fitted leaderboard: the chains start from the saved fit, and the posterior is a cold fit's."""

from __future__ import annotations

import numpy as np
import pytest

from molp2s_stats.bayes import attempts, density, health, posterior, sampler
from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.errors import UsageError


@pytest.fixture(scope="module")
def leaderboard():
    data, _ = simulate_cells(Shape("warm", models=3, channels=2, families=40), 21)
    return data


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("pairs", ["as read off the counts", "centred on their family"])
def test_a_point_packed_from_what_it_reports_is_the_same_point(leaderboard, seed, pairs, monkeypatch):
    if pairs == "centred on their family":  # every pair shifted by its family's intercept (nested_shift)
        lam = np.linspace(0.5, 1.0, len(leaderboard.family_channels))
        monkeypatch.setattr(density, "family_centredness", lambda counts: (0.875, lam))
    model = density.density(leaderboard)
    assert model.pair_shift.any() == (pairs == "centred on their family")
    x = density.initial_point(model, seed) + np.random.default_rng(seed).normal(0, 0.5, model.ndim)
    reported = model.reported(x)
    y = density.pack(model, density.effects_of(reported))
    # the same draws (a signed spread's sign may flip with its deviations: the same point of the model)
    again = model.reported(y)
    for name in reported:
        np.testing.assert_allclose(again[name], reported[name], rtol=1e-9, atol=1e-9, err_msg=name)
    evaluate = density.log_density_function(model)
    assert evaluate(y)[0] == pytest.approx(evaluate(x)[0], rel=1e-6)


def test_zero_sum_coordinates_round_trip():
    free = np.random.default_rng(3).normal(size=(2, 5))
    np.testing.assert_allclose(density._zero_sum_free(density._zero_sum(free, np)), free, atol=1e-12)


@pytest.fixture(scope="module")
def fits(leaderboard):
    before = bayes_data.only_models(leaderboard, leaderboard.models[:-1])
    saved = bayes_fit.fit(before, seed=1)
    cold = bayes_fit.fit(leaderboard, seed=2)
    warm = bayes_fit.fit(leaderboard, seed=2, warm_start=saved)
    return saved, cold, warm


def test_the_warm_start_begins_in_the_saved_posterior(leaderboard, fits):
    saved, _, _ = fits
    compiled = density.compile_density(leaderboard)
    warm = sampler.WarmStart.from_fit(saved, compiled)
    assert warm.carried == {"models": 2, "families": len(leaderboard.families)}
    assert warm.points.shape == (sampler.WARM_POINTS, compiled.model.ndim)
    start = compiled.model.reported(warm.initial_points(5))
    # the models the saved fit had start at one of its draws; the new one at the usual jitter
    cells = saved.posterior["cell"].values.reshape(-1, *saved.posterior["cell"].shape[2:])
    assert np.min(np.abs(cells - start["cell"][:2]).max(axis=(1, 2, 3))) < 1e-5
    assert warm.step_size == pytest.approx(float(np.median(saved.sample_stats["step_size"].values)))


def test_a_warm_fit_has_the_cold_fits_posterior_within_monte_carlo_error(fits):
    saved, cold, warm = fits
    first = health.attempts(warm).row(0, named=True)
    assert first["action"] == "warm start" and first["tune"] == sampler.WARM_TUNE
    assert warm.posterior.attrs["warm_start"] == 1 and cold.posterior.attrs["warm_start"] == 0
    # the gate is the cold fit's: both passed it
    assert health.diagnostics(cold)["passed"][0] and health.diagnostics(warm)["passed"][0]
    # every model × condition × channel cell and both spreads: the posterior means differ by no more than
    # their Monte Carlo errors allow (4.5 standard errors of the difference, over 20 quantities)
    for name in ("cell", "family_sd", "family_channel_sd"):
        difference, error = posterior.mean_differences(cold, warm, name)
        assert (difference <= 4.5 * error).all(), (name, difference / error)
    # and it says what it saved against a cold fit's time scaled from the saved one
    assert attempts.warm_start_note(warm, saved).startswith("warm start: the fit took ")


def test_a_warm_start_needs_the_same_channels(leaderboard, fits):
    saved, _, _ = fits
    other = bayes_data.only_models(leaderboard, leaderboard.models)
    other = bayes_data.index(
        other.cells.filter(other.cells["channel"] == other.channels[0]).select(
            "model", "channel", "condition", "family_id", "successes", "trials"
        ),
        other.p0.select("model", "family_id", "successes", "trials"),
        n_candidates=other.n_candidates,
    )
    with pytest.raises(UsageError, match="other channels"):
        sampler.WarmStart.from_fit(saved, density.compile_density(other))
