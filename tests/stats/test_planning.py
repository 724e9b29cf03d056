"""Study designs: closed-form cases worked by hand, the study's own design, budgets and their errors."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from molp2s_stats.errors import UsageError
from molp2s_stats.glossary import check_columns
from molp2s_stats.stats import planning, variance
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


def test_a_channel_with_too_few_families_is_left_out_and_said():
    study = simulate(np.random.default_rng(7), families=40, samples=1).drop("task")
    thin = study.filter((pl.col("channel") != "c2") | pl.col("family_id").is_in(["F0", "F1"]))
    inputs = planning.channel_inputs(thin, "pgr")
    assert [i.channel for i in inputs] == ["c0", "c1"]
    assert "c2: fewer than 3 families with pgr: left out" in inputs[0].notes
    with pytest.raises(UsageError, match="no channel to plan for: c2: fewer than 3 families"):
        planning.channel_inputs(thin, "pgr", channels=["c2"])
    levels = variance.variance_components(thin, metrics=("pgr",), draws=0)
    assert levels.filter(pl.col("channel") == "c2")["variance"].is_nan().all()


def test_mixed_answers_a_task_are_not_taken_for_the_one_answer_design():
    # Half the tasks answered once, half twice: the study's own variance is at that mix, so the row for
    # one answer a task is predicted at 1/S = 1 (wider), not read off the study.
    study = simulate(np.random.default_rng(8), families=80, samples=2).drop("task")
    mixed = study.with_columns(
        pl.when(pl.int_range(pl.len()) % 2 == 0).then(1).otherwise(2).alias("samples"),
        pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.col("y").round()).otherwise(pl.col("y")).alias("y"),
    )
    (channel, *_) = planning.channel_inputs(mixed, "pgr")
    assert channel.own_samples is None and not channel.own_design(1, 3)
    table = planning.design([channel], planning.Target("half_width", 5.0), planning.Cost())
    one = table.filter((pl.col("samples") == 1) & (pl.col("cf_tasks") == 3)).row(0, named=True)
    assert one["families"] == planning.Target("half_width", 5.0).families(channel.planning_variance(1, 3))
    assert channel.variance(1, 3) > channel.observed
    uniform = planning.channel_inputs(study, "pgr")[0]
    assert uniform.own_samples == 2 and uniform.own_design(2, 3)


def test_costs_for_more_models_than_the_study_has_are_refused():
    with pytest.raises(UsageError, match="costs are given for 2 models and the study has 1"):
        planning.Cost(models=1, per_model={"a": 1.0, "b": 2.0}).response_cost()
    # two models priced, a third at the common price: 0.5 + 2 + 1
    assert planning.Cost(models=3, per_model={"a": 0.5, "b": 2.0}).response_cost() == 3.5


def test_the_difference_between_two_models_recovers_its_between_family_variance():
    # Two models share a family effect (it cancels in their difference) and each has its own family ×
    # channel effect of sd 0.1; every task has its own effect (sd 0.08) and two answers. What only
    # families reduce in one family's PGR difference is (Σw)² · 2 · 0.1² = 0.02 from the models' own
    # effects, plus the source task's, which one task a family cannot separate: (½)² · 2 · 0.08² = 0.0032;
    # 0.0232 in all (the answers' noise is measured by the repeats and left out). One study of 300
    # families gave 0.0175–0.0335 over seeds 9–14; their mean lands within 15%.
    estimates = []
    for seed in range(9, 15):
        rng = np.random.default_rng(seed)
        records = []
        for f in range(300):
            shared = rng.normal(0, 0.12)
            for c in range(3):
                for model in ("a", "b"):
                    own = rng.normal(0, 0.1)
                    for condition in ["source", "cf", "cf", "cf"]:
                        p = np.clip(0.5 + shared + own + rng.normal(0, 0.08), 0.02, 0.98)
                        records.append({"model": model, "channel": f"c{c}", "family_id": f"F{f}",
                                        "condition": condition, "samples": 2, "y": rng.binomial(2, p) / 2})  # fmt: skip
        estimates += [i.between_difference for i in planning.channel_inputs(pl.DataFrame(records), "pgr")]
    assert np.mean(estimates) == pytest.approx(0.0232, rel=0.15)


def test_a_study_with_no_variance_between_families_says_so():
    ceiling = simulate(np.random.default_rng(10), families=20).drop("task").with_columns(pl.lit(1.0).alias("y"))
    (channel, *_) = planning.channel_inputs(ceiling, "pgr", channels=["c0"])
    assert channel.observed == 0.0
    assert any("c0: no variance between families on pgr" in note for note in channel.notes)
