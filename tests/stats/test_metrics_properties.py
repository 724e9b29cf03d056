"""Invariants of the metrics, checked on generated outcomes (hypothesis) and on reloads."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molp2s_stats import store
from molp2s_stats.ingest import load
from molp2s_stats.stats import metrics
from tests.support.tiny_benchmark import write_benchmark, write_responses


@st.composite
def family_outcomes(draw):
    """Binary outcomes for 1–3 models on 1–12 families with K in 2..6 (one cf task per distractor)."""
    n_models = draw(st.integers(1, 3))
    n_families = draw(st.integers(1, 12))
    rows = []
    for f in range(n_families):
        k = draw(st.integers(2, 6))
        for m in range(n_models):
            cf = draw(st.lists(st.sampled_from(["target", "source", "other"]), min_size=k - 1, max_size=k - 1))
            rows.append(
                {
                    "model": f"m{m}",
                    "channel": "ir",
                    "family_id": f"F{f:02d}",
                    "y_p0": float(draw(st.booleans())),
                    "y_source": float(draw(st.booleans())),
                    "y_shuffled": float(draw(st.booleans())),
                    "cf_tasks": k - 1,
                    "cf_correct": float(cf.count("target")),
                    "cf_flip": cf.count("target") / (k - 1),
                    "cf_persist": cf.count("source") / (k - 1),
                    "cf_other": cf.count("other") / (k - 1),
                    "n_candidates": k,
                }
            )
    return pl.DataFrame(rows)


@settings(max_examples=60, deadline=None)
@given(family_outcomes(), st.integers(0, 2**31 - 1))
def test_transition_shares_sum_to_100_and_intervals_hold_estimates(outcomes, seed):
    result = metrics.compute_metrics(outcomes, draws=200, seed=seed)
    wide = result.pivot(on="metric", index="model", values="estimate")
    defined = wide.filter(pl.col("cfr").is_not_null())
    assert np.allclose(defined["cfr"] + defined["persist"] + defined["other"], 100.0)
    # CFR is undefined exactly when no source answer is right.
    no_right = outcomes.group_by("model").agg((pl.col("y_source").sum() == 0).alias("none_right"))
    joined = wide.join(no_right, on="model")
    assert (joined["cfr"].is_null() == joined["none_right"]).all()
    with_interval = result.filter(pl.col("conf_low").is_not_null())
    assert (with_interval["conf_low"] <= with_interval["estimate"] + 1e-9).all()
    assert (with_interval["estimate"] <= with_interval["conf_high"] + 1e-9).all()
    assert ((result["estimate"].drop_nulls() >= -100) & (result["estimate"].drop_nulls() <= 100)).all()


@settings(max_examples=40, deadline=None)
@given(family_outcomes())
def test_random_baselines_are_the_same_for_every_model_and_add_up(outcomes):
    result = metrics.compute_metrics(outcomes, draws=0)
    per_metric = result.group_by("metric").agg(
        pl.col("baseline").n_unique().alias("values"), pl.col("baseline").first()
    )
    assert (per_metric["values"] == 1).all()  # a property of the cohort, not of the model
    baseline = dict(per_metric.select("metric", "baseline").iter_rows())
    assert baseline["reliance_margin"] == 0.0
    assert baseline["cfr"] + baseline["persist"] + baseline["other"] == pytest.approx(100.0)
    assert baseline["cfr"] == baseline["persist"]
    k = outcomes.unique("family_id")["n_candidates"]
    # accuracy's is the mean of 1/K, so it lies between the extremes of 1/K
    assert 100 / k.max() - 1e-9 <= baseline["acc_source"] <= 100 / k.min() + 1e-9


@settings(max_examples=30, deadline=None)
@given(family_outcomes(), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_row_order(outcomes, rnd):
    order = list(range(outcomes.height))
    rnd.shuffle(order)
    shuffled = outcomes[order]
    assert metrics.compute_metrics(outcomes, draws=100, seed=1).equals(
        metrics.compute_metrics(shuffled, draws=100, seed=1)
    )


def _metrics_after_loading(tmp_path, files_order, shuffle_rows: bool):
    bench = write_benchmark(tmp_path / "bench")
    files = write_responses(tmp_path / "responses")
    if shuffle_rows:
        lines = files[0].read_text().splitlines()
        random.Random(7).shuffle(lines)
        files[0].write_text("\n".join(lines) + "\n")
        frame = pl.read_csv(files[1])
        frame[random.Random(8).sample(range(frame.height), frame.height)].write_csv(files[1])
    con = store.connect(tmp_path / "db.duckdb")
    load(con, benchmark=bench, responses=[files[i] for i in files_order])
    return metrics.metrics_from_db(con, draws=300, seed=2)


def test_results_do_not_depend_on_file_order_or_row_order(tmp_path):
    reference = _metrics_after_loading(tmp_path / "a", [0, 1], shuffle_rows=False)
    swapped = _metrics_after_loading(tmp_path / "b", [1, 0], shuffle_rows=False)
    shuffled = _metrics_after_loading(tmp_path / "c", [1, 0], shuffle_rows=True)
    assert reference.equals(swapped)
    assert reference.equals(shuffled)


def test_unknown_metric_and_bad_level_are_refused():
    empty = pl.DataFrame({"model": [], "channel": [], "family_id": []})
    with pytest.raises(ValueError, match="unknown metric 'pgrr'; did you mean 'pgr'\\?"):
        metrics.compute_metrics(empty, metrics=("pgrr",))
    with pytest.raises(ValueError, match="conf_level"):
        metrics.compute_metrics(empty, conf_level=95)
