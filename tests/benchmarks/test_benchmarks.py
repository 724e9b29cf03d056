"""Every script under benchmarks/ runs, on a tiny size, so that none of them rots unnoticed.

Speed and memory figures are the scripts' business (they print them); here only that each
runs to the end and prints its summary.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from molp2s_stats import performance

from tests.support import BENCHMARKS
TINY = {
    "bench_load_and_metrics.py": (["--rows", "20000", "--jsonl-rows", "200"], "Summary"),
    "bench_stability.py": (["--repeats", "1"], "rank intervals"),
    "bench_prompts.py": (["--repeats", "1"], "render every task"),
    "bench_parse.py": ([], "misses by answer style"),
    "bench_startup.py": (["--repeats", "1"], "molp2s --help"),
    # `make clean` on the fresh clone: the clone, the timing and the summary, without a 3-minute install
    "bench_report.py": (["--repeats", "1", "--target", "clean"], "median"),
    "bench_bayes_frontier.py": (["--seeds", "1", "--families", "30", "--budget", "0", "--out", "{tmp}/frontier.csv"],
                                "ceiling pair called certain"),
    "bench_bayes.py": (["--families", "10", "--models", "2", "--chains", "2", "--tune", "30", "--draws", "30",
                        "--samplers", "nutpie", "--process", "1", "--budget", "0"], "whole process"),
    "bench_audit.py": (["--seeds", "1", "--families", "40"], "top-20 precision"),
    "bench_crash.py": (["--trials", "2"], "faults survived"),
    "bench_fit_cost.py": (["--models", "2,3", "--channels", "2", "--families", "20", "--budget", "0",
                           "--out", "{tmp}/cost.csv"], "seconds per effective draw grow as cells^"),
    "bench_warm_start.py": (["--sizes", "3x2x20", "--budget", "0"], "the warm start saved"),
    "bench_fit_geometry.py": (["--sizes", "2x2x20", "--draws", "50", "--tune", "50"], "leapfrog steps a draw"),
    "bench_fit_shapes.py": (["--seeds", "1", "--shapes", "small-study", "--budget", "0", "--out", "{tmp}/shapes.csv"],
                            "all shapes"),
    "bench_adaptive.py": (["--seeds", "1", "--data", "disagree,agree", "--budgets", "0.15", "--models", "1",
                           "--out", "{tmp}/adaptive.csv"], "regression bound (agree)"),
    "bench_estimate_metrics.py": (["--seeds", "1", "--data", "disagree", "--budgets", "0.15", "--models", "ceiling",
                                   "--out", "{tmp}/metrics.csv"], "of a bound"),
    "bench_intervals.py": (["--quick"], "Mid-range (truth 50%)"),
    "bench_loo.py": (["--observations", "300", "--repeats", "1"], "largest difference"),
    "bench_sbc.py": (["--replicates", "2", "--draws", "60", "--out", "{tmp}/ranks.csv", "--figure", "{tmp}/ranks.svg"],
                     "family_channel_sd"),
}


def test_every_script_is_covered():
    assert sorted(p.name for p in BENCHMARKS.glob("bench_*.py")) == sorted(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_script_runs_on_a_tiny_size(script, tmp_path):
    arguments, expected = TINY[script]
    arguments = [a.format(tmp=tmp_path) for a in arguments]
    run = subprocess.run([sys.executable, str(BENCHMARKS / script), *arguments], capture_output=True, text=True,
                         timeout=600)
    # a figure that misses its target exits 1: only a crash fails here
    assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr[-4000:]
    assert "Traceback" not in run.stderr, run.stderr[-4000:]
    assert expected in run.stdout, run.stdout[-2000:]


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
