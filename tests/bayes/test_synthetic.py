"""The shape simulator draws what each option says, and leaves the other shapes' draws as they were."""

from __future__ import annotations

import numpy as np
import polars as pl

from molp2s_stats.bayes.synthetic import Shape, simulate_cells


def _successes(shape: Shape, seed: int = 3) -> np.ndarray:
    data, _ = simulate_cells(shape, seed)
    return data.cells.sort("model", "channel", "condition", "family_id")["successes"].to_numpy()


def test_no_within_family_variation_draws_the_same_cells_as_before():
    # task_sd = model_task_sd = 0 takes the family-level path: no extra random numbers are drawn, so a
    # benchmark's earlier results for the other shapes stay reproducible
    plain = Shape("plain", models=3, channels=2, families=30)
    same = Shape("plain", models=3, channels=2, families=30, task_sd=0.0, model_task_sd=0.0)
    assert np.array_equal(_successes(plain), _successes(same))


def test_agreeing_samples_cluster_far_beyond_binomial_noise():
    # one task a cell (shuffled), 4 samples; a model's own take on a task with sd 6 on the logit makes its
    # 4 samples nearly all right or all wrong: the cells pile up at 0 and 4, where independent samples
    # at the same mean share would put about (1 - p)^4 + p^4 of them (p near 0.5: about 1/8)
    agreeing = Shape(
        "agreeing",
        models=2,
        channels=2,
        families=300,
        samples=4,
        model_task_sd=6.0,
        family_sd=0.0,
        family_channel_sd=0.0,
        channel_sd=0.0,
        ability=(0.0, 0.0),
    )
    data, _ = simulate_cells(agreeing, seed=1)
    shuffled = data.cells.filter(pl.col("condition") == "shuffled")
    assert set(shuffled["trials"].unique()) == {4}
    at_the_ends = shuffled["successes"].is_in([0, 4]).mean()
    assert at_the_ends > 0.6, at_the_ends


def test_the_truth_is_the_mean_over_the_tasks_actually_drawn():
    # with task effects the truth stays a share: reliance in [-1, 1], cf accuracy in [0, 1], one row per
    # model × channel × metric
    shape = Shape("tasks", models=3, channels=2, families=40, task_sd=1.5, model_task_sd=1.0, samples=2)
    data, truth = simulate_cells(shape, seed=2)
    assert truth.height == 3 * 2 * 2
    cf = truth.filter(pl.col("metric") == "responsiveness")["truth"]
    reliance = truth.filter(pl.col("metric") == "reliance")["truth"]
    assert cf.is_between(0, 1).all() and reliance.is_between(-1, 1).all()
    # P0 answers: one per sample and family in some cohort
    assert set(data.p0["trials"].unique()) == {2}
