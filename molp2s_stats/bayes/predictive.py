"""Does the model fit the data? Prior and posterior predictive checks, and the model as a simulator.

A fit saves the binomial cells it was fitted to (``observed_data`` and ``constant_data``
of the InferenceData), so a check needs only the fit file. Each check compares a
statistic of the observed answers with the same statistic of answers drawn from the
model (``Binomial(n, σ(η))`` for every cell, η from one posterior draw, or from the
priors before any data):

- ``accuracy``: the share of right answers per model × channel × condition (P0 as
  channel and condition ``none``);
- ``family_spread``: the standard deviation across cohort families of each family's
  share of right answers, per model over every answer (channel and condition ``all``:
  P0, source, shuffled and cf) and per model × channel over that channel's answers
  (condition ``all``). Too small a predicted spread means the family effects are too
  weak or the wrong shape (a model whose hard families are not the others').

``p_value`` is the posterior predictive p-value, the share of replicates whose
statistic is at least the observed one: near 0 or 1 is a misfit, except where the
replicates tie with the observed value (a model right on every task gives 1); ``outside``
flags an observed value outside the replicates' central interval, and is the flag the
summary counts. A statistic undefined in the data (the spread of one family) has an
empty row.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import polars as pl
from scipy import sparse
from scipy.special import expit

from .. import units
from .data import MODELLED_CONDITIONS, ModelData
from .model import PRIOR_MEAN_SD, SPREAD_SCALE, prior_centre
from .posterior import thinned_draws

CONF_LEVEL = 0.95
REPLICATES = 400  # draws used for the checks: p-values to ±0.025 and the interval's ends to a few tenths of a pp
CHUNK = 100  # replicates drawn at a time (memory: chunk × cells floats)
PREDICTIVE_SCHEMA = {
    "model": pl.String,
    "channel": pl.String,
    "condition": pl.String,
    "statistic": pl.String,
    "observed": pl.Float64,
    "predicted": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "p_value": pl.Float64,
    "conf_level": pl.Float64,
    "outside": pl.Boolean,
    "draws": pl.Int64,
    "seed": pl.Int64,
    "method": pl.String,
}


@dataclass(frozen=True)
class Cells:
    """The binomial cells as flat arrays: cohort cells (model, condition, channel, family) and P0 cells."""

    models: list[str]
    channels: list[str]
    families: list[str]
    n_pairs: int
    n_candidates: float
    successes: np.ndarray
    trials: np.ndarray
    model: np.ndarray
    condition: np.ndarray
    channel: np.ndarray
    family: np.ndarray
    pair: np.ndarray  # index of the (family, channel) pair of each cell
    p0_successes: np.ndarray
    p0_trials: np.ndarray
    p0_model: np.ndarray
    p0_family: np.ndarray

    @classmethod
    def from_data(cls, data: ModelData) -> Cells:
        c, p = data.cells, data.p0
        return cls(
            data.models,
            data.channels,
            data.families,
            len(data.family_channels),
            data.n_candidates,
            c["successes"].to_numpy(),
            c["trials"].to_numpy(),
            c["model_index"].to_numpy(),
            c["condition_index"].to_numpy(),
            c["channel_index"].to_numpy(),
            c["family_index"].to_numpy(),
            c["family_channel_index"].to_numpy(),
            p["successes"].to_numpy(),
            p["trials"].to_numpy(),
            p["model_index"].to_numpy(),
            p["family_index"].to_numpy(),
        )

    def to_groups(self) -> dict[str, dict[str, np.ndarray]]:
        """What a fit saves: successes as ``observed_data``, trials and indices as ``constant_data``."""
        observed = {"successes": self.successes, "p0_successes": self.p0_successes}
        constant = {
            "trials": self.trials,
            "cell_model": self.model,
            "cell_condition": self.condition,
            "cell_channel": self.channel,
            "cell_family": self.family,
            "cell_pair": self.pair,
            "p0_trials": self.p0_trials,
            "p0_model": self.p0_model,
            "p0_family": self.p0_family,
        }
        return {"observed_data": observed, "constant_data": constant}

    @classmethod
    def from_fit(cls, idata: az.InferenceData) -> Cells:
        if "observed_data" not in idata.groups():
            from ..errors import UsageError

            raise UsageError(
                "this fit was saved without its data (an older version of molp2s-stats): "
                "run `molp2s fit` again for model checks"
            )
        o, k, post = idata.observed_data, idata.constant_data, idata.posterior
        return cls(
            [str(v) for v in post.coords["model"].values],
            [str(v) for v in post.coords["channel"].values],
            [str(v) for v in post.coords["family"].values] if "family" in post.coords else [],
            int(post.sizes.get("family_channel", 0)),
            float(post.attrs["n_candidates"]),
            o["successes"].values,
            k["trials"].values,
            k["cell_model"].values,
            k["cell_condition"].values,
            k["cell_channel"].values,
            k["cell_family"].values,
            k["cell_pair"].values,
            o["p0_successes"].values,
            k["p0_trials"].values,
            k["p0_model"].values,
            k["p0_family"].values,
        )


def save_data(idata: az.InferenceData, data: ModelData) -> az.InferenceData:
    """``idata`` with the cells it was fitted to, so that model checks need only the fit file."""
    import xarray as xr

    groups = Cells.from_data(data).to_groups()
    idata.add_groups(
        {
            name: xr.Dataset({k: ("p0_cell" if k.startswith("p0_") else "cell", v) for k, v in values.items()})
            for name, values in groups.items()
        }
    )
    return idata


# ---------------------------------------------------------------- the statistics


@dataclass(frozen=True)
class _Statistics:
    """Sparse sums turning per-cell successes into every check's statistic at once."""

    keys: list[tuple[str, str, str, str]]  # (model, channel, condition, statistic) per statistic
    accuracy_sum: sparse.csr_matrix  # (cells + p0 cells) → accuracy groups
    accuracy_trials: np.ndarray
    spread_sums: list[tuple[sparse.csr_matrix, np.ndarray, np.ndarray]]  # per spread: sums, trials, group of each row

    def __call__(self, y: np.ndarray) -> np.ndarray:
        """Statistics of replicates ``y`` (replicates × all cells) → (replicates × statistics)."""
        out = [np.asarray(y @ self.accuracy_sum) / self.accuracy_trials]
        for summed, trials, group in self.spread_sums:
            share = np.asarray(y @ summed) / trials  # (replicates, model × family units)
            out.append(_grouped_sd(share, group))
        return np.concatenate(out, axis=1)


