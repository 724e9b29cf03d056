"""Where a score's variance comes from: family, family × channel, task within family, sample within task.

A model's score on a channel is a mean over families of a per-family contribution
``g_f = Σ_k w_k ȳ_k,f``: the condition means of the family's tasks (``ȳ_k,f``, each task's
answers averaged) weighted by the metric (accuracy: one condition; RM: source − shuffled;
PGR: ½ source + ½ cf). Its variance over families splits into

- **family**: the part a family carries into every channel (a molecule that is hard whatever
  property is shown), the covariance of ``g`` between this channel and each single channel that
  is not one of its parts, over their common families, averaged over those channels;
- **task**: which tasks the family happens to have (which distractor a cf task uses), read off
  the spread of a family's cf tasks around their mean; source, shuffled and P0 have one task a
  family, so their task variation cannot be seen apart from the family's and stays in
  family × channel;
- **sample**: repeated answers to the same prompt disagreeing, ``S/(S − 1) · ȳ(1 − ȳ)``
  averaged over tasks answered ``S ≥ 2`` times (unbiased for ``p(1 − p)``). With one answer
  per task it cannot be told apart from the task part: the two are reported together as
  ``task`` and ``sample_identified`` is false;
- **family_channel**: the rest of the observed variance, the family's difficulty in this channel
  beyond the part it shares (with the task variation of the single-task conditions, and their
  answer noise unless repeated answers measure it).

Every level is on the scale of one family's contribution (pp²); the variance of a score
over F families is the sum divided by F. Each is estimated per model (method of moments) and
averaged over the models, with a family cluster bootstrap interval: families are drawn with
replacement, the same draw for every channel so the cross-channel covariance is kept. A
component estimated below zero (sampling noise around a small true value) is reported as
estimated; the stacked chart clips it at zero.

No library fits this: statsmodels' MixedLM fits the same components for Gaussian outcomes
(the tests compare it on a linear-probability version) but not the family-cluster bootstrap or
the weighted metric contrasts, and a fit per model × channel × replicate would take minutes.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl

from .. import units
from ..errors import UsageError
from . import intervals
from .resample import stream_weights

CONDITIONS = ("none", "source", "shuffled", "cf")
# metrics that are a family mean of condition means, with each condition's weight
METRIC_WEIGHTS: dict[str, dict[str, float]] = {
    "acc_p0": {"none": 1.0},
    "acc_source": {"source": 1.0},
    "acc_shuffled": {"shuffled": 1.0},
    "reliance_margin": {"source": 1.0, "shuffled": -1.0},
    "pgr": {"source": 0.5, "cf": 0.5},
}
VARIANCE_METRICS = tuple(METRIC_WEIGHTS)
LEVELS = ("family", "family_channel", "task", "sample")
MIN_FAMILIES = 3  # a variance over families with an interval needs a few families


class Cells:
    """Per model × channel × condition × family sums of the task outcomes, as dense arrays.

    Shape of every array: (models, channels, conditions, families). A family outside a
    channel's cohort (or not answered in full by the model) has ``n = 0`` there.
    """

    def __init__(self, tasks: pl.DataFrame):
        need = {"model", "channel", "family_id", "condition", "samples", "y"}
        missing = need - set(tasks.columns)
        if missing:
            raise UsageError(f"task outcomes lack the columns {', '.join(sorted(missing))}")
        tasks = tasks.filter(pl.col("condition").is_in(CONDITIONS))
        self.models = sorted(tasks["model"].unique().to_list())
        self.channels = sorted(tasks["channel"].unique().to_list())
        self.families = sorted(tasks["family_id"].unique().to_list())
        shape = (len(self.models), len(self.channels), len(CONDITIONS), len(self.families))
        s = tasks["samples"].cast(pl.Float64)
        y = tasks["y"].cast(pl.Float64)
        frame = tasks.select(
            pl.col("model").replace_strict({m: i for i, m in enumerate(self.models)}).alias("m"),
            pl.col("channel").replace_strict({c: i for i, c in enumerate(self.channels)}).alias("c"),
            pl.col("condition").replace_strict({k: i for i, k in enumerate(CONDITIONS)}).alias("k"),
            pl.col("family_id").replace_strict({f: i for i, f in enumerate(self.families)}).alias("f"),
            y.alias("y"),
            (1.0 / s).alias("inv_s"),
            # S/(S − 1)·ȳ(1 − ȳ): unbiased for p(1 − p) where a task has two answers or more
            pl.when(s >= 2).then(s / (s - 1) * y * (1 - y)).otherwise(0.0).alias("bernoulli"),
            (s >= 2).cast(pl.Float64).alias("repeated"),
            s.alias("answers"),
        )
        grouped = frame.group_by("m", "c", "k", "f").agg(
            pl.len().alias("n"),
            pl.col("y").sum().alias("sum_y"),
            (pl.col("y") ** 2).sum().alias("sum_y2"),
            pl.col("inv_s").sum().alias("sum_inv_s"),
            pl.col("bernoulli").sum().alias("sum_bernoulli"),
            pl.col("repeated").sum().alias("repeated"),
            pl.col("answers").min().alias("fewest_answers"),
            pl.col("answers").max().alias("most_answers"),
        )
        index = tuple(grouped[name].to_numpy() for name in ("m", "c", "k", "f"))
        names = ("n", "sum_y", "sum_y2", "sum_inv_s", "sum_bernoulli", "repeated", "fewest_answers", "most_answers")
        for name in names:
            array = np.zeros(shape)
            array[index] = grouped[name].to_numpy().astype(float)
            setattr(self, name, array)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean = np.where(self.n > 0, self.sum_y / np.where(self.n > 0, self.n, 1), np.nan)
        # within-family sum of squares of the task means around the family's condition mean
        self.ssw = np.where(self.n > 0, self.sum_y2 - self.n * np.nan_to_num(self.mean) ** 2, 0.0)
        self.answered_repeatedly = bool(self.repeated.sum() > 0)


def _weighted_sum(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ_f w_f x_f for every replicate (rows of ``weights``); ``values`` has families last."""
    return np.tensordot(values, weights, axes=([-1], [1]))  # (..., draws)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _within(cells: Cells, weights: np.ndarray, sample_share: float | None = None) -> dict[str, np.ndarray]:
    """Per model × channel × condition (× replicate): the task and sample variances of one answer.

    Returns ``task`` (σ²_task; NaN for a condition with one task a family) and ``sample``
    (σ²_sample; NaN where no task was answered twice), each shaped (models, channels, conditions,
    draws). With one answer per task, ``task`` holds task + sample together, unless
    ``sample_share`` splits it (the cf tasks' spread only: a single-task condition's answer noise
    is not credited, which keeps what repeated answers buy on the low side).
    """
    n = cells.n
    several = (n >= 2).astype(float)
    sample = _ratio(_weighted_sum(weights, cells.sum_bernoulli), _weighted_sum(weights, cells.repeated))
    s2w = _ratio(_weighted_sum(weights, cells.ssw * several), _weighted_sum(weights, (n - 1) * several))
    inv_s = _ratio(_weighted_sum(weights, cells.sum_inv_s * several), _weighted_sum(weights, n * several))
    task = np.where(np.isfinite(sample), s2w - np.nan_to_num(sample) * inv_s, s2w)
    # Conditions with one task a family (source, shuffled, P0) show no within-family spread: their task
    # is NaN ("not separable") and their task variation stays in family × channel. Carrying the cf
    # tasks' share of p̄(1 − p̄) over to them was tried and overshot on the default data (family ×
    # channel came out at −10% of the total): a cf task's difficulty varies with its distractor.
    if not cells.answered_repeatedly:
        sample = np.full_like(task, np.nan) if sample_share is None else sample_share * task
        task = task if sample_share is None else (1 - sample_share) * task
    return {"task": task, "sample": sample}


