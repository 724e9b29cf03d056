"""Power and minimum detectable effects, checked against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from molp2s_stats.stats import power


def simulate_families(
    probabilities: np.ndarray, shared: float, families: int, datasets: int, rng: np.random.Generator
) -> np.ndarray:
    """Correlated Bernoulli outcomes, shape (datasets, families, outcomes).

    Each outcome of a family follows the family's shared uniform draw with probability
    ``shared`` and its own draw otherwise, so Cov(i, j) = shared² · (min(p_i, p_j) − p_i p_j):
    with equal p the intra-cluster correlation is exactly shared².
    """
    k = len(probabilities)
    common = rng.uniform(size=(datasets, families, 1))
    own = rng.uniform(size=(datasets, families, k))
    follows = rng.uniform(size=(datasets, families, k)) < shared
    draw = np.where(follows, common, own)
    return (draw < probabilities).astype(float)


def exact_covariance(probabilities: np.ndarray, shared: float) -> np.ndarray:
    p = probabilities
    covariance = shared**2 * (np.minimum.outer(p, p) - np.outer(p, p))
    np.fill_diagonal(covariance, p * (1 - p))
    return covariance


def test_rm_variance_with_common_icc_matches_simulation():
    # Every outcome at p = 0.5 and ICC ρ = 0.36 (shared = 0.6): for RM, d = s_A − h_A − s_B + h_B,
    # Var(d) = 4 · 0.25 + 2 · 0.25 · ρ · (+1 +1 −1 −1 −1 −1) = 1 − 0.5 · 0.36 · 2 = 0.64.
    weights, probabilities = power.contrast(
        "reliance_margin", {"source": 0.5, "shuffled": 0.5}, {"source": 0.5, "shuffled": 0.5}, cf_tasks=3
    )
    variance, design_effect = power.contrast_variance(weights, probabilities, icc=0.36)
    assert variance == pytest.approx(0.64)
    assert design_effect == pytest.approx(0.64)
    outcomes = simulate_families(probabilities, 0.6, families=136, datasets=4000, rng=np.random.default_rng(1))
    estimates = (outcomes @ weights).mean(axis=1)
    # SD of a sample SD from 4,000 draws: about 1.1%; allow 4%.
    assert estimates.std() == pytest.approx(math.sqrt(variance / 136), rel=0.04)


def test_power_at_the_mde_matches_simulation():
    families, shared = 136, 0.5
    base = {"source": 0.5, "shuffled": 0.5, "cf": 0.4}
    weights, probabilities = power.contrast("pgr", base, base, cf_tasks=3)
    variance, _ = power.contrast_variance(weights, probabilities, covariance=exact_covariance(probabilities, shared))
    mde = power.minimum_detectable_effect(variance, families)  # pp
    # Give model A the advantage: its source and cf accuracies up by the MDE.
    better = {"source": 0.5 + mde / 100, "shuffled": 0.5, "cf": 0.4 + mde / 100}
    weights, probabilities = power.contrast("pgr", better, base, cf_tasks=3)
    variance_h1, _ = power.contrast_variance(weights, probabilities, covariance=exact_covariance(probabilities, shared))
    outcomes = simulate_families(probabilities, shared, families=families, datasets=3000, rng=np.random.default_rng(2))
    d = outcomes @ weights  # (datasets, families)
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(families))
    rejected = (np.abs(z) > 1.959964).mean()
    # The design variance under H1 is near the H0 one, so the power is near 0.80;
    # Monte Carlo SE of a rate near 0.8 from 3,000 datasets is 0.007: allow 0.04.
    assert variance_h1 == pytest.approx(variance, rel=0.1)
    assert rejected == pytest.approx(0.80, abs=0.04)


def test_families_needed_inverts_the_mde():
    variance = 0.4
    mde = power.minimum_detectable_effect(variance, 200, alpha=0.05, power=0.9)
    assert power.families_needed(variance, mde, alpha=0.05, power=0.9) == 200


def test_design_effect_of_several_cf_tasks_exceeds_one_for_a_single_model_mean():
    # The mean of m cf tasks of one family, Var = v/m · (1 + (m − 1) ρ): the textbook design effect.
    weights = np.full(4, 0.25)
    probabilities = np.full(4, 0.3)
    variance, deff = power.contrast_variance(weights, probabilities, icc=0.2)
    assert deff == pytest.approx(1 + 3 * 0.2)
    assert variance == pytest.approx(0.21 / 4 * 1.6)


def test_bad_inputs():
    with pytest.raises(ValueError):
        power.contrast("cfr", {}, {}, 3)
    with pytest.raises(ValueError):
        power.minimum_detectable_effect(0.2, 100, alpha=1.5)
