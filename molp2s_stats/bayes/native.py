"""The numba gradient handed to nutpie as a C function, so that the chains never wait on Python.

Why: through ``nutpie.compiled_pyfunc.from_pyfunc`` every gradient is a Python call, made with
the GIL held, and the four chains' threads queue for it. On a test-sized study (3 models × 2
channels × 40 families) the gradient itself takes about 25 µs while a leapfrog step took 75 µs:
the rest was the call. nutpie's own PyMC backend avoids this by compiling the model with numba
into a C function that the Rust sampler calls directly; this module does the same for our
hand-written gradient (``numba_density``).

How: one C function for every model, compiled once and cached by numba, reads the model's
arrays (``Kernel``: ``numba_density.kernel_arguments``, built once a fit) through a table of
their addresses and sizes that nutpie passes back on each call (its "user data" pointer). The draws nutpie stores are the flat
points themselves (a second C function copies them), named afterwards (``points.reported_trace``).

This uses nutpie's low-level classes (``nutpie._lib``: ``LogpFunc``, ``ExpandFunc``,
``PyMcModel``), the ones its PyMC backend uses, which are not a documented interface.
``available()`` checks they are there with the arguments this module passes (nutpie 0.16);
where not, ``density.compile_density`` builds no kernel and nutpie calls the gradient through
Python as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from nutpie import _lib
from nutpie.sample import CompiledModel

from ..jit import compiled
from . import numba_density
from .points import POINT, POINT_DIM, point_labels

# nutpie's return codes: 0 is a gradient; a positive code a point it may reject as it does a
# divergence (a non-finite density or gradient), a negative one an error that stops the chain
_FINE, _NOT_FINITE_GRADIENT, _NOT_FINITE_DENSITY, _WRONG_SIZE = 0, 3, 4, -1


@intrinsic
def _as_pointer(typingctx, address):
    """An integer address as a ``void *`` (numba has no cast for it)."""
    signature = types.voidptr(address)

    def codegen(context, builder, signature, arguments):
        return builder.inttoptr(arguments[0], cgutils.voidptr_t)

    return signature, codegen


# The table nutpie hands back on each call: per array of ``numba_density.kernel_arguments`` its
# address, then the sizes the arrays are viewed with. Every array is C-contiguous.
_TABLE = 9 + 6  # nine addresses, then the point's size, the pairs, models, conditions, cells and P0 cells
_LOGP_SIGNATURE = types.int64(
    types.uint64,
    types.CPointer(types.float64),
    types.CPointer(types.float64),
    types.CPointer(types.float64),
    types.voidptr,
)
_EXPAND_SIGNATURE = types.int64(
    types.uint64, types.uint64, types.CPointer(types.float64), types.CPointer(types.float64), types.voidptr
)


def _logp(dim, x_, gradient_, logp_, table_):
    table = numba.carray(table_, (_TABLE,), np.int64)
    ndim, n_pairs, m, k, n_cells, n_p0 = table[9], table[10], table[11], table[12], table[13], table[14]
    if dim != ndim:
        return _WRONG_SIZE
    x = numba.carray(x_, (ndim,))
    gradient = numba.carray(gradient_, (ndim,))
    layout = numba.carray(_as_pointer(table[0]), (16,), np.int64)
    priors = numba.carray(_as_pointer(table[1]), (6,), np.float64)
    channel = numba.carray(_as_pointer(table[2]), (2, m, k), np.float64)
    pairs = numba.carray(_as_pointer(table[3]), (2, n_pairs), np.float64)
    pair_family = numba.carray(_as_pointer(table[4]), (n_pairs,), np.int64)
    cell_index = numba.carray(_as_pointer(table[5]), (5, n_cells), np.int64)
    cell_counts = numba.carray(_as_pointer(table[6]), (2, n_cells), np.float64)
    p0_index = numba.carray(_as_pointer(table[7]), (2, n_p0), np.int64)
    p0_counts = numba.carray(_as_pointer(table[8]), (2, n_p0), np.float64)
    value = numba_density.log_density_and_gradient(
        x, gradient, layout, priors, channel, pairs, pair_family, cell_index, cell_counts, p0_index, p0_counts
    )
    logp = numba.carray(logp_, (1,))
    logp[0] = value
    if not np.isfinite(value):
        return _NOT_FINITE_DENSITY
    for i in range(ndim):
        if not np.isfinite(gradient[i]):
            return _NOT_FINITE_GRADIENT
    return _FINE


def _copy(dim, expanded, x_, out_, table_):
    if dim != expanded:
        return _WRONG_SIZE
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    for i in range(dim):
        out[i] = x[i]
    return _FINE


@cache
def _compiled() -> tuple:
    """Both C functions, compiled on first use (cached on disk by numba where it can write)."""
    return compiled(_logp, c_signature=_LOGP_SIGNATURE), compiled(_copy, c_signature=_EXPAND_SIGNATURE)


@cache
def available() -> bool:
    """Whether this nutpie has the low-level classes this module builds on, with the arguments it passes."""
    expected = {
        "LogpFunc": ["ptr", "user_data_ptr", "keep_alive"],
        "ExpandFunc": ["dim", "expanded_dim", "ptr", "user_data_ptr", "keep_alive"],
        "PyMcModel": ["density", "expand", "variables", "dim", "dim_sizes", "coords", "init_func", "transform_adapter"],
    }
    for name, arguments in expected.items():
        try:
            found = list(inspect.signature(getattr(_lib, name)).parameters)
        except (AttributeError, TypeError, ValueError):
            return False
        if found != arguments:
            return False
    return hasattr(_lib, "PyVariable") and hasattr(_lib.PySampler, "from_pymc")


@compiled
def _evaluate_repeatedly(
    times, x, gradient, layout, priors, channel, pairs, pair_family, cell_index, cell_counts, p0_index, p0_counts
):
    for _ in range(times):
        numba_density.log_density_and_gradient(
            x, gradient, layout, priors, channel, pairs, pair_family, cell_index, cell_counts, p0_index, p0_counts
        )


class Kernel:
    """One model's arrays for the numba gradient (``numba_density.kernel_arguments``), built once, and the
    table of their addresses that nutpie hands back to the C function on each call. Whatever holds the
    table (a sampler, through ``NativeModel``) holds this, and so the arrays."""

    def __init__(self, model) -> None:
        self.model = model
        self.arrays = numba_density.kernel_arguments(model)
        layout, priors, channel, pairs, _, cell_index, _, p0_index, _ = self.arrays
        if layout.shape != (16,) or priors.shape != (6,):
            raise ValueError("numba_density's packed layout changed: update native._logp's table")
        self.table = np.array(
            [array.ctypes.data for array in self.arrays]
            + [model.ndim, pairs.shape[1], channel.shape[1], channel.shape[2], cell_index.shape[1], p0_index.shape[1]],
            dtype=np.int64,
        )

    def evaluate_repeatedly(self, point: np.ndarray, times: int) -> None:
        """The gradient at ``point``, ``times`` times in a row with the GIL released and no Python between,
        as nutpie's threads call the C function (what ``Compiled.step_seconds`` times)."""
        x = np.ascontiguousarray(point, dtype=np.float64)
        _evaluate_repeatedly(times, x, np.empty_like(x), *self.arrays)

    def nutpie_model(self, initial_points: Callable[[int], np.ndarray]) -> NativeModel:
        """The model as nutpie samples it, its gradient called without Python; its traces hold flat points."""
        return NativeModel(dims={POINT: (POINT_DIM,)}, kernel=self, initial_points=initial_points)


