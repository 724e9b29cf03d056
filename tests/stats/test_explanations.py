"""Explanation checks: does a justification cite the shown property? Golden rates by hand."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from molp2s_stats import store
from molp2s_stats.ingest import load
from molp2s_stats.stats import explanations
from tests.support.tiny_benchmark import M1, task_id, write_benchmark


@pytest.mark.parametrize(
    ("text", "shown", "components", "expected"),
    [
        ("The dipole of 1.50 D fits B.", "Dipole moment: 1.50 D", ["dipole_norm"], True),  # word and number
        ("A moment of 1.50 D fits B.", "Dipole moment: 1.50 D", ["dipole_norm"], True),  # the number alone
        ("B has 3 carbons.", "Dipole moment: 3.00 D", ["dipole_norm"], False),  # "3" is not "3.00"
        ("The C=O stretch fits B.", "1712: 100.0", ["ir", "raman"], True),  # a bundle's component word
        ("B is the most branched.", "1712: 100.0", ["ir"], False),
        ("", "1712: 100.0", ["ir"], False),
        ("The shielding pattern fits C.", None, ["h1_peaks"], True),
    ],
)
def test_cites_property(text, shown, components, expected):
    assert explanations.cites_property(text, shown, components) is expected


def test_citation_rates_golden():
    # one model, channel ir, cf tasks: F1 has two answers (one cites and keeps the source, one
    # cites nothing), F2 one (cites, follows the properties):
    #   cites_property      = (1 + 1) / 3 = 66.7 %,  n = 2 families, 3 answers
    #   cites_but_persists  = (1 + 0) / 3 = 33.3 %
    citations = pl.DataFrame(
        {
            "model": ["m"] * 3,
            "channel": ["ir"] * 3,
            "condition": ["cf"] * 3,
            "family_id": ["F1", "F1", "F2"],
            "task_id": ["F1-ir-cf-B", "F1-ir-cf-C", "F2-ir-cf-A"],
            "sample": [0, 0, 0],
            "persists": [True, False, False],
            "cites": [True, False, True],
        }
    )
    rates = explanations.citation_rates(citations, draws=200, seed=3)
    got = {r["metric"]: r for r in rates.iter_rows(named=True)}
    assert math.isclose(got["cites_property"]["estimate"], 200 / 3)
    assert math.isclose(got["cites_but_persists"]["estimate"], 100 / 3)
    assert got["cites_property"]["n"] == 2 and got["cites_property"]["answers"] == 3
    for row in got.values():
        assert row["conf_low"] <= row["estimate"] <= row["conf_high"] and row["seed"] == 3
    assert rates.equals(explanations.citation_rates(citations, draws=200, seed=3))  # seeded


def test_explanations_from_the_database(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    lines = []
    for (family, kind), choice in M1.items():
        if choice is None:
            text = "I cannot tell."
        elif kind == "source":
            text = f"The dipole moment fits {choice}.\nAnswer: {choice}"  # cites
        elif kind.startswith("cf"):
            text = f"Its size fits best.\nAnswer: {choice}"  # does not cite
        else:
            text = f"Answer: {choice}"
        lines.append(json.dumps({"model": "m1", "task_id": task_id(family, kind), "response": text}))
    (tmp_path / "m1.jsonl").write_text("\n".join(lines) + "\n")
    con = store.connect(tmp_path / "db.duckdb")
    load(con, benchmark=bench, responses=[tmp_path / "m1.jsonl"])
    rates = explanations.explanations_from_db(con, draws=0)
    con.close()
    got = {(r["condition"], r["metric"]): (r["estimate"], r["n"]) for r in rates.iter_rows(named=True)}
    # cohort F1, F2, F4, F5 (F3 is not input-validated; with m1 alone F5 is complete):
    # every source answer cites, no shuffled or cf answer does
    assert got[("source", "cites_property")] == (100.0, 4)
    assert got[("shuffled", "cites_property")] == (0.0, 4)
    assert got[("cf", "cites_property")] == (0.0, 4)
    assert got[("cf", "cites_but_persists")] == (0.0, 4)
    assert rates["method"].unique().to_list() == ["point"]
