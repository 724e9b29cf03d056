"""A model run on part of the benchmark: loaded as it is, scored on what it answered, and never
shrinking the cohort that the complete models define (the tiny benchmark of tiny_benchmark.py)."""

from __future__ import annotations

import polars as pl
import pytest

from molp2s_stats import store
from molp2s_stats.ingest import load
from molp2s_stats.stats import metrics
from tests.support.tiny_benchmark import M1, task_id, write_benchmark, write_responses


def _partial(directory, name: str, families: dict[str, set[str] | None]) -> object:
    """m1's answers as model ``name``, for these families: all their tasks (None) or only these kinds."""
    rows = [
        {"model": name, "task_id": task_id(f, k), "choice": c or "A"}  # m1's one invalid answer as A
        for (f, k), c in M1.items()
        if f in families and (families[f] is None or k in families[f])
    ]
    path = directory / f"{name}.csv"
    pl.DataFrame(rows).write_csv(path)
    return path


@pytest.fixture
def loaded(tmp_path):
    def make(extra: dict[str, dict[str, set[str] | None]], *, complete: bool = True):
        bench = write_benchmark(tmp_path / "bench")
        files = write_responses(tmp_path / "responses") if complete else []
        files += [_partial(tmp_path / "responses", name, fams) for name, fams in extra.items()]
        con = store.connect(tmp_path / "runs.duckdb")
        load(con, benchmark=bench, responses=files)
        return con

    (tmp_path / "responses").mkdir()
    return make


def _cohort(con) -> list[str]:
    return con.sql("SELECT family_id FROM cohort WHERE in_cohort ORDER BY family_id").pl()["family_id"].to_list()


def test_a_partial_model_never_shrinks_the_cohort(loaded):
    # answers F1 and F2 in full, and only F4's P0 task: F4 stays in the cohort of m1 and m2
    con = loaded({"p": {"F1": None, "F2": None, "F4": {"p0"}}})
    assert _cohort(con) == ["F1", "F2", "F4"]
    coverage = {r["model"]: r for r in con.sql("SELECT * FROM model_coverage").pl().iter_rows(named=True)}
    # F4's P0 task alone (listed under every channel) does not count as running the family
    assert (coverage["p"]["partial"], coverage["p"]["families_answered"], coverage["p"]["families_total"]) == (
        True,
        2,
        5,
    )
    assert not coverage["m1"]["partial"] and coverage["m1"]["defines_cohort"] and not coverage["p"]["defines_cohort"]


def test_a_partial_model_is_scored_on_the_cohort_families_it_answered_in_full(loaded):
    con = loaded({"p": {"F1": None, "F2": None, "F4": {"p0"}}})
    result = metrics.metrics_from_db(con, draws=0)
    p = result.filter(pl.col("model") == "p")
    m1 = result.filter(pl.col("model") == "m1")
    # F4 is half answered: it is left out of p's figures, not scored from its P0 task alone
    assert set(p.filter(pl.col("metric") == "acc_source")["n"]) == {2}
    # p answers as m1 does: on F1 and F2, acc_source = (1 + 1) / 2; m1's own figures are unchanged
    assert p.filter(pl.col("metric") == "acc_source")["estimate"].item() == pytest.approx(100.0)
    assert m1.filter(pl.col("metric") == "acc_source")["estimate"].item() == pytest.approx(100 * 2 / 3)
    assert m1.filter(pl.col("metric") == "acc_source")["n"].item() == 3


def test_a_partial_model_does_not_bring_back_a_family_the_complete_models_miss(loaded):
    con = loaded({"p": {"F5": None}})  # m2 lacks F5's cf answer: F5 stays out although p answered it
    assert _cohort(con) == ["F1", "F2", "F4"]
    assert con.execute("SELECT count(*) FROM family_outcomes WHERE model = 'p'").fetchall()[0][0] == 0


def test_when_every_model_is_partial_the_cohort_is_what_all_of_them_answered(loaded):
    con = loaded({"p": {"F1": None, "F2": None, "F4": None}, "q": {"F2": None, "F4": None, "F5": None}}, complete=False)
    assert con.execute("SELECT bool_and(partial AND defines_cohort) FROM model_coverage").fetchall()[0][0]
    assert _cohort(con) == ["F2", "F4"]


