"""Family cluster bootstrap kernels: pure numpy, no frames.

Families, not tasks, are the resampling unit. A bootstrap replicate is a
vector of multiplicities, one per family (how often the family was drawn), so every
statistic that is a ratio of family sums, ``Σ w_f a_f / Σ w_f b_f``, is computed for
all replicates and all models at once as two matrix products.

scipy.stats.bootstrap resamples observations for one statistic at a time and cannot
drop the replicates where a statistic is undefined (CFR with no correct source in the
draw) while counting them, which the output reports (draws_undefined); hence these few lines.
"""

from __future__ import annotations

import threading
import zlib

import numpy as np
from cachetools import LRUCache

from ..errors import UsageError
from . import intervals


def stream_seed(seed: int, key: str) -> np.random.SeedSequence:
    """The seed of one named stream: the run's seed and the stream's name, so adding a stream
    does not change another's draws."""
    return np.random.SeedSequence([seed, zlib.crc32(key.encode())])


def rng_for(seed: int, key: str) -> np.random.Generator:
    """A generator for one stream (one channel, one comparison), stable across runs.

    Keyed by the stream's name, so adding a channel does not change another's draws.

    >>> float(rng_for(7, "ir").uniform()) == float(rng_for(7, "ir").uniform())
    True
    """
    return np.random.default_rng(stream_seed(seed, key))


def family_weights(n_families: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities of each family in ``draws`` resamples with replacement, shape (draws, n)."""
    if n_families == 0:
        return np.zeros((draws, 0))
    return rng.multinomial(n_families, np.full(n_families, 1.0 / n_families), size=draws).astype(float)


def ratio_of_sums(weights: np.ndarray, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """``Σ w a / Σ w b`` for every row of ``weights`` and column of a, b; NaN where Σ w b = 0.

    Parameters
    ----------
    weights
        Shape (draws, families).
    numerators, denominators
        Shape (families, statistics).
    """
    num = weights @ numerators
    den = weights @ denominators
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def check_options(*, draws: int, conf_level: float) -> None:
    """Refuse a negative number of draws or a coverage outside (0, 1)."""
    if not 0 < conf_level < 1:
        raise UsageError(f"conf_level must be between 0 and 1, got {conf_level}")
    if draws < 0:
        raise UsageError(f"draws must be >= 0, got {draws}")


# A stream's replicates are a function of (families, draws, seed, stream), and a page asks for the
# same ones again: each metric of a channel, its rank ranges and its pair verdicts share them (the
# Reliance page drew 46 sets of 2,000 × 389 for 3 metric tables, about 1 s). Kept read-only, at most
# this many bytes in all, least recently used out first.
WEIGHTS_CACHE_BYTES = 256 * 2**20
_weights_cache: LRUCache = LRUCache(maxsize=WEIGHTS_CACHE_BYTES, getsizeof=lambda weights: weights.nbytes)
_weights_lock = threading.Lock()


def stream_weights(n_families: int, draws: int, seed: int, key: str) -> np.ndarray:
    """``family_weights`` of the stream ``rng_for(seed, key)``: the same read-only array for the same
    arguments (computed once while it fits in the cache)."""
    cache_key = (n_families, draws, seed, key)
    with _weights_lock:
        weights = _weights_cache.get(cache_key)
    if weights is None:
        weights = family_weights(n_families, draws, rng_for(seed, key))
        weights.flags.writeable = False  # shared by every caller
        if weights.nbytes <= WEIGHTS_CACHE_BYTES // 4:
            with _weights_lock:
                _weights_cache[cache_key] = weights
    return weights


def bootstrap_weights(n_families: int, *, draws: int, seed: int, key: str, conf_level: float) -> np.ndarray | None:
    """The family multiplicities of ``draws`` replicates from the named stream, (draws, n), read-only; None
    where there is no interval to make (``draws = 0`` or no family)."""
    check_options(draws=draws, conf_level=conf_level)
    if draws == 0 or n_families == 0:
        return None
    return stream_weights(n_families, draws, seed, key)


def no_interval(columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(low, high, undefined, method, draws) of columns without an interval: NaN, method ``'point'``."""
    nan = np.full(columns, np.nan)
    return nan, nan.copy(), np.zeros(columns, dtype=np.int64), np.full(columns, "point", dtype=object), 0


def bootstrap_ratio(
    numerators: np.ndarray, denominators: np.ndarray, **options
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Family-bootstrap interval of the rate ``Σ a / Σ b`` for every column: the percentile interval in
    the middle of the range, a score interval near 0% and 100% (`intervals.rate_intervals`).

    ``options``: ``draws, seed, key, conf_level`` (keyword-only, as for :func:`bootstrap_weights`), and
    ``rule`` (`intervals.RULES`, default ``auto``).
    Returns (low, high, undefined_count, method per column, draws_used); with ``draws = 0`` or no
    family the interval is NaN and the method is ``'point'``.
    """
    rule = options.pop("rule", "auto")
    weights = bootstrap_weights(numerators.shape[0], **options)
    if weights is None:
        return no_interval(numerators.shape[1])
    replicates = ratio_of_sums(weights, numerators, denominators)
    low, high, method = intervals.rate_intervals(numerators, denominators, replicates, options["conf_level"], rule=rule)
    return low, high, np.isnan(replicates).sum(axis=0).astype(np.int64), method, len(weights)


def bootstrap_difference(
    gain: np.ndarray, loss: np.ndarray, denominators: np.ndarray, **options
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Family-bootstrap interval of the difference ``Σ (gain − loss) / Σ b`` for every column, gain and
    loss being its two discordant parts (right under one side only): the percentile interval in the
    middle of the range, the MOVER interval from the parts' score intervals near a bound
    (`intervals.difference_intervals`). Options and returns as :func:`bootstrap_ratio`.
    """
    conf_level = options.pop("conf_level")
    (found,), undefined, used = bootstrap_difference_levels(gain, loss, denominators, levels=(conf_level,), **options)
    low, high, method = found
    return low, high, undefined, method, used


def bootstrap_difference_levels(
    gain: np.ndarray, loss: np.ndarray, denominators: np.ndarray, *, levels: tuple[float, ...], **options
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray, int]:
    """:func:`bootstrap_difference` at several confidence levels from one set of replicates (a verdict
    reads the interval at 1 − α and, for equivalence, at 1 − 2α): ``[(low, high, method) per level]``,
    the undefined count per column and the draws used.
    """
    rule = intervals.check_rule(options.pop("rule", "auto"))
    for level in levels:
        check_options(draws=options["draws"], conf_level=level)
    weights = bootstrap_weights(gain.shape[0], conf_level=levels[0], **options)
    if weights is None:
        low, high, undefined, method, used = no_interval(gain.shape[1])
        return [(low.copy(), high.copy(), method.copy()) for _ in levels], undefined, used
    replicates = ratio_of_sums(weights, gain - loss, denominators)
    found = [intervals.difference_intervals(gain, loss, denominators, replicates, level, rule=rule) for level in levels]
    return found, np.isnan(replicates).sum(axis=0).astype(np.int64), len(weights)
