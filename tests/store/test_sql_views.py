"""Every view states its grain in its header; here each key is tested unique and not null,
and a few invariants of the marts are written as SQL expressions."""

from __future__ import annotations

import pytest

from molp2s_stats import store
from molp2s_stats.ingest import load
from tests.support import TOY as DATA

KEYS = {
    "stg_channels": ("channel",),
    "stg_pair_distances": ("family_id", "channel", "label_a", "label_b"),
    "stg_responses": ("model", "task_id", "sample", "attempt"),
    "stg_channel_components": ("channel", "component"),
    "stg_families": ("family_id",),
    "stg_candidates": ("family_id", "label"),
    "stg_tasks": ("task_id",),
    "family_candidates": ("family_id",),
    "benchmark_tasks": ("task_id",),
    "stg_models": ("model",),
    "stg_terminal_responses": ("model", "task_id", "sample"),
    "pair_separation": ("family_id", "channel", "label_a", "label_b"),
    "input_validation": ("family_id", "channel"),
    "task_outcomes": ("model", "task_id"),
    "coverage": ("family_id", "channel"),
    "cohort": ("family_id", "channel"),
    "cohort_summary": ("channel",),
    "family_outcomes": ("model", "channel", "family_id"),
    "channel_tasks": ("family_id", "channel", "task_id"),
    "cohort_tasks": ("model", "channel", "task_id"),
    "binomial_cells": ("model", "channel", "condition", "family_id"),
    "invalid_rates": ("model",),
}

# Each query returns the rows that break the invariant; all must be empty.
INVARIANTS = {
    "a cohort family is input-validated and completely covered": "SELECT * FROM cohort WHERE in_cohort AND NOT (input_validated AND complete_coverage)",
    "task shares add up to one": "SELECT * FROM task_outcomes WHERE abs(y + chose_other + CASE WHEN target <> source_label "
    "THEN chose_source ELSE 0 END - 1) > 1e-9",
    "cf shares add up to one": "SELECT * FROM family_outcomes WHERE cf_tasks > 0 AND abs(cf_flip + cf_persist + cf_other - 1) > 1e-9",
    "every model has every cohort family": "SELECT channel, family_id FROM family_outcomes GROUP BY ALL "
    "HAVING count(*) <> (SELECT count(*) FROM stg_models)",
    "cohort_summary counts the cohort view": "SELECT * FROM cohort_summary AS s WHERE cohort <> "
    "(SELECT count(*) FROM cohort AS c WHERE c.channel = s.channel AND c.in_cohort)",
    "terminal response is the highest attempt": "SELECT * FROM stg_terminal_responses AS t WHERE attempt < (SELECT max(attempt) FROM responses AS r "
    "WHERE r.model = t.model AND r.task_id = t.task_id AND r.sample = t.sample)",
    "right answers count y": "SELECT * FROM task_outcomes WHERE abs(correct_samples - y * samples) > 1e-9",
    "cohort tasks are the cohort families' tasks in channel_tasks, for every model": "SELECT ct.family_id, ct.channel, ct.task_id FROM channel_tasks AS ct "
    "JOIN cohort AS c ON c.family_id = ct.family_id AND c.channel = ct.channel AND c.in_cohort "
    "JOIN cohort_tasks AS t ON t.channel = ct.channel AND t.task_id = ct.task_id "
    "GROUP BY ALL HAVING count(*) <> (SELECT count(*) FROM stg_models)",
    "a P0 task is listed under every channel of its family, a channel's task only under it": "SELECT * FROM channel_tasks AS ct JOIN stg_tasks AS t USING (task_id) "
    "WHERE NOT (t.condition = 'none' OR t.channel = ct.channel)",
    "binomial cells add up to the cohort tasks' answers": "SELECT b.* FROM binomial_cells AS b WHERE trials <> (SELECT sum(samples) FROM cohort_tasks AS t "
    "WHERE t.model = b.model AND t.channel = b.channel AND t.condition = b.condition "
    "AND t.family_id = b.family_id) OR successes > trials",
    "one P0 cell per model and family, whichever channel lists it": "SELECT model, family_id FROM binomial_cells WHERE condition = 'none' GROUP BY ALL "
    "HAVING count(DISTINCT (successes, trials)) > 1",
    "invalid rates count every terminal answer": "SELECT * FROM invalid_rates WHERE answers <> (SELECT count(*) FROM stg_terminal_responses AS r "
    "WHERE r.model = invalid_rates.model) OR abs(invalid_share - invalid_answers / answers) > 1e-12",
    "benchmark summary counts the staging views": "SELECT * FROM benchmark_summary WHERE tasks <> (SELECT count(*) FROM tasks) "
    "OR families <> (SELECT count(*) FROM families)",
    "a single channel's pair distance is stored once": "SELECT * FROM pair_separation WHERE channel IN (SELECT channel FROM channels WHERE components IS NULL) "
    "AND distance IS NULL",
}