def test_metrics_command_names_the_partial_models(loaded, tmp_path):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    loaded({"p": {"F1": None, "F2": None}}).close()
    result = CliRunner().invoke(
        app,
        ["metrics", "--db", str(tmp_path / "runs.duckdb"), "--bootstrap", "0", "--metric", "pgr", "--format", "csv"],
    )
    assert result.exit_code == 0, result.output
    assert "partial models" in result.stderr and "p (2 of 5 families)" in result.stderr
    assert "partial" not in result.stdout  # the table itself stays tidy


def test_a_model_run_on_p0_only_is_partial_and_leaves_the_cohort_alone(loaded):
    # answers every family's P0 task (listed under every channel) and nothing else
    con = loaded({"p": {f: {"p0"} for f in ("F1", "F2", "F3", "F4", "F5")}})
    assert _cohort(con) == ["F1", "F2", "F4"]
    row = con.sql("SELECT partial, defines_cohort, families_answered FROM model_coverage WHERE model = 'p'").pl()
    assert row.row(0) == (True, False, 0)


def test_model_transitions_pair_a_partial_model_on_the_tasks_it_answered(loaded):
    from molp2s_stats.stats import compare

    con = loaded({"p": {"F1": None, "F2": None}})  # answers as m1 does, on F1 and F2 only
    outcomes = compare.read_condition_outcomes(con, channels=["dipole_norm"], condition="source")
    row = compare.model_transitions(
        outcomes, channel="dipole_norm", condition="source", pairs=[("m1", "p")], draws=0
    ).row(0, named=True)
    # F1 and F2's source tasks, both right for both: nothing differs
    assert (row["tasks"], row["families"], row["both_correct"], row["net"]) == (2, 2, 100.0, 0.0)


def test_rankings_compare_the_complete_models_and_name_the_partial_one(loaded, tmp_path):
    """A partial model has no score on most subsets' families: `stability` and `ranks` leave it out and say so."""
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    loaded({"p": {"F1": None, "F2": None}}).close()
    runner = CliRunner()
    db = str(tmp_path / "runs.duckdb")
    ranks = runner.invoke(app, ["ranks", "--db", db, "--bootstrap", "50", "--format", "csv"])
    assert ranks.exit_code == 0, ranks.output
    assert "left out of the ranking: p (2 of 5 families answered)" in ranks.stderr
    ranked = pl.read_csv(ranks.stdout.encode())
    assert "p" not in set(ranked["model"]) and ranked["model"].n_unique() >= 2
    stable = runner.invoke(app, ["stability", "--db", db, "--sizes", "2", "--subsets", "20", "--format", "csv"])
    assert stable.exit_code == 0, stable.output
    assert "left out of the ranking: p" in stable.stderr


def test_the_stability_page_renders_with_one_complete_model_and_a_partial_one(tmp_path, warm_kernels):
    """One complete model left after the partial one is set aside: no ranking to show, and the page says so."""
    from molp2s_stats.defaults import REPORTS
    from molp2s_stats.report import render

    bench = write_benchmark(tmp_path / "bench")
    m1 = [p for p in write_responses(tmp_path / "responses") if p.stem == "m1"]
    con = store.connect(tmp_path / "runs.duckdb")
    load(con, benchmark=bench, responses=[*m1, _partial(tmp_path / "responses", "p", {"F1": None, "F2": None})])
    con.close()
    env = {"MOLP2S_DB": str(tmp_path / "runs.duckdb"), "MOLP2S_REPORT_TABLES": str(tmp_path / "tables")}
    [page] = render.render_with_jupyter(REPORTS, tmp_path / "site", env, pages=["stability.qmd"], log=lambda _: None)
    html = page.read_text()
    assert "Left out of the ranking: p (2 of 5 families answered)" in html
    assert "need at least two complete models; this database has 1" in html
    assert "Minimum detectable" in html  # the rest of the page is there
