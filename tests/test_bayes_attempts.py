"""A fit that misses its gate decides what to try next, within its budget, and records every attempt."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes import health
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.glossary import check_columns

SETTINGS = {"chains": 4, "tune": 300, "draws": 1200, "target_accept": 0.8, "low_rank": False}
HEALTHY = {"r_hat_max": 1.0, "ess_bulk_min": 900.0, "ess_tail_min": 900.0, "divergences": 0}


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    monkeypatch.setattr(bayes_fit.os, "cpu_count", lambda: 2)


def test_divergences_restart_with_smaller_steps_then_the_low_rank_mass_matrix():
    action, settings, pool = bayes_fit.next_attempt(HEALTHY, SETTINGS, chains_kept=4, diverged=3)
    assert (settings["target_accept"], settings["tune"], pool) == (0.9, 500, False)
    assert action.startswith("divergences")
    _, settings, _ = bayes_fit.next_attempt(HEALTHY, {**SETTINGS, "target_accept": 0.99, "tune": 1000},
                                            chains_kept=4, diverged=1)
    assert settings["low_rank"] is True and settings["target_accept"] == 0.99
    assert bayes_fit.next_attempt(HEALTHY, {**SETTINGS, "target_accept": 0.99, "low_rank": True},
                                  chains_kept=4, diverged=1) is None


def test_too_few_effective_draws_add_chains_sized_from_the_ess():
    # slowest ESS 200 over 4 chains: 1.25 × 400 / 200 = 2.5 times the draws, so 4 × 1.5 = 6 more
    # chains (a multiple of the 2 cores), pooled with the first 4
    action, settings, pool = bayes_fit.next_attempt({**HEALTHY, "ess_tail_min": 200.0}, SETTINGS, chains_kept=4,
                                                    diverged=0)
    assert (settings["chains"], pool) == (6, True) and settings["target_accept"] == 0.8
    assert action == "more chains (6): ESS 200"
    # ESS 120 over 4 chains of 1,200 draws: 30 effective draws a chain is too few to pool; the chains
    # are made 500 / 120 = 4.17 times longer instead (5,000 draws), not pooled
    action, settings, pool = bayes_fit.next_attempt({**HEALTHY, "ess_bulk_min": 120.0}, SETTINGS, chains_kept=4,
                                                    diverged=0)
    assert (settings["chains"], settings["draws"], pool) == (4, 5000, False)
    assert action == "longer chains: ESS 120 over 4 chains"
    # ESS 450 of 8 chains: 500 / 450 = 1.11, 8 × 0.11 = 0.9 → 1, rounded up to 2
    assert bayes_fit.next_attempt({**HEALTHY, "ess_bulk_min": 450.0}, SETTINGS, chains_kept=8, diverged=0)[1]["chains"] == 2
    # enough ESS but R-hat 1.02: at least double the chains, pooled
    action, settings, pool = bayes_fit.next_attempt({**HEALTHY, "r_hat_max": 1.02}, SETTINGS, chains_kept=4,
                                                    diverged=0)
    assert (action, settings["chains"], pool) == ("more chains (4): R-hat 1.020", 4, True)
    # still high after that: the chains were too short; start again with twice the warm-up and draws
    action, settings, pool = bayes_fit.next_attempt({**HEALTHY, "r_hat_max": 1.02}, settings, chains_kept=8,
                                                    diverged=0, previous=action, first_chains=4)
    assert (settings["chains"], settings["tune"], settings["draws"], pool) == (4, 600, 2400, False)
    assert action == "R-hat still high: longer chains"


def _posterior(chains, draws, value):
    return az.from_dict(posterior={"x": np.full((chains, draws), value)},
                        sample_stats={"diverging": np.zeros((chains, draws), bool)})


def test_pooled_chains_are_renumbered():
    pooled = bayes_fit.pool_chains(_posterior(2, 5, 1.0), _posterior(3, 5, 2.0))
    assert pooled.posterior.sizes == {"chain": 5, "draw": 5}
    assert pooled.posterior["x"].values[:, 0].tolist() == [1, 1, 2, 2, 2]
    assert pooled.posterior.chain.values.tolist() == [0, 1, 2, 3, 4]


@pytest.fixture(scope="module")
def tiny_data():
    data, _ = simulate_cells(Shape("tiny", models=2, channels=2, families=30), 11)
    return data


def test_a_fit_made_to_miss_the_gate_is_extended_and_records_each_attempt(tiny_data, tmp_path):
    # 2 chains × 100 draws cannot reach an ESS of 400: the fit must lengthen or add chains until it passes
    seen = []
    idata = bayes_fit.fit(tiny_data, draws=100, tune=200, chains=2, seed=4, budget=120, on_attempt=seen.append)
    table = health.attempts(idata)
    check_columns(table.columns)
    assert table.height == len(seen) >= 2
    assert table["attempt"].to_list() == list(range(1, table.height + 1))
    assert table["action"][0] == "first run" and not table["passed"][0]
    assert table["final"].to_list() == [False] * (table.height - 1) + [True]
    final = health.diagnostics(idata).row(0, named=True)
    # the saved draws are the last attempt's pool, and the gate's figures agree with it
    assert final["chains"] == table["chains_kept"][-1] and final["attempts"] == table.height
    assert final["ess_bulk_min"] == pytest.approx(table["ess_bulk_min"][-1])
    assert final["passed"] == table["passed"][-1]
    # it finishes its own job: this one (2026-12-01) restarted at target acceptance 0.9 after a divergence,
    # lengthened its chains (33 effective draws over 2 chains), then added 6 chains and passed
    assert final["passed"], table
    extended = table.filter(table["action"].str.starts_with("more chains"))
    assert extended.height == 0 or extended["chains_kept"][0] > extended["chains"][0]
    # the recorded gate is the saved draws' own: recomputed on the float32 draws it agrees
    again = health.gate(idata)
    assert again["divergences"] == final["divergences"] and again["passed"] == final["passed"]
    assert again["ess_bulk_min"] == pytest.approx(final["ess_bulk_min"], rel=0.05)
    assert again["r_hat_max"] == pytest.approx(final["r_hat_max"], abs=0.002)
    # the attempts survive the save
    path = tmp_path / "fit.nc"
    idata.to_netcdf(str(path))
    assert health.attempts(az.from_netcdf(str(path))).equals(table)
    assert "attempt 1 (first run): 2 chains × (200 + 100)" in health.attempt_line(seen[0])


def test_no_budget_means_one_attempt(tiny_data):
    idata = bayes_fit.fit(tiny_data, draws=100, tune=100, chains=2, seed=1, budget=0)
    assert health.attempts(idata).height == 1
    assert health.diagnostics(idata)["passed"][0] is False
    assert "It stopped after 1 attempt " in health.failure_message(health.diagnostics(idata).row(0, named=True))
