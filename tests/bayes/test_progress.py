"""A fit shows its progress and says what it will cost before it samples."""

from __future__ import annotations

import io

import pytest

from molp2s_stats.bayes import attempts, health
from molp2s_stats.bayes import fit as bayes_fit
from molp2s_stats.bayes.progress import Progress, status_text
from molp2s_stats.bayes.synthetic import Shape, simulate_cells


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_status_line_says_draws_divergences_time_and_time_left():
    assert status_text(attempt=1, drawn=400, max_draws=2400, divergences=0, elapsed=35.2, left=19.6) == (
        "attempt 1: 400 of at most 2400 draws a chain, 0 divergences, 35 s, about 20 s left"
    )
    assert (
        status_text(attempt=2, drawn=0, max_draws=2400, divergences=0, elapsed=3, left=None, warming_up=True)
        == "attempt 2: warming up, 3 s"
    )
    assert "1 divergence," in status_text(attempt=1, drawn=10, max_draws=20, divergences=1, elapsed=1, left=-4)
    assert status_text(attempt=1, drawn=10, max_draws=20, divergences=1, elapsed=1, left=-4).endswith("about 0 s left")
    # sampling until the gate passes: the time is to the next reading of the gate, and the line says so
    assert status_text(
        attempt=1, drawn=40, max_draws=125, divergences=0, elapsed=2, left=3, stage="LOO's model without family effects"
    ).startswith("LOO's model without family effects: 40 of at most 125 draws a chain")
    assert status_text(attempt=1, drawn=450, max_draws=2400, divergences=0, elapsed=20, left=6.2, reading=650).endswith(
        "20 s, the gate read at 650 draws in about 6 s"
    )


def test_off_a_terminal_progress_is_one_line_every_few_seconds():
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, terminal=False, every=10.0, clock=clock)
    for now, drawn in [(0, 0), (3, 0), (9.9, 100), (10.0, 150), (15, 200), (21, 300)]:
        clock.now = now
        progress.update(
            attempt=1, drawn=drawn, max_draws=2400, divergences=0, elapsed=now, left=30 - now, warming_up=drawn == 0
        )
    progress.say("attempt 1 (first run): …")
    lines = stream.getvalue().split("\n")
    assert "\r" not in stream.getvalue() and lines[-1] == ""
    # at 0 s, at 10 s and at 21 s: never two within 10 s
    assert lines[:3] == [
        "attempt 1: warming up, 0 s, about 30 s left",
        "attempt 1: 150 of at most 2400 draws a chain, 0 divergences, 10 s, about 20 s left",
        "attempt 1: 300 of at most 2400 draws a chain, 0 divergences, 21 s, about 9 s left",
    ]
    assert lines[3] == "attempt 1 (first run): …"


def test_on_a_terminal_progress_is_a_bar_redrawn_in_place():
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, terminal=True, clock=clock)
    for now, drawn in [(0, 600), (0.5, 700), (2, 1200)]:
        clock.now = now
        progress.update(attempt=1, drawn=drawn, max_draws=2400, divergences=2, elapsed=now, left=5)
    progress.close()
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "[######..................] attempt 1: 600 of at most 2400" in text
    assert "[############............] attempt 1: 1200 of at most 2400 draws a chain, 2 divergences" in text


@pytest.fixture(scope="module")
def small_data():
    data, _ = simulate_cells(Shape("progress", models=2, channels=2, families=30), 11)
    return data


def test_a_fit_reports_its_estimate_and_progress_in_lines_off_a_terminal(small_data):
    """The cost estimate comes before sampling, counts the fit's cells, parameters and steps (fixed
    draws, so that the estimate's draws are the fit's), and progress comes in lines. How close the
    estimate's seconds come to the time taken is a measurement, not a test: benchmarks/bench_fit_cost.py
    prints the ratio for every size it fits (a wall-clock bound here failed on a busy CI machine)."""
    stream = io.StringIO()
    progress = Progress(stream, terminal=False, every=0.5)
    estimates, attempt_rows = [], []
    idata = bayes_fit.fit(
        small_data,
        draws=400,
        tune=300,
        chains=4,
        seed=3,
        budget=0,
        progress=progress,
        on_estimate=estimates.append,
        on_attempt=attempt_rows.append,
    )
    (estimate,) = estimates
    assert estimate.cells == small_data.cells.height + small_data.p0.height and estimate.steps == 700
    # condition means 2 × 3, channel spreads 2 × 3, channel deviations 2 × 3 × (2 − 1), P0 means 2, family
    # spread 1 and intercepts 30 − 1, family × channel spread 1 and deviations 60
    assert estimate.parameters == 6 + 6 + 6 + 2 + 1 + 29 + 1 + 60
    assert estimate.seconds > 0 and attempt_rows[0]["seconds"] > 0
    assert idata.posterior.attrs["estimated_seconds"] == pytest.approx(estimate.seconds)
    text = stream.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert lines[0].startswith("attempt 1: warming up, ")
    assert any(" of at most 400 draws a chain, " in line for line in lines)
    assert "budget" in estimate.line(600.0) and f"{estimate.parameters:,} parameters" in estimate.line(600.0)


def test_the_next_attempt_is_costed_from_the_draws_its_ess_asks_for():
    ran = {"chains": 4, "tune": 300, "draws": 400, "target_accept": 0.8, "low_rank": False}
    following = {**ran, "tune": 500, "draws": 2400, "target_accept": 0.9}
    # 70 s for 4 chains × (300 + 400) on 2 cores: 0.05 s per chain-step. The restart stops when its
    # gate passes: ESS 220 at 400 draws asks for 400 × 440 / 220 = 800 draws, not its ceiling of 2,400:
    # 0.05 × 2 rounds × (500 + 800) × 1.3 (a smaller step) = 169 s
    row = {"ess_bulk_min": 220.0, "ess_tail_min": 500.0}
    assert attempts.expected_seconds(70.0, ran, following, row=row, until_passed=True) == pytest.approx(169.0)
    # more chains pooled with these (fixed draws): the whole 2 rounds × (500 + 2,400) × 0.05, no restart factor
    assert attempts.expected_seconds(
        70.0, ran, {**following, "target_accept": 0.8}, row=row, until_passed=False
    ) == pytest.approx(290.0)


def test_a_fit_the_budget_cut_short_says_what_the_next_attempt_would_cost(small_data):
    idata = bayes_fit.fit(small_data, draws=60, tune=60, chains=2, seed=1, budget=1)
    note = attempts.next_attempt_note(idata)
    assert not health.diagnostics(idata)["passed"][0]
    assert note.startswith("The next attempt (") and "would have taken about" in note and "--budget " in note


def test_a_restart_after_divergences_is_priced_by_the_estimate_not_the_diverging_pace():
    # the estimate: 3 s to start, then 1,300 steps a chain in 103 s (4 chains at once): 0.0769 s a step
    estimate = attempts.CostEstimate(
        cells=1000, parameters=100, step_ms=1.0, chains=4, steps=1300, seconds=attempts.START_SECONDS + 100.0
    )
    # 500 warm-up + 1,000 draws: 3 + 1,500 × 100 / 1,300 = 118.4 s; 8 chains run in two rounds of 4
    assert estimate.seconds_for(1500, chains=4) == pytest.approx(3 + 1500 * 100 / 1300)
    assert estimate.seconds_for(1500, chains=8) == pytest.approx(3 + 2 * 1500 * 100 / 1300)
