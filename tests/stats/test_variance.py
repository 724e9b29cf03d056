"""Variance components: golden values worked by hand, and agreement with statsmodels' mixed model."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from molp2s_stats.errors import UsageError
from molp2s_stats.glossary import check_columns
from molp2s_stats.stats import variance


def rows(model: str, channel: str, family: str, source: float, cf: list[float], samples: int = 1) -> list[dict]:
    base = {"model": model, "channel": channel, "family_id": family, "samples": samples}
    return [{**base, "condition": "source", "y": source}] + [{**base, "condition": "cf", "y": y} for y in cf]


def hand_study() -> pl.DataFrame:
    """One model, channels a and b, three families, two cf tasks a family, one answer a task."""
    return pl.DataFrame(
        rows("m", "a", "F1", 1.0, [1.0, 0.0])
        + rows("m", "a", "F2", 0, [0, 0])
        + rows("m", "a", "F3", 1, [1, 1])
        + rows("m", "b", "F1", 1, [1, 0])
        + rows("m", "b", "F2", 1, [0, 0])
        + rows("m", "b", "F3", 1, [1, 1])
    )


def level(table: pl.DataFrame, channel: str, name: str) -> float:
    return table.filter((pl.col("channel") == channel) & (pl.col("level") == name))["variance"].item()


def test_golden_components_of_pgr_worked_by_hand():
    # g_f = ½ source + ½ mean cf.  Channel a: F1 .5 + .25 = .75, F2 0, F3 .5 + .5 = 1; mean 7/12,
    # Var = ((1/6)² + (7/12)² + (5/12)²) / 2 = 0.270833.  Channel b: .75, .5, 1; mean .75.
    # family = Cov(g_a, g_b) = (1/6 · 0 + (−7/12)(−1/4) + (5/12)(1/4)) / 2 = 0.125.
    # task: the cf answers' spread within a family, SS = .5 (F1) + 0 + 0 over 3 · (2 − 1) = 1/6 a
    # answer; in g it weighs (½)² / 2 tasks: 1/6 · 1/4 · 1/2 = 0.0208333.
    # family_channel = 0.270833 − 0.125 − 0.020833 = 0.125.  In pp²: × 10⁴.
    table = variance.variance_components(hand_study(), metrics=("pgr",), draws=0)
    check_columns(table.columns)
    assert level(table, "a", "family") == pytest.approx(1250.0)
    assert level(table, "a", "task") == pytest.approx(10_000 / 48)
    assert level(table, "a", "family_channel") == pytest.approx(1250.0)
    assert table.filter((pl.col("channel") == "a") & (pl.col("level") == "sample"))["variance"].is_nan().all()
    shares = table.filter(pl.col("channel") == "a").drop_nans("share")["share"]
    assert shares.sum() == pytest.approx(100.0)
    assert table["sample_source"][0] == "one answer per task: in task"


def test_a_metric_with_one_task_a_family_has_no_task_level():
    # RM = source − shuffled: one task each, so a family's task spread is not seen; it stays in family × channel.
    # Channel a: g = (1 − 0, 0 − 0, 1 − 1) = (1, 0, 0), Var = 1/3; channel b: g = (1, 0, 1), mean 2/3.
    # family = Cov = ((2/3)(1/3) + (−1/3)(−2/3) + (−1/3)(1/3)) / 2 = 1/6; family_channel = 1/3 − 1/6.
    shuffled = {
        ("a", "F1"): 0.0,
        ("a", "F2"): 0.0,
        ("a", "F3"): 1.0,
        ("b", "F1"): 0.0,
        ("b", "F2"): 1.0,
        ("b", "F3"): 0.0,
    }
    extra = pl.DataFrame(
        [
            {"model": "m", "channel": c, "family_id": f, "samples": 1, "condition": "shuffled", "y": y}
            for (c, f), y in shuffled.items()
        ]
    )
    table = variance.variance_components(
        pl.concat([hand_study().cast({"y": pl.Float64}), extra]), metrics=("reliance_margin",), draws=0
    )
    assert np.isnan(level(table, "a", "task"))
    assert level(table, "a", "family") == pytest.approx(10_000 / 6)
    assert level(table, "a", "family_channel") == pytest.approx(10_000 / 6)


def test_repeated_answers_give_the_sample_level():
    # Four answers a task: ȳ(1 − ȳ)·4/3 is unbiased for p(1 − p). Tasks at ȳ = .5 and .25 and 1:
    # 4/3 · (.25, .1875, 0) → mean over the cf tasks of every family.
    study = pl.DataFrame(
        rows("m", "a", "F1", 1, [0.5, 0.25], samples=4)
        + rows("m", "a", "F2", 0.5, [0.25, 1.0], samples=4)
        + rows("m", "a", "F3", 1, [1.0, 0.5], samples=4)
    )
    table = variance.variance_components(study, metrics=("pgr",), draws=0)
    cf = [0.5, 0.25, 0.25, 1.0, 1.0, 0.5]
    sigma2 = np.mean([4 / 3 * y * (1 - y) for y in cf])
    # in g: (½)² · σ² · Σ(1/S)/n² = ¼ · σ² · (2/4)/4, plus the source's own (its answers ȳ = 1, .5, 1)
    source = np.mean([4 / 3 * y * (1 - y) for y in (1, 0.5, 1)])
    expected = 0.25 * sigma2 * (2 / 4) / 4 + 0.25 * source / 4
    assert level(table, "a", "sample") == pytest.approx(10_000 * expected)
    assert table["sample_identified"].all()
    assert table["sample_source"][0] == "repeated answers"


def test_one_family_says_why_nothing_can_be_estimated():
    one = hand_study().filter(pl.col("family_id") == "F1")
    with pytest.raises(UsageError, match="1 family in the cohorts: no variance level can be estimated"):
        variance.variance_components(one, draws=0)


def test_a_metric_that_is_not_a_family_mean_is_refused():
    with pytest.raises(UsageError, match="no variance levels for cfr"):
        variance.variance_components(hand_study(), metrics=("cfr",), draws=0)


def test_the_interval_brackets_the_estimate_and_the_seed_repeats_it():
    study = simulate(np.random.default_rng(3), families=60)
    first = variance.variance_components(study, metrics=("pgr",), draws=100, seed=5)
    again = variance.variance_components(study, metrics=("pgr",), draws=100, seed=5)
    assert first.equals(again)
    defined = first.drop_nans("variance")
    assert (defined["conf_low"] <= defined["variance"]).all() and (defined["variance"] <= defined["conf_high"]).all()


SIGMA = {"family": 0.15, "family_channel": 0.12, "task": 0.15}


def simulate(rng: np.random.Generator, families: int, samples: int = 2, channels: int = 3, cf: int = 3) -> pl.DataFrame:
    """Linear-probability answers: p = .5 + family + family × channel + task, Bernoulli answers."""
    records = []
    for f in range(families):
        a = rng.normal(0, SIGMA["family"])
        for c in range(channels):
            ac = rng.normal(0, SIGMA["family_channel"])
            for t, condition in enumerate(["source"] + ["cf"] * cf):
                p = np.clip(0.5 + a + ac + rng.normal(0, SIGMA["task"]), 0.02, 0.98)
                y = rng.binomial(samples, p) / samples
                records.append(
                    {
                        "model": "m",
                        "channel": f"c{c}",
                        "family_id": f"F{f}",
                        "condition": condition,
                        "samples": samples,
                        "y": y,
                        "task": f"F{f}c{c}t{t}",
                    }
                )
    return pl.DataFrame(records)


def test_components_agree_with_statsmodels_mixed_model_on_a_linear_probability_study():
    # An independent fit of the same structure: statsmodels' MixedLM (REML) with family as the group, and
    # family × channel and task (the task's slot within its family) as variance components, on every
    # answer. Its variances map onto PGR's levels by the metric's weights (½ source, ½ over 3 cf tasks,
    # 2 answers a task; the source's one task sits in family × channel); ours come from moments, pooled
    # over the three channels. Both estimate the same quantities from the same data; on seeds 11–13
    # they differed by 0.3–15% (task the noisiest), hence 20%.
    import warnings

    import statsmodels.formula.api as sm

    study = simulate(np.random.default_rng(11), families=200)
    expanded = []  # one row an answer for the mixed model
    for row in study.iter_rows(named=True):
        correct = round(row["y"] * row["samples"])
        expanded += [{**row, "answer": float(i < correct)} for i in range(row["samples"])]
    frame = pl.DataFrame(expanded).with_columns(
        pl.format("{}{}", "channel", pl.col("task").str.slice(-2)).alias("slot")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs alone stops early here; Powell first converges
        fit = sm.mixedlm(
            "answer ~ C(condition)",
            frame.to_pandas(),
            groups="family_id",
            re_formula="1",
            vc_formula={"family_channel": "0 + C(channel)", "task": "0 + C(slot)"},
        ).fit(reml=True, method=["powell", "lbfgs"])
    vcomp = dict(zip(fit.model.exog_vc.names, fit.vcomp))
    m, s = 3, 2
    expected = {
        "family": float(fit.cov_re.iloc[0, 0]),
        "family_channel": vcomp["family_channel"] + 0.25 * vcomp["task"],
        "task": 0.25 * vcomp["task"] / m,
        "sample": 0.25 * fit.scale / s + 0.25 * fit.scale / (m * s),
    }
    ours = variance.variance_components(study.drop("task"), metrics=("pgr",), draws=0)
    for name, value in expected.items():
        pooled = ours.filter(pl.col("level") == name)["variance"].mean() / 1e4
        assert pooled == pytest.approx(value, rel=0.2), (name, pooled, value)