@pytest.fixture(scope="module")
def default_db(tmp_path_factory):
    con = store.connect(tmp_path_factory.mktemp("views") / "default.duckdb")
    load(con, benchmark=DATA, responses=sorted((DATA / "responses").iterdir()))
    yield con
    con.close()


@pytest.mark.parametrize("view", sorted(KEYS))
def test_view_key_is_unique_and_not_null(default_db, view):
    key = ", ".join(KEYS[view])
    total, distinct = default_db.execute(f"SELECT count(*), count(DISTINCT ({key})) FROM {view}").fetchone()
    assert total > 0, f"{view} is empty on the default data"
    assert total == distinct, f"{view}: key ({key}) is not unique"
    nulls = " OR ".join(f"{c} IS NULL" for c in KEYS[view])
    assert default_db.execute(f"SELECT count(*) FROM {view} WHERE {nulls}").fetchone()[0] == 0


@pytest.mark.parametrize("name", sorted(INVARIANTS))
def test_invariant(default_db, name):
    assert default_db.execute(INVARIANTS[name]).fetchall() == [], name


def test_every_view_file_states_its_grain_and_key():
    for name in store.VIEW_FILES:
        head = (store.SQL_DIR / name).read_text().splitlines()[:3]
        assert any("one row per" in line for line in head), name
        assert any("Key:" in line for line in head), name


def test_bundle_pairs_separate_when_any_component_does(default_db):
    # F08's IR pair A–B is identical (distance 0), but Raman separates it, so the
    # vibrational bundle keeps the pair separated.
    rows = default_db.execute(
        """SELECT channel, separated FROM pair_separation
           WHERE family_id = 'F08' AND label_a = 'A' AND label_b = 'B'
             AND channel IN ('ir', 'raman', 'vibrational_bundle') ORDER BY channel"""
    ).fetchall()
    assert rows == [("ir", False), ("raman", True), ("vibrational_bundle", True)]


def test_separability_scales_uvvis_and_bundles_by_the_cutoff(default_db):
    # UV-Vis and bundles are reported over the cutoff; a single channel like IR stays raw.
    rows = dict(default_db.execute("SELECT channel, scale FROM separability").fetchall())
    assert rows["uvvis"] == rows["vibrational_bundle"] == rows["all"] == "over_cutoff"
    assert rows["ir"] == rows["dipole_norm"] == "raw"
    # The UV-Vis median equals the median over source tasks of the nearest distractor's distance / 0.05.
    expected = default_db.execute(
        """WITH nearest AS (
               SELECT t.task_id, min(p.distance) / 0.05 AS d
               FROM benchmark_tasks AS t JOIN pair_separation AS p
                 ON p.family_id = t.family_id AND p.channel = t.channel
                AND t.source_label IN (p.label_a, p.label_b)
               WHERE t.condition = 'source' AND t.channel = 'uvvis' GROUP BY t.task_id)
           SELECT median(d) FROM nearest"""
    ).fetchall()[0][0]
    got = default_db.execute("SELECT nearest_median FROM separability WHERE channel = 'uvvis'").fetchall()[0][0]
    assert got == pytest.approx(expected)


def _tables_read(name: str) -> set[str]:
    """The tables and views a view file reads (FROM / JOIN), its own CTEs left out."""
    import re

    sql = (store.SQL_DIR / name).read_text()
    return set(re.findall(r"\b(?:FROM|JOIN)\s+(\w+)", sql)) - set(re.findall(r"(\w+) AS \(", sql))


def test_each_layer_reads_only_the_layer_below():
    """A staging view stages exactly one input table (a rule that needs two, such as a
    family's candidate count, is a mart); marts read staging views and other marts, never a table."""
    import re

    tables = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", (store.SQL_DIR / "schema.sql").read_text()))
    for name in store.VIEW_FILES:
        read = _tables_read(name)
        if name.startswith("staging/"):
            assert len(read) == 1 and read <= tables, (name, read)
        else:
            assert not read & tables, (name, read & tables)


@pytest.mark.parametrize("name", [n.split("/")[1].removesuffix(".sql") for n in store.VIEW_FILES])
def test_every_view_column_is_in_the_glossary(default_db, name):
    """One word for one thing from SQL up: every column a view gives (what `molp2s sql` prints)
    has its entry in the glossary."""
    from molp2s_stats.glossary import check_columns

    check_columns(default_db.sql(f"SELECT * FROM {name} LIMIT 0").columns)
