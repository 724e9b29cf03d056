"""The log density of ``density`` and its gradient, written out by hand in numba, for small models.

Why a third copy of the model: nutpie asks each chain's thread for one gradient at a time,
and a JAX call costs about 0.2 ms however small the model (XLA's CPU runtime runs each of the
gradient's ~60 fused kernels as its own task). On a test-sized study (3 models × 2 channels ×
40 families, 151 parameters) that overhead was the whole gradient, and fits spent 80% of their
time in it. Compiled by numba, with the GIL released, the same gradient takes microseconds.
On large grids XLA's vectorised exp and log1p win instead, so ``density.compile_density``
picks this backend below ``bayes.NUMBA_CELLS`` binomial cells (benchmarks/bench_density_backends.py
measures the crossover).

The density is ``density.log_density_function``'s exactly (the same parameters, transforms and
priors, constants dropped), in float64; tests/bayes/test_model.py compares value and gradient
with the JAX density's at random points of every parametrisation (signed and log-scale spreads,
partial centring, nested shifts, with and without family effects). The reverse pass follows the
forward one line by line: each ``d_<name>`` is the derivative of the log density by ``<name>``.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod, sqrt

import numpy as np

from ..jit import compiled
from .data import MODELLED_CONDITIONS
from .model import PRIOR_MEAN_SD, SPREAD_SCALE


def _answered_cells(model) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells of ``model`` (a ``density.Density``) that have answers, in long form, from the same
    grid the JAX density reads (cells without answers add nothing to the log density): per cell its
    (model, condition, channel, family, family × channel pair or −1) and its (successes, trials);
    per P0 cell its (model, family) and (successes, trials)."""
    counts = model.counts
    n_channels, n_families = counts.successes.shape[2], counts.successes.shape[3]
    pair_of = np.full((n_channels, n_families), -1, dtype=np.int64)
    if model.family_effects:
        pair_of[counts.pair_channel, counts.pair_family] = np.arange(len(counts.pair_channel))
    at = np.nonzero(counts.trials)
    p0_at = np.nonzero(counts.p0_trials)
    return (
        np.stack([*at, pair_of[at[2], at[3]]]).astype(np.int64),
        np.stack([counts.successes[at], counts.trials[at]]).astype(np.float64),
        np.stack(p0_at).astype(np.int64),
        np.stack([counts.p0_successes[p0_at], counts.p0_trials[p0_at]]).astype(np.float64),
    )


def cell_count(model) -> int:
    """How many binomial cells the gradient visits (the size ``NUMBA_CELLS`` is compared with)."""
    return int(np.count_nonzero(model.counts.trials) + np.count_nonzero(model.counts.p0_trials))


def log_density_function(model) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``point -> (log density, gradient)`` of ``model`` (a ``density.Density``), in float64."""
    arguments = kernel_arguments(model)

    def evaluate(point: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.ascontiguousarray(point, dtype=np.float64)
        gradient = np.empty_like(x)
        value = log_density_and_gradient(x, gradient, *arguments)
        return float(value), gradient

    return evaluate


def kernel_arguments(model) -> tuple[np.ndarray, ...]:
    """What ``log_density_and_gradient`` reads of ``model`` besides the point, as nine C-contiguous arrays
    in its order: the layout of the flat point, the priors, the centredness per (model, condition) and
    per pair, each pair's family, and the cells' and P0 cells' indices and counts."""
    cell_index, cell_counts, p0_index, p0_counts = _answered_cells(model)
    m, k = len(model.data.models), len(MODELLED_CONDITIONS)
    n_channels, n_families = model.counts.successes.shape[2], model.counts.successes.shape[3]
    offsets, at = {}, 0
    for name, shape in model.free_shapes.items():
        offsets[name] = at
        at += prod(shape)
    family = model.family_effects
    n_pairs = len(model.counts.pair_channel) if family else 0
    # packed into a few arrays: numba checks each argument's type on every call
    layout = np.array(
        [m, k, n_channels, n_families, n_pairs]
        + [offsets.get(name, -1) for name in _BLOCKS]
        + [family, family and bool(model.signed["family_sd"]), family and bool(model.signed["family_channel_sd"])],
        dtype=np.int64,
    )
    priors = np.array(
        [model.centre, PRIOR_MEAN_SD, *(SPREAD_SCALE[s] for s in _SPREADS)]
        + [float(model.lam_of["family_sd"]) if family else 0.0]
    )
    channel = np.stack(
        [
            np.asarray(model.lam_of["channel_sd"], dtype=np.float64).reshape(m, k),
            np.asarray(model.signed["channel_sd"], dtype=np.float64).reshape(m, k),
        ]
    )
    pairs = np.zeros((2, n_pairs))
    pair_family = np.zeros(n_pairs, dtype=np.int64)
    if family:
        pairs[0] = np.asarray(model.lam_of["family_channel_sd"], dtype=np.float64).reshape(-1)
        pairs[1] = model.pair_shift
        pair_family[:] = model.counts.pair_family
    return layout, priors, channel, pairs, pair_family, cell_index, cell_counts, p0_index, p0_counts


