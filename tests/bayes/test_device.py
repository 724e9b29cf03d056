"""The route to a GPU: the density evaluated on a named JAX device is the same function, and a device
JAX cannot see is a clear error, not a traceback."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from molp2s_stats.bayes import density
from molp2s_stats.bayes.synthetic import Shape, simulate_cells
from molp2s_stats.errors import UsageError


@pytest.fixture(scope="module")
def data():
    cells, _ = simulate_cells(Shape("device", models=2, channels=3, families=25), 4)
    return cells


@pytest.mark.parametrize("layout", ["grid", "pairs"])
def test_the_density_on_the_cpu_device_is_the_default_one(data, layout):
    import jax

    model = density.density(data)
    on_default = density.log_density_function(model, layout=layout)
    on_cpu = density.log_density_function(model, layout=layout, device=density.jax_device("cpu"))
    for seed in range(3):
        x = density.initial_point(model, seed)
        (a, grad_a), (b, grad_b) = on_default(x), on_cpu(x)
        assert a == b and np.array_equal(grad_a, grad_b)
    assert density.jax_device("cpu").platform == "cpu" and density.jax_device(None) is None
    assert jax.devices("cpu")  # the tests run wherever JAX runs


def test_a_device_jax_cannot_see_is_a_clear_error():
    import jax

    try:
        jax.devices("gpu")
        pytest.skip("this machine has a GPU JAX can use")
    except RuntimeError:
        pass
    with pytest.raises(UsageError, match=r"JAX sees no GPU here .*pip install -e '\.\[gpu\]'"):
        density.jax_device("gpu")
    with pytest.raises(UsageError, match="unknown device 'tpu0'"):
        density.jax_device("tpu0")


def test_fit_on_a_missing_gpu_says_so(tmp_path):
    import jax

    from molp2s_stats.cli import app

    try:
        jax.devices("gpu")
        pytest.skip("this machine has a GPU JAX can use")
    except RuntimeError:
        pass
    from molp2s_stats import simulate
    from tests.support.simulated_benchmark import write_simulated

    db, _ = write_simulated(tmp_path, families=12, channels=("gap",), models=simulate.DEFAULT_MODELS[:2], seed=3)
    result = CliRunner().invoke(app, ["fit", "--db", str(db), "--device", "gpu", "--out", str(tmp_path / "f.nc")])
    assert result.exit_code != 0 and "JAX sees no GPU here" in result.output
    assert "Traceback" not in result.output
