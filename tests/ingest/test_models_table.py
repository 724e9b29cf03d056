"""The benchmark's optional models table: display names and groups for the leaderboards."""

from __future__ import annotations

import pytest

from molp2s_stats import store
from molp2s_stats.ingest import InputError, load
from molp2s_stats.report import tables
from molp2s_stats.stats import metrics
from tests.support.tiny_benchmark import write_benchmark, write_responses


def _db(root, models_csv: str | None):
    bench = write_benchmark(root / "bench")
    if models_csv is not None:
        (bench / "models.csv").write_text(models_csv)
    con = store.connect(root / "db.duckdb")
    load(con, benchmark=bench, responses=write_responses(root / "responses"))
    return con


def test_names_and_groups_reach_the_leaderboard(tmp_path):
    con = _db(tmp_path, "model,display_name,group\nm2,Model Two,open-weight\nm1,,closed-weight\n")
    names = metrics.read_model_names(con)
    assert names.rows() == [("m2", "Model Two", "open-weight"), ("m1", "m1", "closed-weight")]
    result = metrics.metrics_from_db(con, metrics=("pgr", "random_baseline"), draws=0)
    table, tidy = tables.leaderboard_table(result, "pgr", title="t", models=names)
    html = table.as_raw_html()
    # groups in the file's order, the display name where one is given, the model id otherwise
    assert html.index("open-weight") < html.index("Model Two") < html.index("closed-weight") < html.index(">m1<")
    assert html.index(">m1<") < html.index("random baseline")
    assert set(tidy["model"]) == {"m1", "m2", "random baseline"}  # the export keeps the model ids


def test_without_a_models_table_nothing_changes(tmp_path):
    con = _db(tmp_path, None)
    assert metrics.read_model_names(con) is None


def test_a_repeated_model_names_the_file_and_line(tmp_path):
    with pytest.raises(InputError, match=r"models\.csv: row 1: duplicate row for model='m1'"):
        _db(tmp_path, "model,display_name,group\nm1,A,x\nm1,B,y\n")
