"""Model-pair transitions: the McNemar test clustered by family, checked against scipy's exact test."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from molp2s_stats.stats import compare


def _outcomes(rows: list[tuple[str, str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["model", "task_id", "family_id", "y"], orient="row")


def test_one_task_a_family_gives_the_exact_mcnemar_test():
    # 9 families of one task: B right and A wrong on 7, A right and B wrong on 2 → scipy's binomial test
    # of 7 of 9 (two-sided): 2 · (1 + 9 + 36) / 512 = 0.1797
    rows = []
    for i, (a, b) in enumerate([(0.0, 1.0)] * 7 + [(1.0, 0.0)] * 2 + [(1.0, 1.0)] * 5):
        rows += [("A", f"t{i}", f"F{i}", a), ("B", f"t{i}", f"F{i}", b)]
    table = compare.model_transitions(_outcomes(rows), channel="ir", condition="source", draws=200)
    assert table["p_value"][0] == pytest.approx(stats.binomtest(7, 9).pvalue) == pytest.approx(0.1796875)


def test_discordant_tasks_of_one_family_in_opposite_directions_cancel():
    # 6 families of two tasks, B right on one and A on the other in each: no family leans either way, p = 1.
    # One more family leaning to B by both its tasks: one family of the sign patterns' two, p = 1 (one
    # family is no evidence, however many tasks it has; a test of independent tasks sees 8 against 6)
    rows = []
    for f in range(6):
        rows += [("A", f"t{f}a", f"F{f}", 1.0), ("B", f"t{f}a", f"F{f}", 0.0)]
        rows += [("A", f"t{f}b", f"F{f}", 0.0), ("B", f"t{f}b", f"F{f}", 1.0)]
    table = compare.model_transitions(_outcomes(rows), channel="ir", condition="source", draws=200)
    assert table["p_value"][0] == 1.0
    rows += [("A", "t9a", "F9", 0.0), ("B", "t9a", "F9", 1.0), ("A", "t9b", "F9", 0.0), ("B", "t9b", "F9", 1.0)]
    table = compare.model_transitions(_outcomes(rows), channel="ir", condition="source", draws=200)
    assert table["p_value"][0] == 1.0


# --- verdicts ---------------------------------------------------------------------------------------------


def _pair(gain_a: float, gain_b: float, families: int, seed: int) -> pl.DataFrame:
    """Two models on `families` one-task families, right with probabilities gain_a and gain_b."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for f in range(families):
        rows += [
            ("A", f"t{f}", f"F{f}", float(rng.random() < gain_a)),
            ("B", f"t{f}", f"F{f}", float(rng.random() < gain_b)),
        ]
    return _outcomes(rows)


def test_verdicts_read_the_intervals():
    # hand-made intervals (shares): above 0; below 0; 90% inside ±2 pp; 90% crossing it
    import numpy as np

    low, high = np.array([0.01, -0.03, -0.01, -0.05]), np.array([0.05, -0.01, 0.01, 0.04])
    tost_low, tost_high = np.array([0.015, -0.028, -0.019, -0.04]), np.array([0.045, -0.012, 0.019, 0.03])
    assert compare.verdicts(low, high, tost_low, tost_high, 0.02) == ["ahead", "behind", "equivalent", "undecided"]
    assert compare.verdicts(np.array([np.nan]), np.array([np.nan]), np.array([np.nan]), np.array([np.nan]), 0.02) == [
        None
    ]


@settings(max_examples=15, deadline=None)
@given(gain_a=st.floats(0.1, 0.95), shift=st.floats(-0.3, 0.3), families=st.integers(30, 300), seed=st.integers(0, 99))
def test_a_verdict_swaps_with_the_pair_and_equivalence_means_inside_the_margin(gain_a, shift, families, seed):
    outcomes = _pair(gain_a, min(max(gain_a + shift, 0.0), 1.0), families, seed)
    kwargs = dict(channel="ir", condition="source", draws=300, seed=seed)
    forward = compare.model_transitions(outcomes, pairs=[("A", "B")], **kwargs).row(0, named=True)
    backward = compare.model_transitions(outcomes, pairs=[("B", "A")], **kwargs).row(0, named=True)
    swapped = {"ahead": "behind", "behind": "ahead", "equivalent": "equivalent", "undecided": "undecided"}
    assert backward["verdict"] == swapped[forward["verdict"]]
    if forward["verdict"] == "equivalent":  # its 90% interval (the same replicates) lies inside ±2 pp
        ninety = compare.model_transitions(outcomes, pairs=[("A", "B")], conf_level=0.90, **kwargs).row(0, named=True)
        assert -2.0 < ninety["conf_low"] and ninety["conf_high"] < 2.0
    assert forward["margin"] == 2.0


def test_a_margin_outside_zero_and_one_is_refused():
    from molp2s_stats.errors import UsageError

    with pytest.raises(UsageError, match="equivalence margin"):
        compare.model_transitions(_pair(0.5, 0.5, 20, 1), channel="ir", condition="source", draws=50, margin=2.0)


def test_two_models_with_the_same_answers_on_300_families_are_equivalent_within_2_pp():
    # no discordant task: net 0, and each discordant share's score interval on 300 families reaches about
    # t²/(300 + t²) = 1.3%: the 90% interval of the net lies inside ±2 pp, while 30 families cannot say so
    rows = []
    for f in range(300):
        rows += [("A", f"t{f}", f"F{f}", float(f % 2)), ("B", f"t{f}", f"F{f}", float(f % 2))]
    table = compare.model_transitions(_outcomes(rows), channel="ir", condition="source", draws=200)
    assert table["verdict"].to_list() == ["equivalent"]
    few = compare.model_transitions(_outcomes(rows[:60]), channel="ir", condition="source", draws=200)
    assert few["verdict"].to_list() == ["undecided"]
