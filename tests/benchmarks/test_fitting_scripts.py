"""The benchmark scripts that fit the model run to their summary at a tiny size (none rots unnoticed).

Their speed and accuracy figures are theirs to print (benchmarks/results/); here only that each runs."""

from __future__ import annotations

import pytest

from tests.support.benchmark_scripts import FITTING


@pytest.mark.parametrize("script", sorted(FITTING))
def test_script_runs_on_a_tiny_size(script, run_tiny):
    run_tiny(script)
