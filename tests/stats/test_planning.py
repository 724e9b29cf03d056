"""Study designs: closed-form cases worked by hand, the study's own design, budgets and their errors."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from molp2s_stats.errors import UsageError
from molp2s_stats.glossary import check_columns
from molp2s_stats.stats import planning
from tests.stats.test_variance import simulate


def stated(**overrides) -> list[planning.ChannelInputs]:
    arguments = {"between": 100.0, "task": 300.0, "sample": None, "cf_tasks": 3, "families": 0} | overrides
    return [planning.assumed_inputs("pgr", **arguments)]


def test_golden_designs_of_a_stated_study_worked_by_hand():
    # PGR with B = 100 pp² = 0.01 and a cf answer's task variance 300 pp² = 0.03, weighed (½)²/m:
    #   m = 3: V = 0.01 + 0.25 · 0.03 / 3 = 0.0125 → F = ⌈1.96² · 0.0125 / 0.02²⌉ = ⌈120.05⌉ = 121
    #   m = 2: V = 0.01375 → ⌈132.05⌉ = 133;   m = 1: V = 0.0175 → ⌈168.07⌉ = 169
    # responses (2 models, 1 answer a task, P0 + source + shuffled + m cf): 121·6·2 = 1452, 133·5·2 = 1330,
    # 169·4·2 = 1352: two cf tasks a family is the cheapest. Stated components carry no estimation error,
    # so the planned half-width is the predicted one.
    table = planning.design(stated(), planning.Target("half_width", 2.0), planning.Cost(models=2))
    check_columns(table.columns)
    designs = sorted(table.select("cf_tasks", "families", "responses").rows())
    assert designs == [(1, 169, 1352), (2, 133, 1330), (3, 121, 1452)]
    assert table.filter("cheapest")["cf_tasks"].item() == 2
    assert table["cost"].to_list() == sorted(table["cost"].to_list())
    assert (table["half_width"] == table["half_width_planned"]).all()
    assert (table["half_width"] <= 2.0).all()


def test_golden_difference_target():
    # Two models 10 pp apart at 80% power, α = .05: F = ⌈(1.960 + 0.842)² · V_d / 0.1²⌉ with
    # V_d = B_d + 2 W = 200 pp² + 2 · 0.25 · 300/3 pp² = 0.025 → ⌈7.849 · 0.025 / 0.01⌉ = ⌈19.62⌉ = 20.
    table = planning.design(stated(), planning.Target("difference", 10.0), planning.Cost(models=2))
    row = table.filter(pl.col("cf_tasks") == 3).row(0, named=True)
    assert row["families"] == 20
    assert row["power"] >= 0.8
    assert row["power"] == pytest.approx(0.8, abs=0.02)


def test_a_study_predicts_its_own_variance_at_its_own_design():
    study = simulate(np.random.default_rng(4), families=80, samples=2)
    for metric in ("pgr", "acc_source"):
        for channel in planning.channel_inputs(study.drop("task"), metric):
            assert channel.variance() == pytest.approx(channel.observed, rel=1e-9)


def test_more_answers_and_more_cf_tasks_never_widen_the_prediction():
    study = simulate(np.random.default_rng(5), families=80, samples=2).drop("task")
    (channel, *_) = planning.channel_inputs(study, "pgr")
    assert channel.repeats_identified
    by_samples = [channel.variance(s, 3) for s in (1, 2, 3, 4)]
    by_tasks = [channel.variance(2, m) for m in (1, 2, 3)]
    assert by_samples == sorted(by_samples, reverse=True)
    assert by_tasks == sorted(by_tasks, reverse=True)


def test_repeated_answers_are_planned_only_where_the_study_can_tell_what_they_buy():
    one = simulate(np.random.default_rng(6), families=60, samples=1).drop("task")
    table = planning.design(planning.channel_inputs(one, "pgr"), planning.Target("half_width", 5.0), planning.Cost())
    assert table["samples"].unique().to_list() == [1]
    assumed = planning.channel_inputs(one, "pgr", sample_share=0.5)
    table = planning.design(assumed, planning.Target("half_width", 5.0), planning.Cost())
    assert sorted(table["samples"].unique().to_list()) == [1, 2, 3, 4, 5]
    assert any("assumed 50%" in note for note in assumed[0].notes)


def test_an_impossible_target_says_what_the_budget_buys():
    with pytest.raises(
        UsageError, match=r"no design meets the target within a budget of 500; the best is a half-width of"
    ):
        planning.design(stated(), planning.Target("half_width", 1.0), planning.Cost(models=2), budget=500)
    with pytest.raises(UsageError, match=r"within 50 families at most; the best is a power of \d+%"):
        planning.design(stated(), planning.Target("difference", 3.0), planning.Cost(models=2), max_families=50)


def test_new_families_cost_extra_and_the_budget_counts_them():
    # 100 families exist; at m = 2 the target needs 133 (33 new). A family costs 10, a response 1:
    # 1330 + 33 · 10 = 1660.
    table = planning.design(
        stated(families=100), planning.Target("half_width", 2.0), planning.Cost(models=2, per_new_family=10)
    )
    row = table.filter(pl.col("cf_tasks") == 2).row(0, named=True)
    assert (row["new_families"], row["cost"]) == (33, 1660.0)


def test_a_target_is_checked():
    with pytest.raises(UsageError, match="above 0 pp"):
        planning.Target("half_width", 0.0)
    with pytest.raises(UsageError, match="one of half_width, difference, margin"):
        planning.Target("width", 2.0)
    with pytest.raises(UsageError, match="cannot be negative"):
        stated(between=-1.0)


def test_the_precision_curve_falls_with_families():
    curve = planning.precision_curve(stated(), planning.Target("half_width", 2.0), planning.Cost(models=2))
    check_columns(curve.columns)
    for _, part in curve.group_by("samples", "cf_tasks"):
        ordered = part.sort("families")
        assert ordered["precision"].to_list() == sorted(ordered["precision"].to_list(), reverse=True)
        assert math.isclose(ordered["cost"][0] / ordered["families"][0], ordered["cost"][-1] / ordered["families"][-1])


def test_a_budget_says_which_channels_it_can_rank_on_and_the_best_elsewhere():
    # Two stated channels: the noisy one (B = 400 pp²) needs more than the budget buys, the quiet one
    # (B = 100) does not. The noisy channel keeps one row, its most precise design within the budget,
    # marked as missing the target; with both out of reach the error names each one's best.
    inputs = stated() + [planning.assumed_inputs("pgr", between=400.0, task=300.0, sample=None, cf_tasks=3,
                                                 families=0, channel="noisy")]  # fmt: skip
    table = planning.design(inputs, planning.Target("half_width", 2.0), planning.Cost(models=2), budget=1500)
    check_columns(table.columns)
    noisy = table.filter(pl.col("channel") == "noisy")
    assert noisy.height == 1 and not noisy["meets_target"].item() and not noisy["cheapest"].item()
    assert noisy["cost"].item() <= 1500 and noisy["half_width_planned"].item() > 2.0
    assert table.filter(pl.col("channel") == "assumed")["meets_target"].all()
    with pytest.raises(UsageError, match=r"assumed: no design .*; noisy: no design"):
        planning.design(inputs, planning.Target("half_width", 1.0), planning.Cost(models=2), budget=1500)