@dataclass(frozen=True)
class NativeModel(CompiledModel):
    """What ``nutpie.sample`` asks of a compiled model (``nutpie.sample.CompiledModel``): here the flat
    point as the one stored variable. nutpie keeps this object, and so the kernel's arrays, alive as
    long as the sampler (its ``keep_alive``)."""

    dims: dict
    kernel: Kernel
    initial_points: Callable[[int], np.ndarray]

    @property
    def n_dim(self) -> int:
        return self.kernel.model.ndim

    @property
    def shapes(self) -> dict:
        return {POINT: (self.n_dim,)}

    @property
    def coords(self) -> dict:
        return {POINT_DIM: point_labels(self.n_dim)}

    def _make_model(self, init_mean):  # init_mean: nutpie's, unused (the chains start at initial_points)
        logp, copy = _compiled()
        table = self.kernel.table.ctypes.data
        variables = _lib.PyVariable.new_variables(
            [POINT], ["float64"], [(self.n_dim,)], {POINT_DIM: self.n_dim}, {POINT: (POINT_DIM,)}
        )

        def initial(seed):
            return np.ascontiguousarray(self.initial_points(seed), dtype=np.float64)

        return _lib.PyMcModel(
            _lib.LogpFunc(logp.address, table, self),
            _lib.ExpandFunc(self.n_dim, self.n_dim, copy.address, table, self),
            variables,
            self.n_dim,
            {POINT_DIM: self.n_dim},
            self.coords,
            initial,
            None,
        )

    def _make_sampler(self, settings, init_mean, cores, progress_type, store):
        return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean), progress_type, store)
