"""The vectorised R-hat and ESS kernels against ArviZ's own, parameter by parameter.

Reference: ArviZ 0.23's ``rhat(method="rank")``, ``ess(method="bulk")`` and
``ess(method="tail")`` (Vehtari et al. 2021), called on each parameter's (chains, draws)
array; ours computes every parameter at once.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from molp2s_stats.bayes import convergence


def _chains(seed: int, parameters: int = 40, chains: int = 4, draws: int = 301) -> np.ndarray:
    """AR(1) chains with autocorrelations from −0.5 to 0.98 and, for some, chains offset from each other."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(-0.5, 0.98, parameters)
    x = rng.normal(size=(parameters, chains, draws))
    for t in range(1, draws):
        x[:, :, t] += phi[:, None] * x[:, :, t - 1]
    x += rng.normal(0, 1, (parameters, chains, 1)) * (np.arange(parameters) % 3 == 0)[:, None, None]
    x[0] = 2.5  # a constant parameter (a single channel's zero-sum deviation): R-hat NaN, ESS the draw count
    x[1] = np.round(x[1])  # ties, for the ranks
    return x


@pytest.mark.parametrize("seed", [0, 1])
def test_rhat_and_ess_equal_arviz(seed):
    x = _chains(seed)
    ours = {"rhat": convergence.rhat(x), "bulk": convergence.ess_bulk(x), "tail": convergence.ess_tail(x)}
    with np.errstate(divide="ignore", invalid="ignore"):
        theirs = {
            "rhat": np.array([az.rhat(a, method="rank") for a in x]),
            "bulk": np.array([az.ess(a, method="bulk") for a in x]),
            "tail": np.array([az.ess(a, method="tail") for a in x]),
        }
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-8, equal_nan=True, err_msg=name)
    # the shared computation gives the same three figures
    for ours_together, name in zip(convergence.summary(x), ("rhat", "bulk", "tail")):
        np.testing.assert_array_equal(ours_together, ours[name])
    # ArviZ counts the split draws: 4 chains × 2 halves × 150 (the middle draw of 301 is dropped)
    assert np.isnan(ours["rhat"][0]) and ours["bulk"][0] == 1200


def test_summary_in_blocks_equals_the_whole_and_reads_strided_views(monkeypatch):
    # 40 parameters in blocks of 7 (the last one short), passed as the strided view
    # health.parameter_diagnostics makes of a variable's (chains, draws, parameters) array
    x = _chains(5)
    whole = (convergence.rhat(x), convergence.ess_bulk(x), convergence.ess_tail(x))
    strided = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 0, 2)), 2, 0)
    assert not strided.flags.c_contiguous
    monkeypatch.setattr(convergence, "BLOCK", 7)
    for blocked, expected in zip(convergence.summary(strided), whole):
        np.testing.assert_allclose(blocked, expected, rtol=1e-12)  # batched FFTs: rounding only
    assert all(len(part) == 0 for part in convergence.summary(x[:0]))


def test_even_number_of_draws_and_two_chains():
    x = _chains(3, parameters=10, chains=2, draws=200)
    np.testing.assert_allclose(convergence.ess_bulk(x), [az.ess(a, method="bulk") for a in x], rtol=1e-8)
    np.testing.assert_allclose(convergence.rhat(x)[1:], [az.rhat(a, method="rank") for a in x[1:]], rtol=1e-8)


@pytest.mark.parametrize("chains, draws", [(1, 40), (2, 9), (3, 5), (2, 4), (2, 3), (4, 12)])
def test_short_and_single_chains_as_arviz_has_them(chains, draws):
    # one chain: no R-hat (NaN); fewer than 4 draws: NaN; 4–9 draws: one autocorrelation pair
    x = _chains(4, parameters=6, chains=chains, draws=draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(
            convergence.rhat(x), [az.rhat(a, method="rank") for a in x], rtol=1e-8, equal_nan=True
        )
        np.testing.assert_allclose(
            convergence.ess_bulk(x), [az.ess(a, method="bulk") for a in x], rtol=1e-8, equal_nan=True
        )
        np.testing.assert_allclose(
            convergence.ess_tail(x), [az.ess(a, method="tail") for a in x], rtol=1e-8, equal_nan=True
        )


def test_a_nan_draw_gives_nan():
    x = _chains(5, parameters=3)
    x[2, 1, 7] = np.nan
    assert np.isnan(convergence.rhat(x)[2]) and np.isnan(convergence.ess_bulk(x)[2])
    assert np.isfinite(convergence.rhat(x)[1:2]).all()
