"""Model-pair transitions: the McNemar test clustered by family, checked against scipy's exact test."""

from __future__ import annotations

import polars as pl
import pytest
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
