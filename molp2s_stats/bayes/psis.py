"""PSIS-LOO (Vehtari et al. 2017, 2024) of many observations at once, as ArviZ 0.23 computes it.

ArviZ's ``az.loo`` smooths each observation's importance weights in a Python loop (one
``_psislw`` call per observation): on the default data's 85,856 binomial cells of two
models that was 28 s of the report's fit. The steps are the same for every observation
(the right tail is the largest M of S weights, M fixed by S and the relative efficiency),
so they run here on a block of observations at a time in numpy. The figures equal
``az.loo(pointwise=True)``'s up to rounding (a few units in the last place; tests/bayes/test_psis.py); an observation whose tail
is not exactly M draws long (ties at the cut, or weights below the smallest float) goes
through ``az.psislw`` itself.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import arviz as az
import numpy as np
from scipy.special import logsumexp

from .convergence import usable_cores

BLOCK = 2000  # observations at a time: the generalised Pareto fit's temporaries are block × ~40 × M
PRIOR_B, PRIOR_K = 3, 10  # the empirical-Bayes fit's constants, as in Zhang & Stephens (2009) and ArviZ


def relative_efficiency(posterior) -> float:
    """``az.loo``'s r_eff: the mean ESS (method "mean") over every posterior variable, per draw."""
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    if chains == 1:
        return 1.0
    ess = az.ess(posterior, method="mean")
    return float(np.hstack([ess[v].values.ravel() for v in ess.data_vars]).mean() / (chains * draws))


def tail_length(draws: int, reff: float) -> int:
    return int(np.ceil(min(draws / 5.0, 3 * (draws / reff) ** 0.5)))


def loo_pointwise(log_likelihood: np.ndarray, reff: float) -> tuple[np.ndarray, np.ndarray]:
    """(elpd_loo_i, Pareto k) of each row of ``log_likelihood`` (observations × draws)."""
    log_likelihood = np.asarray(log_likelihood, dtype=float)
    loo_i = np.empty(log_likelihood.shape[0])
    pareto_k = np.empty(log_likelihood.shape[0])

    def block(at: int) -> None:
        rows = slice(at, at + BLOCK)
        weights, pareto_k[rows] = smoothed_log_weights(-log_likelihood[rows], reff)
        loo_i[rows] = logsumexp(weights + log_likelihood[rows], axis=1)

    # numpy lets go of the GIL inside its array loops, so blocks on threads use every core
    with ThreadPoolExecutor(max_workers=usable_cores()) as pool:
        list(pool.map(block, range(0, log_likelihood.shape[0], BLOCK)))
    return loo_i, pareto_k


def smoothed_log_weights(log_weights: np.ndarray, reff: float) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed, truncated, normalised log weights and the tail's shape k, row by row."""
    x = log_weights - log_weights.max(axis=1, keepdims=True)
    draws = x.shape[1]
    m = tail_length(draws, reff)
    if draws < m + 2:  # too few draws to cut a tail at all
        smoothed, k = az.psislw(log_weights, reff)
        return smoothed, k
    # only the largest m + 1 weights need their order: a partition, then a sort of those
    top = np.argpartition(x, draws - m - 1, axis=1)[:, -m - 1 :]
    order = np.take_along_axis(top, np.argsort(np.take_along_axis(x, top, axis=1), axis=1), axis=1)
    ordered = np.take_along_axis(x, order, axis=1)  # the largest m + 1, ascending
    cutoff = np.maximum(ordered[:, 0], np.log(np.finfo(float).tiny))
    # rows whose tail is not the last m sorted draws (ties at the cut, a clamped cut-off) are ArviZ's
    regular = (x > cutoff[:, None]).sum(axis=1) == m
    k = np.full(x.shape[0], np.inf)
    if m > 4 and regular.any():
        rows = np.flatnonzero(regular)
        exp_cutoff = np.exp(cutoff[rows])[:, None]
        tail = np.exp(ordered[rows, -m:]) - exp_cutoff  # ascending
        k[rows], sigma = generalised_pareto_fit(tail)
        probabilities = np.arange(0.5, m) / m
        smoothed = np.log(_generalised_pareto_quantile(probabilities, k[rows], sigma) + exp_cutoff)
        fitted = np.isfinite(k[rows])  # no smoothing where the fit failed
        replaced = x[rows]
        positions = order[rows, -m:]
        np.put_along_axis(
            replaced,
            positions,
            np.where(fitted[:, None], smoothed, np.take_along_axis(replaced, positions, axis=1)),
            axis=1,
        )
        replaced[fitted[:, None] & (replaced > 0)] = 0.0  # truncated at the largest raw weight
        x[rows] = replaced
    x -= logsumexp(x, axis=1, keepdims=True)
    irregular = np.flatnonzero(~regular)
    if irregular.size:
        x[irregular], k[irregular] = az.psislw(log_weights[irregular], reff)
    return x, k


def generalised_pareto_fit(tail: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zhang & Stephens' (2009) empirical-Bayes estimate of the generalised Pareto (k, σ) of each
    row of ``tail`` (sorted ascending, all > 0), with the weakly informative prior on k that
    ArviZ and the loo R package add (Vehtari et al. 2017, appendix C)."""
    n = tail.shape[1]
    m_est = 30 + int(n**0.5)
    grid = 1 - np.sqrt(m_est / (np.arange(1, m_est + 1, dtype=float) - 0.5))
    with np.errstate(divide="ignore", invalid="ignore"):  # a tail that rounds to 0: handled below
        b = grid[None, :] / (PRIOR_B * tail[:, int(n / 4 + 0.5) - 1, None]) + 1 / tail[:, -1, None]
        k_grid = np.log1p(-b[:, :, None] * tail[:, None, :]).mean(axis=2)
        profile = n * (np.log(-(b / k_grid)) - k_grid - 1)
    # 1 / Σ_j exp(L_j − L_i), ArviZ's form, is the softmax of L (equal to rounding; an overflow-free exp)
    weights = np.exp(profile - logsumexp(profile, axis=1, keepdims=True))
    weights = np.where(weights >= 10 * np.finfo(float).eps, weights, 0.0)  # negligible (and NaN) weights dropped
    total = weights.sum(axis=1, keepdims=True)
    # no weight left (a tail that rounds to 0): ArviZ's sum over no grid point, b = 0, so k is the
    # prior's alone and σ is NaN, which leaves the row's smoothed weights NaN as ArviZ's are
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    b_post = np.where(weights > 0, b * weights, 0.0).sum(axis=1)  # dropped grid points drop their b too
    k_post = np.log1p(-b_post[:, None] * tail).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = -k_post / b_post
    return (n * k_post + PRIOR_K * 0.5) / (n + PRIOR_K), sigma


def _generalised_pareto_quantile(probabilities: np.ndarray, k: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """The generalised Pareto quantiles at ``probabilities`` (all in (0, 1)) of each row's (k, σ)."""
    k, sigma = k[:, None], sigma[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        near_zero = np.abs(k) < np.finfo(float).eps
        general = np.expm1(-k * np.log1p(-probabilities)) / np.where(near_zero, 1.0, k)
        x = np.where(near_zero, -np.log1p(-probabilities), general) * sigma
    return np.where(sigma > 0, x, np.nan)