def _grouped_sd(share: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Standard deviation (ddof 1) of the columns of ``share`` within each group."""
    groups = group.max() + 1
    indicator = sparse.csr_matrix((np.ones(len(group)), (np.arange(len(group)), group)), shape=(len(group), groups))
    counts = np.asarray(indicator.sum(axis=0)).ravel()
    mean = np.asarray(share @ indicator) / counts
    square = np.asarray((share**2) @ indicator)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sqrt(np.maximum(square - counts * mean**2, 0.0) / (counts - 1))


def _statistics(cells: Cells) -> _Statistics:
    m_count, k_count, c_count = len(cells.models), len(MODELLED_CONDITIONS), len(cells.channels)
    n_cells, n_p0 = len(cells.successes), len(cells.p0_successes)
    rows = n_cells + n_p0
    all_trials = np.concatenate([cells.trials, cells.p0_trials]).astype(float)
    # accuracy: model × condition × channel, then P0 per model
    group = np.concatenate(
        [
            (cells.model * k_count + cells.condition) * c_count + cells.channel,
            m_count * k_count * c_count + cells.p0_model,
        ]
    )
    used = np.unique(group)
    remap = np.full(group.max() + 1, -1)
    remap[used] = np.arange(len(used))
    accuracy_sum = sparse.csr_matrix((np.ones(rows), (np.arange(rows), remap[group])), shape=(rows, len(used)))
    accuracy_trials = np.asarray(all_trials @ accuracy_sum).ravel()
    keys = []
    for g in used:
        if g >= m_count * k_count * c_count:
            keys.append((cells.models[g - m_count * k_count * c_count], "none", "none", "accuracy"))
        else:
            m, rest = divmod(g, k_count * c_count)
            k, c = divmod(rest, c_count)
            keys.append((cells.models[m], cells.channels[c], MODELLED_CONDITIONS[k], "accuracy"))
    spread_sums = []
    n_families = max(len(cells.families), int(max(cells.family.max(initial=0), cells.p0_family.max(initial=0))) + 1)
    # per model, every answer: units model × family
    unit = np.concatenate([cells.model * n_families + cells.family, cells.p0_model * n_families + cells.p0_family])
    spread_sums.append(_unit_sums(unit, all_trials, unit // n_families))
    keys += [(cells.models[m], "all", "all", "family_spread") for m in np.unique(unit // n_families)]
    # per model × channel, that channel's answers: units model × channel × family
    unit = (cells.model * c_count + cells.channel) * n_families + cells.family
    summed, trials, unit_group = _unit_sums(unit, cells.trials.astype(float), unit // n_families, offset_rows=n_p0)
    spread_sums.append((summed, trials, unit_group))
    keys += [
        (cells.models[g // c_count], cells.channels[g % c_count], "all", "family_spread")
        for g in np.unique(unit // n_families)
    ]
    return _Statistics(keys, accuracy_sum, accuracy_trials, spread_sums)


def _unit_sums(unit: np.ndarray, trials: np.ndarray, group: np.ndarray, *, offset_rows: int = 0):
    """A sparse sum of rows into units, each unit's trials, and each unit's group (renumbered 0…)."""
    used, inverse = np.unique(unit, return_inverse=True)
    rows = len(unit) + offset_rows  # P0 rows (after the cells) sum into nothing when they are not part of it
    summed = sparse.csr_matrix((np.ones(len(unit)), (np.arange(len(unit)), inverse)), shape=(rows, len(used)))
    unit_trials = np.bincount(inverse, weights=trials, minlength=len(used))
    unit_group = np.zeros(len(used), dtype=np.int64)
    unit_group[inverse] = group
    _, unit_group = np.unique(unit_group, return_inverse=True)
    return summed, unit_trials, unit_group


# ---------------------------------------------------------------- linear predictors


def prior_parameters(cells: Cells, rng: np.random.Generator, size: int) -> dict[str, np.ndarray]:
    """``size`` draws of the model's parameters from its priors (``model.build_model``'s), reported form."""
    m, k, c = len(cells.models), len(MODELLED_CONDITIONS), len(cells.channels)
    f = len(cells.families)
    centre = prior_centre(cells.n_candidates)

    def zero_sum(x):
        return x - x.mean(axis=-1, keepdims=True)

    def zero_sum_normal(shape):
        # ZeroSumNormal(1): a standard normal projected onto the zero-sum subspace
        return zero_sum(rng.normal(size=shape))

    condition_mean = rng.normal(centre, PRIOR_MEAN_SD, (size, m, k))
    channel_sd = np.abs(rng.normal(0.0, SPREAD_SCALE["channel_sd"], (size, m, k)))
    channel_z = zero_sum_normal((size, m, k, c))
    return {
        "condition_mean": condition_mean,
        "channel_sd": channel_sd,
        "channel_z": channel_z,
        "cell": condition_mean[..., None] + channel_sd[..., None] * channel_z,
        "p0_mean": rng.normal(centre, PRIOR_MEAN_SD, (size, m)),
        "family_sd": np.abs(rng.normal(0.0, SPREAD_SCALE["family_sd"], size)),
        "family_z": zero_sum_normal((size, f)),
        "family_channel_sd": np.abs(rng.normal(0.0, SPREAD_SCALE["family_channel_sd"], size)),
        "family_channel_z": rng.normal(size=(size, cells.n_pairs)),
    }


def parameters_eta(parameters: dict[str, np.ndarray], cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    """η of every cell and P0 cell for parameter draws in reported form (a leading draw axis)."""
    family = parameters["family_sd"][:, None] * parameters["family_z"]
    family_channel = parameters["family_channel_sd"][:, None] * parameters["family_channel_z"]
    eta = (
        parameters["cell"][:, cells.model, cells.condition, cells.channel]
        + family[:, cells.family]
        + family_channel[:, cells.pair]
    )
    eta_p0 = parameters["p0_mean"][:, cells.p0_model] + family[:, cells.p0_family]
    return eta, eta_p0


def draw_counts(
    eta: np.ndarray, eta_p0: np.ndarray, cells: Cells, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Successes drawn from the model for each row of η: Binomial(trials, σ(η))."""
    return _binomial(cells.trials, expit(eta), rng), _binomial(cells.p0_trials, expit(eta_p0), rng)


