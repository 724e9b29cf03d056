"""The vectorised PSIS-LOO against ArviZ's own ``az.loo``, observation by observation."""

import arviz as az
import numpy as np
import pytest

from molp2s_stats.bayes import loo, psis

pytestmark = pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto")  # high k on purpose


def _arviz(log_lik: np.ndarray, posterior: dict):
    result = az.loo(az.from_dict(posterior=posterior, log_likelihood={"y": log_lik}), pointwise=True)
    return result.loo_i.values, result.pareto_k.values


def _ours(log_lik: np.ndarray, posterior: dict):
    return loo.pointwise_loo(az.from_dict(posterior=posterior, log_likelihood={"y": log_lik}))


@pytest.mark.parametrize("chains, draws", [(4, 125), (2, 200), (1, 300), (3, 17)])
def test_equals_arviz_loo_on_heavy_and_light_tails(chains, draws, monkeypatch):
    rng = np.random.default_rng(chains * 1000 + draws)
    observations = 61
    scale = rng.uniform(0.05, 3.0, observations)  # from near-normal weights to Pareto k well above 0.7
    log_lik = -np.abs(rng.standard_t(3, size=(chains, draws, observations))) * scale
    # an AR(1) posterior variable, so that r_eff is below 1 as in a real fit
    mu = np.cumsum(rng.normal(size=(chains, draws)), axis=1) * 0.1 + rng.normal(size=(chains, draws))
    monkeypatch.setattr(psis, "BLOCK", 16)  # 61 observations: blocks of 16 and one of 13
    expected_i, expected_k = _arviz(log_lik, {"mu": mu})
    loo_i, pareto_k = _ours(log_lik, {"mu": mu})
    np.testing.assert_allclose(loo_i, expected_i, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(pareto_k, expected_k, rtol=1e-12, atol=1e-10)


def test_rows_arviz_treats_apart_are_still_arviz():
    """Ties at the cut (a constant row; a row of two values), weights below the smallest float, and
    draws too few for a tail of five all go through ArviZ's own smoothing."""
    rng = np.random.default_rng(7)
    chains, draws = 2, 100
    log_lik = rng.normal(-1.0, 0.3, size=(chains, draws, 6))
    log_lik[..., 0] = -0.5  # every weight equal
    log_lik[..., 1] = np.where(rng.random((chains, draws)) < 0.5, -0.2, -3.0)  # two values: ties across the cut
    log_lik[..., 2] = np.where(
        rng.random((chains, draws)) < 0.95, -1.0, -2000.0
    )  # most weights below the smallest float
    posterior = {"mu": rng.normal(size=(chains, draws))}
    expected_i, expected_k = _arviz(log_lik, posterior)
    loo_i, pareto_k = _ours(log_lik, posterior)
    np.testing.assert_allclose(loo_i, expected_i, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(pareto_k, expected_k, rtol=1e-12, atol=1e-10)
    few = rng.normal(-1.0, 0.5, size=(1, 20, 4))  # 20 draws: a tail of 4, not smoothed (k = inf)
    expected_i, expected_k = _arviz(few, {"mu": rng.normal(size=(1, 20))})
    loo_i, pareto_k = _ours(few, {"mu": rng.normal(size=(1, 20))})
    np.testing.assert_allclose(loo_i, expected_i, rtol=1e-12, atol=1e-10)
    assert np.isinf(pareto_k).all() and np.isinf(expected_k).all()


def test_tail_length_by_hand():
    # S = 500 draws, r_eff 1: min(500 / 5, 3 √500) = min(100, 67.08) → 68; r_eff 0.1: min(100, 212.1) → 100
    assert psis.tail_length(500, 1.0) == 68
    assert psis.tail_length(500, 0.1) == 100


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # ArviZ's own divisions by the zero tail
def test_a_tail_that_rounds_to_zero_is_smoothed_to_nan_as_arviz_does():
    """Log-likelihoods equal to 1e-16: every tail weight minus the cut-off is 0, no grid point of the
    Pareto fit has weight, and ArviZ leaves k the prior's (finite) and the weights NaN."""
    log_lik = -1e-17 * np.random.default_rng(0).random((2, 100, 1))
    posterior = {"mu": np.zeros((2, 100))}
    expected_i, expected_k = _arviz(log_lik, posterior)
    loo_i, pareto_k = _ours(log_lik, posterior)
    assert np.isnan(expected_i).all() and np.isnan(loo_i).all()
    np.testing.assert_allclose(pareto_k, expected_k, rtol=1e-12)
