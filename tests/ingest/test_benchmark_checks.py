"""Task-table rules that the loader enforces, each with its message."""

from __future__ import annotations

import polars as pl
import pytest

from molp2s_stats import store
from molp2s_stats.ingest import InputError, load
from tests.support.tiny_benchmark import write_benchmark


def _edit_tasks(folder, edit):
    path = folder / "tasks.csv"
    edit(pl.read_csv(path)).write_csv(path)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: pl.concat(
                [
                    t,
                    t.filter(pl.col("task_id") == "F1-dipole_norm-cf-B").with_columns(
                        pl.lit("F1-again").alias("task_id")
                    ),
                ]
            ),
            r"row 23: second cf task for candidate 'B' for family 'F1' in channel 'dipole_norm'$",
        ),
        (
            lambda t: t.with_columns(
                pl.when(pl.col("task_id") == "F1-dipole_norm-shuffled")
                .then(pl.lit("F1"))
                .otherwise(pl.col("shown_family"))
                .alias("shown_family"),
                pl.when(pl.col("task_id") == "F1-dipole_norm-shuffled")
                .then(pl.lit("A"))
                .otherwise(pl.col("shown_label"))
                .alias("shown_label"),
            ),
            r"row 3: a shuffled task must show another family's properties$",
        ),
        (
            lambda t: t.with_columns(
                pl.when(pl.col("task_id") == "F1-dipole_norm-cf-B")
                .then(pl.lit("C"))
                .otherwise(pl.col("shown_label"))
                .alias("shown_label")
            ),
            r"row 4: a cf task must show its own family's candidate 'B', shows \('F1', 'C'\)$",
        ),
    ],
)
def test_task_rules(tmp_path, edit, message):
    folder = write_benchmark(tmp_path / "bench")
    path = _edit_tasks(folder, edit)
    con = store.connect(tmp_path / "db.duckdb")
    with pytest.raises(InputError, match=f"^{path}: {message}"):
        load(con, benchmark=folder)
    assert con.execute("SELECT count(*) FROM tasks").fetchall() == [(0,)]


def test_nested_bundle_is_refused(tmp_path):
    folder = write_benchmark(tmp_path / "bench")
    (folder / "channels.csv").write_text(
        "channel,group,name,distance,cutoff,components\nspectra,bundle,Spectra,,,vibrational_bundle;uvvis\n"
    )
    with pytest.raises(
        InputError,
        match=r"channels.csv: row 1: bundle 'spectra' names other bundles "
        r"\['vibrational_bundle'\]",
    ):
        load(store.connect(tmp_path / "db.duckdb"), benchmark=folder)


def test_null_property_value_means_no_value(tmp_path):
    # F4's B has no dipole value: its only pair is not verifiable, so F4 passes validation.
    folder = write_benchmark(tmp_path / "bench")
    path = folder / "properties.jsonl"
    lines = path.read_text().splitlines()
    lines = [line.replace('"value": 1.0', '"value": null') if '"F4", "label": "B"' in line else line for line in lines]
    path.write_text("\n".join(lines) + "\n")
    con = store.connect(tmp_path / "db.duckdb")
    load(con, benchmark=folder)
    assert con.execute("SELECT count(*) FROM properties WHERE family_id = 'F4'").fetchall() == [(1,)]
    assert con.execute(
        "SELECT verifiable_pairs, input_validated FROM input_validation WHERE family_id = 'F4'"
    ).fetchall() == [(0, True)]
