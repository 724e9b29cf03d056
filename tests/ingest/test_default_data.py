"""The embedded benchmark in data/: real molecules, consistent families, big enough cohorts."""

from __future__ import annotations

import polars as pl
import pytest
from rdkit import Chem
from rdkit.Chem import rdMolDescriptors

from molp2s_stats import chem, simulate, store
from molp2s_stats.ingest import read_benchmark
from molp2s_stats.stats import metrics
from tests.support import DATA

PAPER_COHORT = 136


def canonical(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


@pytest.fixture(scope="module")
def tables():
    return read_benchmark(DATA / "benchmark")


@pytest.fixture(scope="module")
def db(default_database):
    con = store.connect(default_database, read_only=True)
    yield con
    con.close()


def test_every_candidate_completes_its_qm9_molecule(tables):
    provenance = pl.read_parquet(DATA / "benchmark" / "molecules.parquet")
    joined = tables["candidates"].join(tables["families"], on="family_id").join(provenance, on=["family_id", "label"])
    assert joined.height == tables["candidates"].height
    for row in joined.iter_rows(named=True):
        made = chem.complete(row["scaffold"], row["fragment"])
        assert canonical(made) == canonical(row["molecule"]) == canonical(row["qm9_smiles"]), row


def test_candidates_of_a_family_share_the_fragment_formula(tables):
    formulas = tables["candidates"].with_columns(
        pl.col("fragment")
        .map_elements(lambda s: rdMolDescriptors.CalcMolFormula(Chem.MolFromSmiles(s)), return_dtype=pl.String)
        .alias("formula")
    )
    per_family = formulas.group_by("family_id").agg(
        pl.col("formula").n_unique(), pl.col("molecule").n_unique(), pl.len()
    )
    assert (per_family["formula"] == 1).all()
    assert (per_family["molecule"] == per_family["len"]).all()  # no molecule twice in a family


def test_shuffled_tasks_never_show_their_own_family(tables):
    shuffled = tables["tasks"].filter(pl.col("condition") == "shuffled")
    assert shuffled.height > 0
    assert (shuffled["shown_family"] != shuffled["family_id"]).all()


SINGLE_CHANNELS = {
    "dipole_norm",
    "dipole_vector",
    "gap",
    "uvvis",
    "ir",
    "raman",
    "h1_peaks",
    "h1_peaks_int",
    "h1_atomwise",
    "c13_peaks",
    "c13_peaks_deg",
    "c13_atomwise",
}
BUNDLES = {"vibrational_bundle", "nmr_bundle", "all"}


def test_every_channel_cohort_is_at_least_paper_size(db):
    """The paper's twelve single channels and three bundles, each with a cohort of >= 136 families."""
    summary = db.sql("SELECT * FROM cohort_summary").pl()
    assert set(summary["channel"]) == SINGLE_CHANNELS | BUNDLES
    assert (summary["cohort"] >= PAPER_COHORT).all(), summary


def test_simulated_models_are_named_as_simulated(db):
    models = [r[0] for r in db.execute("SELECT model FROM stg_models").fetchall()]
    assert sorted(models) == sorted(m.name for m in simulate.DEFAULT_MODELS)
    assert len(models) == 8 and all(m.startswith("sim-") for m in models)


def test_simulation_parameters_and_truth_are_stored_beside_the_responses():
    folder = DATA / "responses" / "simulation"
    truth = pl.read_parquet(folder / "truth.parquet")
    assert set(truth["quantity"]) == {"acc_p0", "acc_source", "acc_shuffled", "reliance", "responsiveness"}
    assert (folder / "simulation.json").exists()


def test_data_is_small_enough_for_a_repository():
    size = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    assert size < 10 * 2**20


def test_default_leaderboard_runs(db):
    result = metrics.metrics_from_db(db, metrics=("pgr",), draws=50, seed=1)
    assert result["estimate"].null_count() == 0
