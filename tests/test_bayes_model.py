"""The hierarchical model's data and structure (no sampling here: see the issue 5 note)."""

from __future__ import annotations

import numpy as np
import pytest

from molp2s_stats import store
from molp2s_stats.bayes import data as bayes_data
from molp2s_stats.bayes import model as bayes_model
from molp2s_stats.ingest import load

from tiny_benchmark import write_benchmark, write_responses


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("bayes")
    con = store.connect(root / "db.duckdb")
    load(con, benchmark=write_benchmark(root / "bench"), responses=write_responses(root / "responses"))
    return bayes_data.read_model_data(con)


def test_cells_pool_cf_tasks_and_cover_the_cohort(tiny):
    # Cohort F1, F2, F4 in dipole_norm; 2 models. Cells: 2 models × 3 families × 3 conditions = 18;
    # cf cells pool the family's cf tasks: F1 and F2 have 2 each, F4 has 1.
    assert tiny.cells.height == 18
    cf = tiny.cells.filter(tiny.cells["condition"] == "cf").sort("model", "family_id")
    assert cf["trials"].to_list() == [2, 2, 1, 2, 2, 1]
    # m1's cf successes: F1 1 (B right, C→A), F2 1 (A right, C invalid), F4 0
    assert cf.filter(cf["model"] == "m1")["successes"].to_list() == [1, 1, 0]
    # P0 rows: one per model and cohort family
    assert tiny.p0.height == 6 and tiny.p0["trials"].sum() == 6
    assert tiny.n_candidates == pytest.approx((3 + 3 + 2) / 3)


@pytest.mark.parametrize("family_effects", [True, False])
def test_model_builds_with_finite_log_density(tiny, family_effects):
    model = bayes_model.build_model(tiny, family_effects=family_effects)
    point = model.initial_point()
    logp = model.compile_logp()(point)
    assert np.isfinite(logp)
    names = {v.name for v in model.free_RVs}
    assert {"condition_mean", "channel_sd", "channel_z", "p0_mean"} <= names
    assert ("family_z" in names) == family_effects
    assert point["channel_z"].shape == (2, 1, 3)
