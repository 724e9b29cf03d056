"""The numba gradient as nutpie's C function (bayes/native.py), and traces of flat points named afterwards."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from molp2s_stats.bayes import density, native, numba_density, sampler
from molp2s_stats.bayes.synthetic import Shape, simulate_cells


@pytest.fixture(scope="module")
def small():
    data, _ = simulate_cells(Shape(name="native", models=3, channels=2, families=24), seed=2)
    return data


def test_this_nutpie_takes_the_gradient_as_a_c_function():
    """Otherwise every small fit falls back, silently, to the Python callback (twice as slow): a nutpie
    release that renames its low-level classes or their arguments must fail here, not there."""
    assert native.available()


def _call(function, dim: int, x: np.ndarray, table: np.ndarray) -> tuple[int, float, np.ndarray]:
    """The C function called as nutpie's sampler calls it: (dim, point, gradient out, log density out, table)."""
    gradient, value = np.zeros(len(x)), np.zeros(1)
    pointer = ctypes.POINTER(ctypes.c_double)
    code = function.ctypes(
        dim,
        x.ctypes.data_as(pointer),
        gradient.ctypes.data_as(pointer),
        value.ctypes.data_as(pointer),
        table.ctypes.data_as(ctypes.c_void_p),
    )
    return code, float(value[0]), gradient


@pytest.mark.parametrize("family_effects", [True, False])
def test_the_c_function_is_the_numba_gradient_and_rejects_what_nutpie_must_not_take(small, family_effects):
    model = density.density(small, family_effects=family_effects)
    kernel = native.Kernel(model)
    logp, _ = native._compiled()
    reference = numba_density.log_density_function(model)
    rng = np.random.default_rng(3)
    for seed in range(3):
        x = density.initial_point(model, seed) + rng.normal(0, 1.0, model.ndim)
        code, value, gradient = _call(logp, model.ndim, x, kernel.table)
        expected_value, expected_gradient = reference(x)
        assert code == 0
        assert value == expected_value  # the same compiled kernel on the same float64 point
        np.testing.assert_array_equal(gradient, expected_gradient)
    # a mean so far out that its prior's square overflows: a positive code, which nutpie treats as a divergence
    assert next(iter(model.free_shapes)) == "condition_mean"
    x = density.initial_point(model, 0)
    x[0] = 1e300
    assert _call(logp, model.ndim, x, kernel.table)[0] > 0
    # a point of the wrong size: a negative code, an error that stops the chain
    assert _call(logp, model.ndim + 1, np.zeros(model.ndim + 1), kernel.table)[0] < 0


def test_the_c_function_and_the_python_callback_draw_the_same_chains(small, monkeypatch):
    """Same kernel, same seeds, same sampler: bit for bit the same draws, whichever way nutpie calls it."""
    compiled = density.compile_density(small)
    assert compiled.gradient == "numba"
    settings = {"draws": 60, "tune": 60, "chains": 2, "seed": 5}
    assert isinstance(density.nutpie_model(compiled), native.NativeModel)
    through_c = sampler.sample(small, compiled=compiled, **settings)
    monkeypatch.setattr(native, "available", lambda: False)  # a nutpie without the classes: the callback
    by_callback = density.compile_density(small)
    assert not isinstance(density.nutpie_model(by_callback), native.NativeModel)
    through_python = sampler.sample(small, compiled=by_callback, **settings)
    assert set(through_c.posterior) == set(compiled.model.dims)
    for name in compiled.model.dims:
        np.testing.assert_array_equal(through_c.posterior[name].values, through_python.posterior[name].values)
        assert through_c.posterior[name].dims == through_python.posterior[name].dims
    np.testing.assert_array_equal(
        through_c.sample_stats["n_steps"].values, through_python.sample_stats["n_steps"].values
    )


@pytest.mark.parametrize("family_kind", ["signed", "log scale", "centred on the family"])
def test_a_stack_of_points_is_reported_as_each_point_is(small, family_kind, monkeypatch):
    """``Density.reported`` on (chains, draws, flat) equals it on each point: every spread kind, with
    pairs centred on their family's intercept or not."""
    pairs = len(small.family_channels)
    lam = {
        "signed": (0.0, np.zeros(pairs)),
        "log scale": (0.5, np.full(pairs, 0.25)),
        "centred on the family": (0.875, np.array([0.0, 0.5, 0.75, 1.0])[np.arange(pairs) % 4]),
    }[family_kind]
    monkeypatch.setattr(density, "family_centredness", lambda counts: lam)
    model = density.density(small)
    assert model.pair_shift.any() == (family_kind == "centred on the family")
    points = np.random.default_rng(1).normal(0, 1.0, (3, 5, model.ndim))
    stacked = model.reported(points)
    for chain in range(3):
        for draw in range(5):
            for name, value in model.reported(points[chain, draw]).items():
                np.testing.assert_array_equal(stacked[name][chain, draw], value, err_msg=name)