def family_scores(cells: Cells, metric: str) -> np.ndarray:
    """``g_f`` of every model × channel × family (NaN where a condition the metric needs is missing)."""
    weights = METRIC_WEIGHTS[metric]
    total = np.zeros(cells.n.shape[:2] + cells.n.shape[3:])
    for condition, weight in weights.items():
        total = total + weight * cells.mean[:, :, CONDITIONS.index(condition), :]
    return total


def _covariance(weights: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Count-weighted covariance over families of a and b (NaN entries left out pairwise), per replicate."""
    both = np.isfinite(a) & np.isfinite(b)
    a0, b0, m = np.where(both, a, 0.0), np.where(both, b, 0.0), both.astype(float)
    count = _weighted_sum(weights, m)
    mean_a = _ratio(_weighted_sum(weights, a0), count)
    mean_b = _ratio(_weighted_sum(weights, b0), count)
    cross = _weighted_sum(weights, a0 * b0)
    return _ratio(cross - count * mean_a * mean_b, count - 1)


def within_parts(
    cells: Cells, within: dict[str, np.ndarray], weights: np.ndarray, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """The task and sample parts of Var(g_f) at the study's own design, per model × channel × replicate.

    A condition's mean over its n tasks (S_t answers each) has task variance σ²_task/n and
    sample variance σ²_sample·Σ_t(1/S_t)/n²; both are averaged over the families that enter the metric.
    """
    present = np.isfinite(family_scores(cells, metric)).astype(float)
    count = _weighted_sum(weights, present)
    task = np.zeros(cells.n.shape[:2] + (weights.shape[0],))
    sample = np.zeros_like(task)
    separable = np.zeros(task.shape, dtype=bool)
    identified = np.zeros(task.shape, dtype=bool)
    for condition, w in METRIC_WEIGHTS[metric].items():
        k = CONDITIONS.index(condition)
        n = cells.n[:, :, k, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            inv_n = np.where(n > 0, 1.0 / np.where(n > 0, n, 1), 0.0) * present
            h = np.where(n > 0, cells.sum_inv_s[:, :, k, :] / np.where(n > 0, n, 1) ** 2, 0.0) * present
        mean_inv_n = _ratio(_weighted_sum(weights, inv_n), count)
        mean_h = _ratio(_weighted_sum(weights, h), count)
        part = w**2 * within["task"][:, :, k] * mean_inv_n
        separable |= np.isfinite(part)
        task = task + np.nan_to_num(part)
        part = w**2 * within["sample"][:, :, k] * mean_h
        identified |= np.isfinite(part)
        sample = sample + np.nan_to_num(part)
    return np.where(separable, task, np.nan), np.where(identified, sample, np.nan)


def references(channels: list[str], components: dict[str, set[str]] | None) -> list[list[int]]:
    """For each channel, the channels its family level is read against: the single channels that are
    not among its own components (a bundle shares its components' information, so its covariance with
    them is not a family's difficulty across properties; the bundle of every channel has none).

    >>> references(["ir", "raman", "vib"], {"ir": {"ir"}, "raman": {"raman"}, "vib": {"ir", "raman"}})
    [[1], [0], []]
    """
    parts = components or {c: {c} for c in channels}
    single = [parts.get(c, {c}) == {c} for c in channels]
    return [
        [o for o, other in enumerate(channels) if o != c and single[o] and other not in parts.get(channel, {channel})]
        for c, channel in enumerate(channels)
    ]


def _components(
    cells: Cells,
    metric: str,
    weights: np.ndarray,
    sample_share: float | None,
    components: dict[str, set[str]] | None = None,
) -> dict[str, np.ndarray]:
    """Each level per model × channel × replicate."""
    g = family_scores(cells, metric)
    within = _within(cells, weights, sample_share)
    task, sample = within_parts(cells, within, weights, metric)
    # _covariance sums over the last axis (families), so every model and channel goes in one call
    total = _covariance(weights, g, g)  # (models, channels, draws)
    family = np.full_like(total, np.nan)
    for c, others in enumerate(references(cells.channels, components)):
        if not others:
            continue
        covs = _covariance(weights, g[:, [c] * len(others)], g[:, others])  # (models, others, draws)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no common family with any other channel: NaN
            family[:, c] = np.nanmean(covs, axis=1)
    within_total = np.nan_to_num(task) + np.nan_to_num(sample)
    family_channel = total - np.nan_to_num(family) - within_total
    return {
        "total": total,
        "family": family,
        "family_channel": family_channel,
        "task": task,
        "sample": sample,
    }


def checked_cells(
    tasks: pl.DataFrame, metrics: tuple[str, ...], channels: list[str] | None, sample_share: float | None
) -> tuple[Cells, list[str]]:
    """The study's cells and the channels asked for, once what is asked has been checked: metrics that
    are a family mean of task outcomes, a share in [0, 1], enough families, channels that are there."""
    unknown = [m for m in metrics if m not in METRIC_WEIGHTS]
    if unknown:
        raise UsageError(
            f"no variance levels for {', '.join(unknown)}: they exist for {', '.join(VARIANCE_METRICS)}"
            " (the metrics that are a family mean of task outcomes)"
        )
    if sample_share is not None and not 0 <= sample_share <= 1:
        raise UsageError(f"the sample share must lie in [0, 1], got {sample_share}")
    cells = Cells(tasks)
    if len(cells.families) < MIN_FAMILIES:
        raise UsageError(
            f"{len(cells.families)} famil{'y' if len(cells.families) == 1 else 'ies'} in the cohorts: no variance "
            f"level can be estimated (a variance between families needs at least {MIN_FAMILIES})"
        )
    chosen = channels or cells.channels
    missing = [c for c in chosen if c not in cells.channels]
    if missing:
        raise UsageError(f"no cohort tasks for the channel(s) {', '.join(missing)}")
    return cells, chosen


def variance_components(
    tasks: pl.DataFrame,
    *,
    metrics: tuple[str, ...] = ("acc_source", "reliance_margin", "pgr"),
    channels: list[str] | None = None,
    draws: int = 200,
    seed: int = 0,
    conf_level: float = 0.95,
    sample_share: float | None = None,
    components: dict[str, set[str]] | None = None,
) -> pl.DataFrame:
    """Variance components of each channel × metric, averaged over the models.

    Parameters
    ----------
    tasks
        One row per model × channel × task of the cohorts (the ``cohort_tasks`` view):
        ``model, channel, family_id, condition, samples, y``.
    draws, seed
        Family cluster bootstrap replicates for the intervals (0: estimates only) and their seed.
    components
        Each channel's single channels (a bundle's parts; ``channel_components``); default: every
        channel is single. The family level is read against single channels only.
    sample_share
        With one answer per task, the share of the within-family variance taken to be sample
        noise (an assumption, recorded in ``sample_source``); default: not split.

    Returns
    -------
    polars.DataFrame
        One row per channel × metric × level: ``channel, metric, level, variance,
        conf_low, conf_high`` (pp² on one family's contribution), ``share`` (% of the total),
        ``families``, ``models``, ``sample_identified``, ``sample_source``, ``seed``, ``draws``.
    """
    cells, chosen = checked_cells(tasks, metrics, channels, sample_share)
    point = np.ones((1, len(cells.families)))
    replicates = stream_weights(len(cells.families), draws, seed, "variance") if draws else None
    if cells.answered_repeatedly:
        sample_source = "repeated answers"
    elif sample_share is not None:
        sample_source = f"assumed {sample_share:.0%} of the cf spread"
    else:
        sample_source = "one answer per task: in task"
    rows = []
    for metric in metrics:
        estimate = _components(cells, metric, point, sample_share, components)
        boot = _components(cells, metric, replicates, sample_share, components) if replicates is not None else None
        present = np.isfinite(family_scores(cells, metric))
        for c_index, channel in enumerate(cells.channels):
            if channel not in chosen:
                continue
            families = int(present[:, c_index].any(axis=0).sum())
            total = float(np.nanmean(estimate["total"][:, c_index, 0])) if families >= MIN_FAMILIES else float("nan")
            for level in LEVELS:
                # a channel with fewer than MIN_FAMILIES families (after the model's coverage) has no level
                defined = families >= MIN_FAMILIES and np.isfinite(estimate[level][:, c_index, 0]).any()
                value = float(np.nanmean(estimate[level][:, c_index, 0])) if defined else float("nan")
                low = high = float("nan")
                if boot is not None and np.isfinite(value):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate no model could estimate
                        series = np.nanmean(boot[level][:, c_index, :], axis=0)
                    lows, highs, _ = intervals.percentile_interval(series[:, None], conf_level)
                    low, high = float(lows[0]), float(highs[0])
                rows.append(
                    (
                        channel,
                        metric,
                        level,
                        units.percent(units.percent(value)),
                        units.percent(units.percent(low)),
                        units.percent(units.percent(high)),
                        units.percent(value / total) if total > 0 else float("nan"),
                        families,
                        len(cells.models),
                        cells.answered_repeatedly or sample_share is not None,
                        sample_source,
                        seed,
                        draws,
                    )
                )
    return pl.DataFrame(rows, schema=VARIANCE_SCHEMA, orient="row")


VARIANCE_SCHEMA = {
    "channel": pl.String,
    "metric": pl.String,
    "level": pl.String,
    "variance": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "share": pl.Float64,
    "families": pl.Int64,
    "models": pl.Int64,
    "sample_identified": pl.Boolean,
    "sample_source": pl.String,
    "seed": pl.Int64,
    "draws": pl.Int64,
}


def tasks_from_db(con, models: list[str] | None = None) -> pl.DataFrame:
    """The cohorts' task outcomes (``cohort_tasks``) of the given models (default: every model)."""
    tasks = con.sql("SELECT model, channel, family_id, condition, samples, y FROM cohort_tasks").pl()
    return tasks if models is None else tasks.filter(pl.col("model").is_in(models))


def channel_components(con) -> dict[str, set[str]]:
    """Each channel's single channels (a single channel is its own), from ``stg_channel_components``."""
    parts: dict[str, set[str]] = {}
    for channel, component in con.sql("SELECT channel, component FROM stg_channel_components").fetchall():
        parts.setdefault(channel, set()).add(component)
    return parts
