"""Rank-normalised split R-hat and bulk/tail ESS (Vehtari et al. 2021), vectorised over parameters.

ArviZ's ``rhat`` and ``ess`` compute the same quantities one parameter at a time in a
Python loop: 13 s for the ~4,000 parameters of the default fit, run after every
attempt of a fit and on every report page. These kernels do all parameters of a
variable at once in numpy (same definitions, tested against ArviZ to 1e-8 in
tests/bayes/test_convergence.py), so the whole check takes seconds (``summary``).

Every array here is ``(parameters, chains, draws)``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import fft, special
from scipy.fft import next_fast_len

TAIL_PROBS = (0.05, 0.95)


def split_chains(x: np.ndarray) -> np.ndarray:
    """Each chain cut into its first and last half (the middle draw of an odd chain is dropped)."""
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half :]], axis=1)


def z_scale(x: np.ndarray) -> np.ndarray:
    """Normal scores of each parameter's pooled ranks (Blom's offset 3/8), ties given their average rank.

    One sort per row: in sorted order a run of equal values spans positions [first,
    last] and each gets rank (first + last) / 2 + 1, as scipy's ``rankdata(method=
    "average")`` gives (ties are common: the saved draws are float32).
    """
    flat = x.reshape(x.shape[0], -1)
    n = flat.shape[1]
    order = np.argsort(flat, axis=1)
    ordered = np.take_along_axis(flat, order, axis=1)
    position = np.broadcast_to(np.arange(n), flat.shape)
    starts = np.ones(flat.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(flat.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(flat.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return special.ndtri((ranks - 0.375) / (n + 0.25)).reshape(x.shape)


def _rhat_basic(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    if n < 2 or x.shape[1] < 2:  # one draw a split chain, or one chain: NaN, as ArviZ gives
        return np.full(x.shape[0], np.nan)
    # np.errstate, not warnings.catch_warnings: this runs on threads (``summary``), and the warnings
    # filters are one process-wide list that catch_warnings saves and restores
    with np.errstate(divide="ignore", invalid="ignore"):
        between = n * x.mean(axis=2).var(axis=1, ddof=1)
        within = x.var(axis=2, ddof=1).mean(axis=1)
        return np.sqrt((between / within + n - 1) / n)


def _invalid(x: np.ndarray, *, min_chains: int) -> np.ndarray:
    """Parameters ArviZ gives NaN for: any NaN draw, fewer than 4 draws or ``min_chains`` chains."""
    bad = np.isnan(x).any(axis=(1, 2))
    return bad | (x.shape[2] < 4) | (x.shape[1] < min_chains)


def rhat(x: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat: the larger of the bulk and the folded (tail) statistic (NaN for one chain)."""
    split = split_chains(x)
    folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
    with np.errstate(invalid="ignore"):
        out = np.fmax(_rhat_basic(z_scale(split)), _rhat_basic(z_scale(folded)))
    out[_invalid(x, min_chains=2)] = np.nan
    return out


def _autocovariance(x: np.ndarray) -> np.ndarray:
    n = x.shape[2]
    centred = x - x.mean(axis=2, keepdims=True)
    size = next_fast_len(2 * n)
    # one FFT worker: ``summary`` already runs a block per core
    spectrum = fft.rfft(centred, n=size, axis=2)
    return fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=2)[:, :, :n] / n


def ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of each parameter's chains: Geyer's initial monotone sequence.

    The autocorrelations are paired (lags 2j, 2j + 1); the sum is cut at the first pair
    whose sum is not positive, the pair sums are made non-increasing (running minimum),
    and the even lag of the cutting pair is added when positive, as ArviZ does.
    """
    parameters, chains, n = x.shape
    total = chains * n
    if n < 2:
        return np.full(parameters, np.nan)
    acov = _autocovariance(x)
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + x.mean(axis=2).var(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho[:, 0] = 1.0
    pairs = 1 + len(range(1, n - 3, 2))  # pair 0 and those ArviZ's loop reaches (t = 1, 3, … < n − 3)
    sums = rho[:, 0 : 2 * pairs : 2] + rho[:, 1 : 2 * pairs : 2]
    non_positive = sums[:, 1:] <= 0
    cut = non_positive.any(axis=1)
    # pairs 0 … k − 1 are summed (with one pair only, k = 0: ArviZ's loop does not run)
    k = np.where(cut, non_positive.argmax(axis=1) + 1, pairs - 1) if pairs > 1 else np.zeros(parameters, int)
    running = np.concatenate(
        [np.zeros((parameters, 1)), np.cumsum(np.minimum.accumulate(sums, axis=1), axis=1)], axis=1
    )
    even = rho[np.arange(parameters), 2 * k]
    tau = -1.0 + 2.0 * running[np.arange(parameters), k] + np.where(cut, np.maximum(even, 0.0), even)
    tau = np.where(sums[:, 0] <= 0, 0.0, tau)  # an antithetic first pair: ArviZ's floor below applies
    tau = np.maximum(tau, 1.0 / np.log10(total))
    out = total / tau
    out[np.isnan(rho).any(axis=1)] = np.nan
    constant = np.ptp(x.reshape(parameters, -1), axis=1) < np.finfo(float).resolution
    out[constant] = x[0].size
    return out


def ess_bulk(x: np.ndarray) -> np.ndarray:
    out = ess(z_scale(split_chains(x)))
    out[_invalid(x, min_chains=1)] = np.nan
    return out


def ess_tail(x: np.ndarray) -> np.ndarray:
    """The smaller ESS of the indicators of the 5% and 95% quantiles (quantiles of the unsplit draws)."""
    flat = x.reshape(x.shape[0], -1)
    split = split_chains(x)
    out = []
    for prob in TAIL_PROBS:
        quantile = np.quantile(flat, prob, axis=1)
        out.append(ess((split <= quantile[:, None, None]).astype(float)))
    out = np.fmin(*out)
    out[_invalid(x, min_chains=1)] = np.nan
    return out


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else all)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


BLOCK = 64  # parameters per pass: a block's temporaries stay in cache (a whole variable's ran to gigabytes)


def summary(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R-hat, bulk ESS and tail ESS of every parameter, sharing the normal scores of the split chains
    (the bulk R-hat and the bulk ESS read the same ones).

    Worked through in contiguous blocks of BLOCK parameters: a (parameters, chains, draws)
    view taken across a variable's last axis is strided, and on the default fit's 3,448
    family × channel deviations the sorts, running extrema and FFTs over it took 28 s;
    in blocks of 64 the whole gate of that fit (4,229 parameters × 4,800 draws) takes about 4 s.
    The blocks run on threads, one per core (numpy's sorts and scipy's FFTs let go of the GIL):
    2,048 parameters × 4 × 1,300 draws took 3.7–4.6 s against 6.3–7.0 s one block at a time,
    on 2 cores shared with a sampler.
    """

    def block(at: int):
        return _summary(np.ascontiguousarray(x[at : at + BLOCK], dtype=float))

    with ThreadPoolExecutor(max_workers=usable_cores()) as pool:
        parts = list(pool.map(block, range(0, x.shape[0], BLOCK)))
    if not parts:
        return tuple(np.empty(0) for _ in range(3))
    return tuple(np.concatenate(column) for column in zip(*parts))


def _summary(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    split = split_chains(x)
    scores = z_scale(split)
    folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
    with np.errstate(invalid="ignore"):
        r_hat = np.fmax(_rhat_basic(scores), _rhat_basic(z_scale(folded)))
    r_hat[_invalid(x, min_chains=2)] = np.nan
    bulk = ess(scores)
    bulk[_invalid(x, min_chains=1)] = np.nan
    return r_hat, bulk, ess_tail(x)
