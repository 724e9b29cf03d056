"""A fit that misses its gate decides what to try next, within its budget, and records every attempt."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from molp2s_stats.bayes import TARGET_ACCEPT, attempts, density, health, points, sampler
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.glossary import check_columns

SETTINGS = {"chains": 4, "tune": 300, "draws": 1200, "target_accept": 0.8, "low_rank": False}
HEALTHY = {"r_hat_max": 1.0, "ess_bulk_min": 900.0, "ess_tail_min": 900.0, "divergences": 0}


@pytest.fixture(autouse=True)
def two_cores(monkeypatch):
    # the cores this process may use (its affinity), not the machine's: a CI runner pinned to 2 of 64
    monkeypatch.setattr(attempts, "usable_cores", lambda: 2)


def test_divergences_restart_with_smaller_steps_then_the_low_rank_mass_matrix():
    action, settings, pool = attempts.next_attempt(HEALTHY, SETTINGS, chains_kept=4, diverged=3)
    assert (settings["target_accept"], settings["tune"], pool) == (0.9, 500, False)
    assert action.startswith("divergences")
    _, settings, _ = attempts.next_attempt(
        HEALTHY, {**SETTINGS, "target_accept": 0.99, "tune": 1000}, chains_kept=4, diverged=1
    )
    assert settings["low_rank"] is True and settings["target_accept"] == 0.99
    assert (
        attempts.next_attempt(HEALTHY, {**SETTINGS, "target_accept": 0.99, "low_rank": True}, chains_kept=4, diverged=1)
        is None
    )


def test_too_few_effective_draws_add_chains_sized_from_the_ess():
    # slowest ESS 200 over 4 chains: 1.25 × 400 / 200 = 2.5 times the draws, so 4 × 1.5 = 6 more
    # chains (a multiple of the 2 cores), pooled with the first 4
    action, settings, pool = attempts.next_attempt(
        {**HEALTHY, "ess_tail_min": 200.0}, SETTINGS, chains_kept=4, diverged=0
    )
    assert (settings["chains"], pool) == (6, True) and settings["target_accept"] == 0.8
    assert action == "more chains (6): ESS 200"
    # ESS 120 over 4 chains of 1,200 draws: 30 effective draws a chain is too few to pool; the chains
    # are made 500 / 120 = 4.17 times longer instead (5,000 draws), not pooled
    action, settings, pool = attempts.next_attempt(
        {**HEALTHY, "ess_bulk_min": 120.0}, SETTINGS, chains_kept=4, diverged=0
    )
    assert (settings["chains"], settings["draws"], pool) == (4, 5000, False)
    assert action == "longer chains: ESS 120 over 4 chains"
    # ESS 450 of 8 chains: 500 / 450 = 1.11, 8 × 0.11 = 0.9 → 1, rounded up to 2
    assert (
        attempts.next_attempt({**HEALTHY, "ess_bulk_min": 450.0}, SETTINGS, chains_kept=8, diverged=0)[1]["chains"] == 2
    )
    # enough ESS but R-hat 1.02: at least double the chains, pooled
    action, settings, pool = attempts.next_attempt({**HEALTHY, "r_hat_max": 1.02}, SETTINGS, chains_kept=4, diverged=0)
    assert (action, settings["chains"], pool) == ("more chains (4): R-hat 1.020", 4, True)
    # still high after that: the chains were too short; start again with twice the warm-up and draws
    action, settings, pool = attempts.next_attempt(
        {**HEALTHY, "r_hat_max": 1.02}, settings, chains_kept=8, diverged=0, previous=action, first_chains=4
    )
    assert (settings["chains"], settings["tune"], settings["draws"], pool) == (4, 600, 2400, False)
    assert action == "R-hat still high: longer chains"


def _posterior(chains, draws, value):
    return az.from_dict(
        posterior={"x": np.full((chains, draws), value)}, sample_stats={"diverging": np.zeros((chains, draws), bool)}
    )


def test_pooled_chains_are_renumbered():
    pooled = sampler.pool_chains(_posterior(2, 5, 1.0), _posterior(3, 5, 2.0))
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
    # a budget far above the ~100 s it needs on 2 cores: the budget is wall time, and a busy machine's
    # clock must not decide this behaviour test (CI, 2026-12-06, cut it short at 120 s); the cut itself is
    # tested with budget=0 below
    idata = bayes_fit.fit(tiny_data, draws=100, tune=200, chains=2, seed=4, budget=3600, on_attempt=seen.append)
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


def test_a_fit_keeps_the_attempt_that_passed_over_an_earlier_one_with_more_effective_draws(tiny_data, monkeypatch):
    # The gate's figures of the three attempts of the leaderboard grid's 7 × 15 × 136 fit, seed 6
    # (2026-12-04): a first run missed on R-hat; 4 more chains pooled with it missed again, with
    # ESS 1,159; a fresh start with longer chains passed, with ESS 476. The fit saved the second
    # attempt's draws, which had the most effective draws, and so reported a failure.
    def row(r_hat, bulk, tail, passed):
        return {
            "r_hat_max": r_hat,
            "ess_bulk_min": bulk,
            "ess_bulk_min_parameter": "family_channel_sd",
            "ess_tail_min": tail,
            "divergences": 0,
            "bfmi_min": 0.8,
            "passed": passed,
        }

    first, pooled, fresh = (
        row(1.0128, 599.4, 1046.6, False),
        row(1.0107, 1159.2, 2048.2, False),
        row(1.0059, 475.9, 1067.8, True),
    )
    # each attempt's draws are its number, so the saved draws say which attempt they came from
    monkeypatch.setattr(
        bayes_fit,
        "sample_until_passed",
        lambda data, *, attempt, chains, **_: (
            _posterior(chains, 10, float(attempt)),
            first if attempt == 1 else fresh,
        ),
    )
    monkeypatch.setattr(
        bayes_fit, "sample", lambda data, *, attempt, chains, **_: _posterior(chains, 10, float(attempt))
    )
    monkeypatch.setattr(health, "gate", lambda idata, *_: pooled)  # read only on the pooled chains
    idata = bayes_fit.fit(tiny_data, seed=6, budget=600)
    table = health.attempts(idata)
    assert table["action"].to_list() == ["first run", "more chains (4): R-hat 1.013", "R-hat still high: longer chains"]
    assert table["final"].to_list() == [False, False, True]
    assert np.unique(idata.posterior["x"].values).tolist() == [3.0]
    assert health.diagnostics(idata)["passed"][0] is True


# --- sampling until the gate passes (the default: no --draws) --------------------------------------


def test_the_next_reading_is_sized_from_the_slowest_ess():
    # ESS 300 at 400 draws a chain: 440 / 300 = 1.467, × 1.05 = 1.54, × 400 = 616 → 650 (a multiple of 50)
    assert sampler.next_checkpoint({"ess_bulk_min": 300.0, "ess_tail_min": 352.0, "r_hat_max": 1.0}, 400, 2400) == 650
    # ESS 353 at 1,050: 440 / 353 × 1.05 = 1.309, × 1,050 = 1,374 → 1,400
    assert sampler.next_checkpoint({"ess_bulk_min": 900.0, "ess_tail_min": 353.0, "r_hat_max": 1.0}, 1050, 2400) == 1400
    # ESS 184 at 400 asks for 2.51 ×: at most twice as many draws a reading (800)
    assert sampler.next_checkpoint({"ess_bulk_min": 184.0, "ess_tail_min": 252.0, "r_hat_max": 1.0}, 400, 2400) == 800
    # R-hat 1.015 with ESS enough: (1.015 − 1) / 0.01 = 1.5, × 1.05 = 1.575, × 600 = 945 → 950
    row = {"ess_bulk_min": 900.0, "ess_tail_min": 900.0}
    assert sampler.next_checkpoint({**row, "r_hat_max": 1.015}, 600, 2400) == 950
    # both met (a reading that passed without the ESS margin): 15% more (460 → 500)
    assert sampler.next_checkpoint({**row, "r_hat_max": 1.005}, 400, 2400) == 500
    # never past the most a run may draw
    assert sampler.next_checkpoint({"ess_bulk_min": 10.0, "ess_tail_min": 10.0, "r_hat_max": 1.2}, 2000, 2400) == 2400


def test_the_wait_doubles_in_the_warm_up_then_follows_the_pace():
    assert sampler.seconds_to(400, [(0.0, 0)]) == 2.0
    assert sampler.seconds_to(400, [(0.0, 0), (2.0, 0), (6.0, 0), (14.0, 0), (24.0, 0)]) == 10.0
    # 10 draws a second since the first look that found draws: the 200 still to come take 20 s (× 1.03)
    assert sampler.seconds_to(400, [(0.0, 0), (10.0, 0), (20.0, 100), (30.0, 200)]) == pytest.approx(20.6)
    # one look with draws only: the pace across the end of the warm-up, at most 5 s
    assert sampler.seconds_to(400, [(0.0, 0), (10.0, 100)]) == 5.0


class _Background:
    """nutpie's background sampler, replayed from a finished trace of flat points (what nutpie stores):
    each wait lets the chains run on by ``pace`` draws, however long it was asked to wait (so timing
    cannot matter)."""

    def __init__(self, trace: az.InferenceData, pace: int):
        self.trace, self.pace, self.drawn, self.paused, self.cancelled = trace, pace, 0, 0, False
        self.total = trace.posterior.sizes["draw"]

    def _so_far(self):
        # chains at different points: the others one draw ahead of chain 0, the rest NaN, as nutpie pads them
        ahead = min(self.drawn + 1, self.total)
        post = self.trace.posterior.isel(draw=slice(0, ahead)).copy(deep=True)
        if ahead > self.drawn:
            post[points.POINT][0, self.drawn :] = np.nan
        return az.InferenceData(posterior=post, sample_stats=self.trace.sample_stats.isel(draw=slice(0, ahead)))

    def wait(self, timeout=None):
        self.drawn = min(self.total, self.drawn + self.pace)
        if self.drawn < self.total:
            raise TimeoutError("Timeout while waiting for sampler to finish")
        return self.trace

    def inspect(self):
        return self._so_far()

    def pause(self):
        self.paused += 1

    def resume(self):
        pass

    def cancel(self):
        self.cancelled = True


@pytest.fixture(scope="module")
def long_points(tiny_data):
    """A finished run as nutpie returns it (flat points). Seed 10: no divergence in 1,500 draws a chain,
    and an ESS that 400 draws a chain do not reach (the gate passes at the next reading, 500); most seeds
    diverge somewhere in 1,500 draws on this study."""
    trace = sampler._nutpie(
        density.compile_density(tiny_data),
        draws=1500,
        tune=300,
        chains=4,
        seed=10,
        target_accept=TARGET_ACCEPT,
        low_rank=False,
    )
    assert not trace.sample_stats["diverging"].any()
    return trace


@pytest.fixture(scope="module")
def long_trace(long_points, tiny_data):
    """The same run, its draws named (what ``sampler.sample`` returns)."""
    return points.reported_trace(long_points, density.density(tiny_data))


@pytest.mark.parametrize("pace", [37, 160, 5000])
def test_sampling_stops_at_the_first_reading_that_passes_however_fast_the_chains_run(
    long_points, long_trace, tiny_data, monkeypatch, pace
):
    import nutpie

    backgrounds = []
    monkeypatch.setattr(
        nutpie, "sample", lambda *a, **k: backgrounds.append(_Background(long_points, pace)) or backgrounds[-1]
    )
    kept, row = sampler.sample_until_passed(tiny_data, max_draws=1500, tune=300, chains=4, seed=10)
    drawn = kept.posterior.sizes["draw"]
    # read on the first 400 draws of each chain, then as many more as the ESS asked for
    expected = sampler.MIN_DRAWS
    while True:
        reading = health.gate(sampler.first_draws(long_trace, expected))
        if sampler.passed_with_margin(reading) or reading["divergences"] or expected == 1500:
            break
        expected = sampler.next_checkpoint(reading, expected, 1500)
    assert sampler.MIN_DRAWS < drawn == expected < 1500 and row == health.gate(kept) == reading
    assert row["passed"] and min(row["ess_bulk_min"], row["ess_tail_min"]) >= 440
    # the kept draws are the first ones of every chain, none padded
    np.testing.assert_array_equal(
        kept.posterior["condition_mean"].values, long_trace.posterior["condition_mean"].values[:, :drawn]
    )
    # chains still running are stopped; at a pace of 5,000 they had finished before the first look
    assert backgrounds[0].cancelled == (backgrounds[0].drawn < 1500) == (pace < 5000)


def test_a_divergence_ends_the_run_at_the_first_look_that_sees_it(long_points, tiny_data, monkeypatch):
    import nutpie

    diverged = long_points.copy()
    diverged.sample_stats["diverging"][1, 100] = True  # chain 1 runs a draw ahead: not among the first look's 100
    backgrounds = []
    monkeypatch.setattr(
        nutpie, "sample", lambda *a, **k: backgrounds.append(_Background(diverged, 100)) or backgrounds[-1]
    )
    kept, row = sampler.sample_until_passed(tiny_data, max_draws=1500, tune=300, chains=4, seed=10)
    # 100 draws a look: the first look sees 100 common draws (the divergence, at chain 1's 101st, beyond them), the
    # second 200 with it; the run stops there, keeping the draws up to it, not at its first gate reading (400)
    assert kept.posterior.sizes["draw"] == 101 and row["divergences"] == 1  # the draws up to the divergence
    assert backgrounds[0].paused and backgrounds[0].cancelled


def test_a_default_fit_samples_until_it_passes_and_says_so():
    # 2 models × 2 channels × 80 families, seed 5 (2026-12-02): the first run diverged by its first
    # reading (400 draws a chain) and stopped there; the restart at 0.9 passed at 600
    data, _ = simulate_cells(Shape("small", models=2, channels=2, families=80), 11)
    idata = bayes_fit.fit(data, chains=4, seed=5)
    table = health.attempts(idata)
    final = health.diagnostics(idata).row(0, named=True)
    assert final["passed"] and table["passed"][-1] and not any(table["passed"][:-1])
    # every fresh start without divergences stopped between the least and the most it may draw
    fresh = table.filter(~table["action"].str.starts_with("more chains") & (table["divergences"] == 0))
    assert fresh["draws_per_chain"].is_between(sampler.MIN_DRAWS, sampler.AUTO_DRAWS).all()
    assert table["draws_per_chain"][-1] == idata.posterior.sizes["draw"]
    diverged = table.filter(table["divergences"] > 0)
    assert (diverged["draws_per_chain"] < sampler.AUTO_DRAWS).all()  # a divergence ends a run when seen
    assert idata.posterior.attrs["draws"] == 0  # saved as "until the gate passed"
    if not table["action"][-1].startswith("more chains"):
        assert min(final["ess_bulk_min"], final["ess_tail_min"]) >= sampler.STOP_MARGIN * health.ESS_MIN
    # (that the same seed stops at the same draw, however fast the chains run: the replayed runs above)
