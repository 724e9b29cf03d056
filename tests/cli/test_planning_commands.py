"""`molp2s variance` and `molp2s design` on the tiny benchmark: their columns, and their errors."""

from __future__ import annotations

import io

import polars as pl
from typer.testing import CliRunner

from molp2s_stats.cli import app
from molp2s_stats.glossary import check_columns

runner = CliRunner()


def csv(result) -> pl.DataFrame:
    assert result.exit_code == 0, result.output
    return pl.read_csv(io.StringIO(result.stdout))


def test_variance_prints_each_level_of_each_metric(tiny_database):
    table = csv(runner.invoke(app, ["variance", "--db", str(tiny_database), "--draws", "20", "--format", "csv"]))
    check_columns(table.columns)
    assert table["level"].to_list()[:4] == ["family", "family_channel", "task", "sample"]
    assert set(table["metric"]) == {"acc_source", "reliance_margin", "pgr"}
    # one channel: no covariance across channels, so no family level; one answer a task: no sample level
    assert table.filter(pl.col("level").is_in(["family", "sample"]))["variance"].is_nan().all()
    assert table["sample_source"].unique().to_list() == ["one answer per task: in task"]


def test_design_lists_the_designs_that_meet_the_target_cheapest_first(tiny_database, tmp_path):
    curve, chart = tmp_path / "curve.csv", tmp_path / "curve.svg"
    result = runner.invoke(
        app,
        ["design", "--db", str(tiny_database), "--half-width", "20", "--response-cost", "m1=0.5",
         "--response-cost", "0.1", "--family-cost", "2", "--curve", str(curve), "--chart", str(chart),
         "--format", "csv"],
    )  # fmt: skip
    table = csv(result)
    check_columns(table.columns)
    assert table["cheapest"].to_list()[0] is True and table["cheapest"].sum() == 1
    assert table["cost"].to_list() == sorted(table["cost"].to_list())
    assert (table["half_width_planned"] <= 20).all()
    assert "what repeated answers buy is not identified" in result.stderr
    check_columns(pl.read_csv(curve).columns)
    assert chart.read_text().startswith("<svg") and "cost (log scale)" in chart.read_text()


def test_a_stated_study_needs_no_database(tmp_path):
    result = runner.invoke(
        app,
        ["design", "--db", str(tmp_path / "none.duckdb"), "--between", "100", "--task", "300", "--cf-tasks", "3",
         "--half-width", "2", "--models", "2", "--format", "csv"],
    )  # fmt: skip
    table = csv(result)
    assert table.filter("cheapest").select("families", "cf_tasks").row(0) == (133, 2)  # tests/stats/test_planning.py
    assert "components stated, not estimated" in result.stderr
    assert "designs with new families assume they are drawn like the benchmark's" in result.stderr


def test_design_errors_name_the_flags(tiny_database):
    cases = [
        (["design", "--db", str(tiny_database)], "give one target: --half-width, --difference or --margin"),
        (["design", "--db", str(tiny_database), "--half-width", "2", "--margin", "3"], "give one target"),
        (["design", "--between", "100", "--half-width", "2"], "a stated study needs --task too"),
        (["design", "--db", str(tiny_database), "--half-width", "2", "--response-cost", "m1=cheap"],
         "--response-cost takes a number or MODEL=NUMBER, got 'm1=cheap'"),
        (["design", "--db", str(tiny_database), "--half-width", "1", "--budget", "200"],
         "dipole_norm: no design meets the target within a budget of 200; the best is a half-width of"),
        (["design", "--db", str(tiny_database), "--half-width", "2", "--metric", "cfr"], "no variance levels for cfr"),
        (["design", "--db", str(tiny_database), "--half-width", "20", "--response-cost", "gpt-9=1"],
         "unknown model 'gpt-9'"),
        (["variance", "--db", str(tiny_database), "--channel", "ir"], "unknown channel 'ir'; known: dipole_norm"),
    ]  # fmt: skip
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)


def test_plan_takes_a_half_width_as_its_budget(tiny_database, copy_of, tmp_path):
    db = copy_of(tiny_database)  # a plan is recorded in the database
    out = tmp_path / "plan.csv"
    # three families: even all of them leave a complete model's half-width of about 300 pp (t on 1 df)
    result = runner.invoke(app, ["plan", "--db", str(db), "--half-width", "400", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert pl.read_csv(out).height >= 2
    short = runner.invoke(app, ["plan", "--db", str(db), "--half-width", "50", "--out", str(out)])
    assert short.exit_code == 2 and "a half-width of 50 pp is out of reach: answering all 3 families" in short.stderr
    both = runner.invoke(app, ["plan", "--db", str(db), "--half-width", "5", "--families", "3", "--out", str(out)])
    assert both.exit_code == 2 and "give --fraction, --families or --half-width (one of them)" in both.stderr
