"""The Performance page reads results files through molp2s_stats.performance, which stays light.

The page's cells are executed by test_docs.py (every page's are); here: that the module and the
page import no sampler, that the page imports no benchmark script, and the module's summaries on
frames small enough to check by hand.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import polars as pl

from molp2s_stats import performance
from tests.support import ROOT

HEAVY = ("jax", "nutpie", "pymc", "pytensor", "arviz", "numba")
PAGE = ROOT / "docs" / "performance.qmd"


def _imported_after(code: str) -> set[str]:
    """The heavy top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(done.stdout.split())


def test_the_module_imports_no_sampler():
    assert _imported_after("import molp2s_stats.performance") == set()


def test_the_page_imports_the_module_and_no_benchmark_script():
    page = PAGE.read_text(encoding="utf-8")
    cells = "\n".join(re.findall(r"^```\{python\}\n(.*?)^```", page, re.MULTILINE | re.DOTALL))
    assert "sys.path" not in cells
    imports = [line.strip() for line in cells.splitlines() if re.match(r"\s*(import|from) \S", line)]
    assert "from molp2s_stats import performance  # reads results files; imports no sampler" in imports
    assert not [line for line in imports if re.search(r"\b(bench_\w+|_provenance)\b", line)], imports
    # everything the page imports, together, leaves the samplers unimported
    assert _imported_after("\n".join(imports)) == set()


def test_leaderboard_shapes_are_named_and_read_back():
    assert performance.leaderboard_shape(56, 12, 389) == "lb-56x12x389"
    table = pl.DataFrame({"shape": ["lb-56x12x389", "paper"]})
    sized = performance.with_leaderboard_size(table)
    assert sized.row(0) == ("lb-56x12x389", 56, 12, 389)
    assert sized.row(1) == ("paper", None, None, None)  # a study shape has no leaderboard size
    # seeds take the effects in turn: 1 the full benchmark's, 3 large, 5 the full benchmark's again
    assert performance.leaderboard_effects(3) == "large family effects"
    assert performance.leaderboard_effects(5) == performance.leaderboard_effects(1)


def test_the_grid_by_models_counts_fits_and_finds_the_slowest():
    # 7 models: two shapes × two seeds, one fit missed; 56 models: one fit. Slowest by eye: 30 s and 600 s.
    grid = pl.DataFrame(
        {
            "shape": ["lb-7x2x136", "lb-7x2x136", "lb-7x5x389", "lb-7x5x389", "lb-56x15x389"],
            "seed": [1, 2, 1, 2, 1],
            "passed": [True, True, False, True, True],
            "seconds": [10.0, 20.0, 30.0, 12.0, 600.0],
        }
    )
    table = performance.leaderboard_by_models(grid)
    assert table.select("models", "shapes", "seeds", "fits", "passed").rows() == [(7, 2, 2, 4, 3), (56, 1, 1, 1, 1)]
    assert table["median_seconds"].to_list() == [16.0, 600.0]  # median of 10, 12, 20, 30: (12 + 20) / 2
    assert table["slowest_seconds"].to_list() == [30.0, 600.0]


def test_growth_is_the_slope_of_seconds_per_draw_on_cells():
    # seconds / min_ess = sqrt(cells) exactly: slope 0.5, no error; one size alone has no slope
    cells = [100, 400, 1600]
    cost = pl.DataFrame({"cells": cells, "seconds": [math.sqrt(c) * 400 for c in cells], "min_ess": [400.0] * 3})
    slope, error = performance.growth(cost)
    assert math.isclose(slope, 0.5) and error < 1e-9
    assert performance.growth(cost.head(1)) is None


def test_sbc_uniformity_tells_uniform_ranks_from_skewed_ones():
    rng = np.random.default_rng(0)
    uniform = rng.integers(0, 100, 2000)
    skewed = np.minimum(rng.integers(0, 100, 2000), rng.integers(0, 100, 2000))  # ranks pile up low: a bias
    frame = pl.DataFrame(
        {
            "replicate": np.arange(4000) % 200,
            "quantity": ["u"] * 2000 + ["s"] * 2000,
            "rank": np.concatenate([uniform, skewed]),
            "ranked_draws": 99,
        }
    )
    table = {r["quantity"]: r for r in performance.sbc_uniformity(frame).iter_rows(named=True)}
    assert table["u"]["p_value"] > 0.01 and table["s"]["p_value"] < 1e-6
    assert table["u"]["ranks"] == 2000 and table["u"]["replicates"] == 200


def test_rank_range_errors_count_replicates_with_any_false_separation():
    # 4 replicates of one cell: one with a false separation → 25%, Clopper–Pearson [0.63, 80.6]%;
    # power: 9 of 20 pairs apart separated = 45%
    frame = pl.DataFrame(
        {
            "models": [8] * 4,
            "families": [30] * 4,
            "sizes": ["equal"] * 4,
            "any_false": [False, True, False, False],
            "top_tied_separated": [False, False, False, False],
            "separated_apart": [2, 3, 1, 3],
            "pairs_apart": [5, 5, 5, 5],
        }
    )
    row = performance.rank_range_errors(frame).row(0, named=True)
    assert (row["replicates"], row["any_false"], row["power"], row["top_false"]) == (4, 25.0, 45.0, 0.0)
    assert round(row["any_false_low"], 2) == 0.63 and round(row["any_false_high"], 1) == 80.6


def test_verdict_errors_take_the_worse_edge_and_count_ahead_or_behind_at_zero():
    # one cell, 4 studies a truth: at −margin 1 of 4 called equivalent, at +margin 2 of 4 (the worse edge:
    # 50%, Clopper–Pearson [6.8, 93.2]%); at 0, 1 of 4 called ahead (25%) and 2 of 4 equivalent (50%)
    frame = pl.DataFrame(
        {
            "families": [30] * 12,
            "sizes": ["equal"] * 12,
            "base": [0.6] * 12,
            "margin": [0.02] * 12,
            "truth": [-1] * 4 + [0] * 4 + [1] * 4,
            "verdict": ["equivalent", "undecided", "undecided", "behind"]
            + ["ahead", "equivalent", "equivalent", "undecided"]
            + ["equivalent", "equivalent", "undecided", "ahead"],
        }
    )
    row = performance.verdict_errors(frame).row(0, named=True)
    assert (row["base"], row["margin"], row["replicates"]) == (60.0, 2.0, 4)
    assert (row["equivalent_at_margin"], row["difference_at_zero"], row["equivalent_at_zero"]) == (50.0, 25.0, 50.0)
    assert round(row["equivalent_at_margin_low"], 1) == 6.8 and round(row["equivalent_at_margin_high"], 1) == 93.2