# A cell's trials are few (one answer a task; a family's two or three cf tasks pooled), and a
# Binomial(n, p) is the sum of n Bernoulli(p) draws: n uniforms compared with p cost about a tenth of
# numpy's binomial a draw (100 replicates of the default data's 83,000 cells: 0.06 against 0.58 s),
# and the Posterior page draws 800 replicates. Cells with more trials than this use numpy's binomial.
BERNOULLI_SUM_TRIALS = 8


def _binomial(trials: np.ndarray, probability: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Binomial(trials, probability) draws, ``probability`` (replicates × cells), ``trials`` per cell."""
    out = np.empty(probability.shape, dtype=np.int64)
    for count in np.unique(trials):
        columns = trials == count
        p = probability[:, columns]
        n = int(count)
        out[:, columns] = (
            (rng.random((n, *p.shape)) < p).sum(axis=0) if n <= BERNOULLI_SUM_TRIALS else rng.binomial(n, p)
        )
    return out


# ---------------------------------------------------------------- the checks


def _check_frame(cells: Cells, replicate_statistics: np.ndarray, *, seed: int, method: str) -> pl.DataFrame:
    statistics = _statistics(cells)
    observed = statistics(np.concatenate([cells.successes, cells.p0_successes]).astype(float)[None, :])[0]
    alpha = (1 - CONF_LEVEL) / 2
    # a statistic undefined in the data (the spread of a single family) is no check: its row is left empty
    defined = np.isfinite(observed) & np.isfinite(replicate_statistics).any(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns of undefined statistics
        low, high = np.nanquantile(replicate_statistics, [alpha, 1 - alpha], axis=0)
        predicted = np.nanmean(replicate_statistics, axis=0)
    p_value = (replicate_statistics >= observed[None, :] - 1e-12).mean(axis=0)
    low, high, predicted, p_value = (np.where(defined, v, np.nan) for v in (low, high, predicted, p_value))
    rows = [
        (
            *key,
            float(observed[i]),
            float(predicted[i]),
            float(low[i]),
            float(high[i]),
            float(p_value[i]),
            CONF_LEVEL,
            bool(observed[i] < low[i] - 1e-12 or observed[i] > high[i] + 1e-12),
            replicate_statistics.shape[0],
            seed,
            method,
        )
        for i, key in enumerate(statistics.keys)
    ]
    frame = (
        pl.DataFrame(rows, schema=PREDICTIVE_SCHEMA, orient="row")
        .fill_nan(None)
        .sort("statistic", "model", "channel", "condition", maintain_order=True)
    )
    return units.percent_columns(frame, ("observed", "predicted", "conf_low", "conf_high"))


def _replicate(cells: Cells, rng: np.random.Generator, total: int, eta_of) -> np.ndarray:
    statistics = _statistics(cells)
    out = []
    for start in range(0, total, CHUNK):
        eta, eta_p0 = eta_of(start, min(total, start + CHUNK))
        y, y_p0 = draw_counts(eta, eta_p0, cells, rng)
        out.append(statistics(np.concatenate([y, y_p0], axis=1).astype(float)))
    return np.concatenate(out, axis=0)


def posterior_predictive(idata: az.InferenceData, *, replicates: int = REPLICATES, seed: int = 0) -> pl.DataFrame:
    """The posterior predictive checks of a fit: one row per model × channel × condition × statistic.

    Columns ``model, channel, condition, statistic, observed, predicted, conf_low,
    conf_high, p_value, conf_level, outside, draws, seed, method``; ``draws`` replicates,
    each from one posterior draw (evenly spaced over the chains), drawn with ``seed``.
    Accuracy in %, family spread in pp (the standard deviation of shares in %).
    """
    cells = Cells.from_fit(idata)
    total = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    parameters = thinned_draws(
        idata,
        ("cell", "p0_mean", "family_sd", "family_z", "family_channel_sd", "family_channel_z"),
        min(replicates, total),
    )
    rng = np.random.default_rng(seed)
    statistics = _replicate(
        cells,
        rng,
        len(parameters["cell"]),
        lambda a, b: parameters_eta({k: v[a:b] for k, v in parameters.items()}, cells),
    )
    return _check_frame(cells, statistics, seed=seed, method="posterior predictive")


def prior_predictive(cells: Cells, *, replicates: int = REPLICATES, seed: int = 0) -> pl.DataFrame:
    """What the priors imply before any data: the same checks with parameters drawn from the priors."""
    rng = np.random.default_rng(seed)
    parameters = prior_parameters(cells, rng, replicates)
    statistics = _replicate(
        cells, rng, replicates, lambda a, b: parameters_eta({k: v[a:b] for k, v in parameters.items()}, cells)
    )
    return _check_frame(cells, statistics, seed=seed, method="prior predictive")


def summary_sentence(checks: pl.DataFrame) -> str:
    """How many checks fall outside their predictive interval, in words."""
    outside = checks.filter(pl.col("outside"))
    total = checks.height
    level = f"{checks['conf_level'][0]:.0%}" if total else "95%"
    if outside.height == 0:
        return f"All {total} checks fall inside their {level} predictive intervals."
    by = outside.group_by("statistic").len().sort("statistic")
    parts = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in by.iter_rows())
    expected = (1 - checks["conf_level"][0]) * total
    return (
        f"{outside.height} of {total} checks fall outside their {level} predictive intervals ({parts}); "
        f"about {expected:.0f} would by chance if the model fitted."
    )
