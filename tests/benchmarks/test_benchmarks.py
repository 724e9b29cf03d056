"""Every script under benchmarks/ runs, on a tiny size, so that none of them rots unnoticed
(the ones that fit the model: test_fitting_scripts.py), and their results files say where they ran.

Speed and memory figures are the scripts' business (they print them); here only that each
runs to the end and prints its summary.
"""

from __future__ import annotations

import pytest

from molp2s_stats import performance
from tests.support import BENCHMARKS
from tests.support.benchmark_scripts import FITTING, TINY


def test_every_script_is_covered():
    assert sorted(p.name for p in BENCHMARKS.glob("bench_*.py")) == sorted(TINY)


@pytest.mark.parametrize("script", sorted(set(TINY) - FITTING))
def test_script_runs_on_a_tiny_size(script, run_tiny):
    run_tiny(script)


def test_a_results_file_says_which_runs_made_it_and_where(tmp_path):
    out = tmp_path / "shapes.csv"
    out.write_text("shape,seed\n")
    assert "machine" in performance.describe(out)  # not recorded: says so, with the date git has (none here)
    performance.record(out, "bench_fit_shapes.py", ["--seeds", "1"])
    performance.record(out, "bench_fit_shapes.py", ["--seeds", "2"])
    line = performance.describe(out)
    cores = performance.machine()["cores"]
    assert line.startswith("`python benchmarks/bench_fit_shapes.py --seeds 2` (2 runs), ")
    assert f"on {cores} cores of " in line