_BLOCKS = (
    "condition_mean",
    "channel_sd",
    "channel_z",
    "p0_mean",
    "family_sd",
    "family_z_raw",
    "family_channel_sd",
    "family_channel_z_raw",
)
_SPREADS = ("channel_sd", "family_sd", "family_channel_sd")


@compiled
def log_density_and_gradient(
    x, grad, layout, priors, channel, pairs, pair_family, cell_index, cell_counts, p0_index, p0_counts
):
    """Writes the gradient into ``grad`` and returns the log density (see the module docstring)."""
    m, k, c, n_families, n_pairs = layout[0], layout[1], layout[2], layout[3], layout[4]
    at_mean, at_sd, at_z, at_p0 = layout[5], layout[6], layout[7], layout[8]
    at_fsd, at_fz, at_fcsd, at_fcz = layout[9], layout[10], layout[11], layout[12]
    family_effects, signed_family, signed_pairs = layout[13] != 0, layout[14] != 0, layout[15] != 0
    centre, mean_sd, b_channel, b_family, b_pairs = priors[0], priors[1], priors[2], priors[3], priors[4]
    lam_family = priors[5]
    lam_channel, signed_channel = channel[0], channel[1]
    lam_pairs, pair_shift = pairs[0], pairs[1]
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    lp = 0.0

    # --- forward: the channel effects of each model × condition --------------------------------
    root_c = sqrt(c)
    z = np.empty((m, k, c))
    scale = np.empty((m, k))
    cell = np.empty((m, k, c))
    log_sigma = np.empty((m, k))
    for a in range(m):
        for b in range(k):
            mean = x[at_mean + a * k + b]
            lp += -0.5 * ((mean - centre) / mean_sd) ** 2
            free_sd = x[at_sd + a * k + b]
            lam = lam_channel[a, b]
            if signed_channel[a, b] != 0.0:
                lp += -0.5 * (free_sd / b_channel) ** 2
                scale[a, b] = free_sd
            else:
                lp += -0.5 * (np.exp(free_sd) / b_channel) ** 2 + free_sd
                scale[a, b] = np.exp((1.0 - lam) * free_sd)
            log_sigma[a, b] = lam * free_sd
            # zero-sum coordinates (density._zero_sum)
            base = at_z + (a * k + b) * (c - 1)
            total = 0.0
            for j in range(c - 1):
                total += x[base + j]
            shift = total / (root_c + c)
            for j in range(c - 1):
                z[a, b, j] = x[base + j] - shift
            z[a, b, c - 1] = -total / root_c
            precision = np.exp(-2.0 * log_sigma[a, b])
            for j in range(c):
                lp += -0.5 * z[a, b, j] ** 2 * precision
                cell[a, b, j] = mean + scale[a, b] * z[a, b, j]
            lp -= (c - 1) * log_sigma[a, b]
    for a in range(m):
        p0 = x[at_p0 + a]
        lp += -0.5 * ((p0 - centre) / mean_sd) ** 2

    # --- forward: the family intercepts and family × channel deviations ------------------------
    family = np.zeros(n_families)
    u = np.zeros(n_families)
    deviation = np.zeros(n_pairs)
    pair_effect = np.zeros(n_pairs)
    pair_scale = np.zeros(n_pairs)
    pair_precision = np.zeros(n_pairs)
    scale_f = 0.0
    precision_f = 0.0
    if family_effects:
        free_f = x[at_fsd]
        if signed_family:
            lp += -0.5 * (free_f / b_family) ** 2
            scale_f = free_f
        else:
            lp += -0.5 * (np.exp(free_f) / b_family) ** 2 + free_f
            scale_f = np.exp((1.0 - lam_family) * free_f)
        log_sigma_f = lam_family * free_f
        root_f = sqrt(n_families)
        total = 0.0
        for j in range(n_families - 1):
            total += x[at_fz + j]
        shift = total / (root_f + n_families)
        for j in range(n_families - 1):
            u[j] = x[at_fz + j] - shift
        u[n_families - 1] = -total / root_f
        precision_f = np.exp(-2.0 * log_sigma_f)
        for j in range(n_families):
            lp += -0.5 * u[j] ** 2 * precision_f
            family[j] = scale_f * u[j]
        lp -= (n_families - 1) * log_sigma_f
        free_fc = x[at_fcsd]
        if signed_pairs:
            lp += -0.5 * (free_fc / b_pairs) ** 2
        else:
            lp += -0.5 * (np.exp(free_fc) / b_pairs) ** 2 + free_fc
        for p in range(n_pairs):
            lam = lam_pairs[p]
            pair_scale[p] = free_fc if signed_pairs else np.exp((1.0 - lam) * free_fc)
            log_sigma_p = lam * free_fc
            deviation[p] = x[at_fcz + p] - pair_shift[p] * family[pair_family[p]]
            pair_precision[p] = np.exp(-2.0 * log_sigma_p)
            lp += -0.5 * deviation[p] ** 2 * pair_precision[p] - log_sigma_p
            pair_effect[p] = pair_scale[p] * deviation[p]

    # --- the binomial cells, and the first step back: d lp / d η per cell ----------------------
    d_cell = np.zeros((m, k, c))
    d_family = np.zeros(n_families)
    d_pair = np.zeros(n_pairs)
    for i in range(cell_index.shape[1]):
        a, b, j, f, p = cell_index[0, i], cell_index[1, i], cell_index[2, i], cell_index[3, i], cell_index[4, i]
        successes, trials = cell_counts[0, i], cell_counts[1, i]
        eta = cell[a, b, j]
        if family_effects:
            eta += family[f]
            if p >= 0:
                eta += pair_effect[p]
        term, r = _binomial(successes, trials, eta)
        lp += term
        d_cell[a, b, j] += r
        if family_effects:
            d_family[f] += r
            if p >= 0:
                d_pair[p] += r
    for i in range(p0_index.shape[1]):
        a, f = p0_index[0, i], p0_index[1, i]
        successes, trials = p0_counts[0, i], p0_counts[1, i]
        eta = x[at_p0 + a]
        if family_effects:
            eta += family[f]
        term, r = _binomial(successes, trials, eta)
        lp += term
        grad[at_p0 + a] += r
        if family_effects:
            d_family[f] += r
    for a in range(m):
        grad[at_p0 + a] += -(x[at_p0 + a] - centre) / mean_sd**2

    # --- back through the family × channel deviations and the family intercepts ---------------
    if family_effects:
        free_fc = x[at_fcsd]
        if signed_pairs:
            d_free_fc = -free_fc / b_pairs**2
        else:
            d_free_fc = -np.exp(2.0 * free_fc) / b_pairs**2 + 1.0
        for p in range(n_pairs):
            lam = lam_pairs[p]
            d_deviation = d_pair[p] * pair_scale[p] - deviation[p] * pair_precision[p]
            grad[at_fcz + p] += d_deviation
            d_family[pair_family[p]] -= pair_shift[p] * d_deviation
            d_scale = d_pair[p] * deviation[p]
            d_free_fc += d_scale * (1.0 if signed_pairs else (1.0 - lam) * pair_scale[p])
            d_free_fc += lam * (deviation[p] ** 2 * pair_precision[p] - 1.0)
        grad[at_fcsd] += d_free_fc
        free_f = x[at_fsd]
        if signed_family:
            d_free_f = -free_f / b_family**2
        else:
            d_free_f = -np.exp(2.0 * free_f) / b_family**2 + 1.0
        d_scale_f = 0.0
        d_log_sigma_f = -(n_families - 1.0)
        d_u = np.empty(n_families)
        for j in range(n_families):
            d_u[j] = d_family[j] * scale_f - u[j] * precision_f
            d_scale_f += d_family[j] * u[j]
            d_log_sigma_f += u[j] ** 2 * precision_f
        d_free_f += d_scale_f * (1.0 if signed_family else (1.0 - lam_family) * scale_f)
        d_free_f += lam_family * d_log_sigma_f
        grad[at_fsd] += d_free_f
        _zero_sum_back(d_u, grad, at_fz, n_families)

    # --- back through the channel effects -------------------------------------------------------
    d_z = np.empty(c)
    for a in range(m):
        for b in range(k):
            free_sd = x[at_sd + a * k + b]
            lam = lam_channel[a, b]
            precision = np.exp(-2.0 * log_sigma[a, b])
            d_mean = -(x[at_mean + a * k + b] - centre) / mean_sd**2
            d_scale = 0.0
            d_log_sigma = -(c - 1.0)
            for j in range(c):
                d_mean += d_cell[a, b, j]
                d_scale += d_cell[a, b, j] * z[a, b, j]
                d_z[j] = d_cell[a, b, j] * scale[a, b] - z[a, b, j] * precision
                d_log_sigma += z[a, b, j] ** 2 * precision
            grad[at_mean + a * k + b] += d_mean
            if signed_channel[a, b] != 0.0:
                d_free = -free_sd / b_channel**2 + d_scale
            else:
                d_free = -np.exp(2.0 * free_sd) / b_channel**2 + 1.0 + d_scale * (1.0 - lam) * scale[a, b]
            grad[at_sd + a * k + b] += d_free + lam * d_log_sigma
            _zero_sum_back(d_z, grad, at_z + (a * k + b) * (c - 1), c)
    return lp


@compiled
def _binomial(successes, trials, eta):
    """One binomial cell's log likelihood on the logit scale, s·η − n·softplus(η), and its derivative
    by η, s − n·σ(η); softplus(η) = max(η, 0) + log1p(exp(−|η|)), σ(η) from the same exp."""
    e = np.exp(-abs(eta))
    if eta >= 0:
        return successes * eta - trials * (eta + np.log1p(e)), successes - trials / (1.0 + e)
    return successes * eta - trials * np.log1p(e), successes - trials * e / (1.0 + e)


@compiled
def _zero_sum_back(d_out, grad, at, n):
    """Adds to grad[at : at + n − 1] the gradient by the free coordinates of ``density._zero_sum``,
    given ``d_out``, the gradient by its n outputs: out_j = free_j − total/(√n + n), out_n = −total/√n."""
    d_total = -d_out[n - 1] / sqrt(n)
    inner = 0.0
    for j in range(n - 1):
        inner += d_out[j]
    d_total -= inner / (sqrt(n) + n)
    for j in range(n - 1):
        grad[at + j] += d_out[j] + d_total
