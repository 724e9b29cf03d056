"""Paired comparisons: one model across two inputs, and two models on the same tasks.

Both pair outcomes within a family and resample families (the unit of uncertainty), sharing one
replicate matrix across all models so that rows are comparable.
"""

from __future__ import annotations

import functools
import itertools

import duckdb
import numpy as np
import pingouin as pg
import polars as pl

from .. import units
from ..defaults import DEFAULT_DRAWS, DEFAULT_MARGIN, DEFAULT_PAIRED_DRAWS
from ..errors import UsageError
from . import intervals, resample
from .metrics import family_matrices

PAIRED_INPUT_SCHEMA = {
    "model": pl.String,
    "from": pl.String,
    "to": pl.String,
    "condition": pl.String,
    "n": pl.Int64,
    "tasks": pl.Int64,
    "both_correct": pl.Float64,
    "gain": pl.Float64,
    "loss": pl.Float64,
    "both_wrong": pl.Float64,
    "delta": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "conf_level": pl.Float64,
    "method": pl.String,
    "draws": pl.Int64,
    "draws_undefined": pl.Int64,
    "seed": pl.Int64,
    "verdict": pl.String,
    "margin": pl.Float64,
}
TRANSITION_SCHEMA = {
    "channel": pl.String,
    "condition": pl.String,
    "model_a": pl.String,
    "model_b": pl.String,
    "tasks": pl.Int64,
    "families": pl.Int64,
    "both_correct": pl.Float64,
    "a_only": pl.Float64,
    "b_only": pl.Float64,
    "both_wrong": pl.Float64,
    "net": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "conf_level": pl.Float64,
    "method": pl.String,
    "draws": pl.Int64,
    "draws_undefined": pl.Int64,
    "seed": pl.Int64,
    "p_value": pl.Float64,
    "p_adjusted": pl.Float64,
    "adjustment": pl.String,
    "verdict": pl.String,
    "margin": pl.Float64,
}
VERDICTS = ("ahead", "behind", "equivalent", "non-inferior", "undecided")
# what a verdict tests where no difference is shown: equivalence (within ±margin, the default) or
# non-inferiority (the second side not worse than the first by more than the margin)
TESTS = ("equivalence", "non_inferiority")


def check_test(test: str) -> str:
    """``test`` if it is one of `TESTS`, else a UsageError naming them."""
    if test not in TESTS:
        raise UsageError(f"the verdict's test must be one of {', '.join(TESTS)}, got {test!r}")
    return test


def verdicts(
    low: np.ndarray,
    high: np.ndarray,
    tost_low: np.ndarray,
    tost_high: np.ndarray,
    margin: float,
    *,
    test: str = "equivalence",
) -> list[str | None]:
    """The word for each paired difference (second minus first), from its intervals.

    ``ahead`` / ``behind``: the interval at the confidence level lies above / below 0. Else, with
    ``test="equivalence"``, ``equivalent``: the interval at 1 − 2α lies inside ±``margin`` (two
    one-sided tests at level α, Schuirmann 1987); with ``test="non_inferiority"``,
    ``non-inferior``: its lower end lies above −``margin`` (the one-sided test at level α). Else
    ``undecided``: the data show neither a difference nor what the test asks. None where the
    difference is undefined. Swapping the two sides swaps ahead and behind and leaves equivalence.

    >>> verdicts(*[np.array(v) for v in ([0.01, -0.03, -0.01, -0.05], [0.05, -0.01, 0.01, 0.04],
    ...          [0.015, -0.028, -0.008, -0.04], [0.045, -0.012, 0.009, 0.03])], margin=0.02)
    ['ahead', 'behind', 'equivalent', 'undecided']

    A second side at most 1.5 pp worse and perhaps 3 pp better: not equivalent within 2 pp, but
    non-inferior:

    >>> verdicts(*[np.array([v]) for v in (-0.02, 0.035, -0.015, 0.03)], margin=0.02, test="non_inferiority")
    ['non-inferior']
    """
    check_test(test)
    out: list[str | None] = []
    for lo, hi, tlo, thi in zip(low, high, tost_low, tost_high):
        if not (np.isfinite(lo) and np.isfinite(hi)):
            out.append(None)
        elif lo > 0:
            out.append("ahead")
        elif hi < 0:
            out.append("behind")
        elif test == "equivalence" and np.isfinite(tlo) and np.isfinite(thi) and -margin < tlo and thi < margin:
            out.append("equivalent")
        elif test == "non_inferiority" and np.isfinite(tlo) and -margin < tlo:
            out.append("non-inferior")
        else:
            out.append("undecided")
    return out


def _difference_and_equivalence(gain, loss, denominators, *, draws, seed, key, conf_level, rule="auto"):
    """The bootstrap difference at the confidence level and, from the same replicates, the 1 − 2α
    interval of the two one-sided tests of equivalence: (low, high, undefined, method, used, tost_low,
    tost_high). The TOST interval is NaN (no equivalence verdict) at a level of 50% or less, where
    there is none."""
    levels = (conf_level, 2 * conf_level - 1) if conf_level > 0.5 else (conf_level,)
    found, undefined, used = resample.bootstrap_difference_levels(
        gain, loss, denominators, levels=levels, draws=draws, seed=seed, key=key, rule=rule
    )
    (low, high, method), *tost = found
    if tost:
        tost_low, tost_high, _ = tost[0]
    else:
        tost_low = tost_high = np.full(gain.shape[1], np.nan)
    return low, high, undefined, method, used, tost_low, tost_high


def _check_margin(margin: float | None) -> float:
    """The margin to use: ``DEFAULT_MARGIN`` for None; a share strictly between 0 and 1."""
    if margin is None:
        return DEFAULT_MARGIN
    if not (np.isfinite(margin) and 0 < margin < 1):
        raise UsageError(
            f"the equivalence margin must be above 0 and below 100 pp (a share: 2 pp is 0.02), got {margin!r}"
        )
    return margin


# up to this many families that differ, the sign-flip test enumerates every pattern (2^k)
EXACT_FLIPS = 16


# beyond EXACT_FLIPS families, the sums of the sign patterns are counted on a lattice: at most this many
# cells (families × the lattice's length) of work for one p-value
LATTICE_CELLS = 4_000_000
SMALL_SHARE = 0.01


@functools.cache
def _patterns(k: int) -> np.ndarray:
    """Every sign pattern of k terms, (2^k, k) of ±1."""
    return (1 - 2 * ((np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1)).astype(float)


def sign_flip_p_value(contributions: np.ndarray) -> float:
    """Two-sided sign-flip (randomisation) p-value of ``Σ contributions`` against 0.

    Under "no difference" each family's contribution to a paired difference is as likely to
    have either sign; the p-value is the share of the 2^k sign patterns of the k non-zero
    contributions whose |sum| reaches the observed one. With one task a family and a 0/1
    outcome this is the exact McNemar test: k discordant families all one way give 2 · 2^−k.

    Contributions under `SMALL_SHARE` of the largest are left out, the observed |sum| lowered by
    their total (conservative: they could only break ties). Up to `EXACT_FLIPS` families every
    pattern is summed. Beyond, the patterns' sums are counted
    exactly on a lattice (a convolution, family by family): exact where the contributions are
    whole multiples of the smallest (counts of discordant tasks); otherwise each is rounded to
    the lattice, and the observed |sum| is lowered by the rounding errors' total, so the p-value
    is never below the exact one. Not Monte Carlo: under Holm a p-value must reach 0.05 / pairs,
    below the resolution of any count of random patterns; and not the normal approximation,
    whose tail is thinner than the exact one where a few families weigh more than the rest.

    >>> sign_flip_p_value(np.array([1.0] * 7 + [0.0] * 129))
    0.015625
    """
    x = contributions[np.abs(contributions) > intervals.NEGLIGIBLE]
    if len(x) == 0:
        return 1.0
    observed = abs(x.sum())
    # contributions under 1% of the largest (a concordant family's, where the two models' denominators
    # differ) are left out and their total taken off the observed sum: they could only split ties
    trivial = np.abs(x) < SMALL_SHARE * np.abs(x).max()
    observed, x = observed - np.abs(x[trivial]).sum(), x[~trivial]
    if len(x) <= EXACT_FLIPS:
        return float((np.abs(_patterns(len(x)) @ x) >= observed - 1e-9 * max(observed, 1e-12)).mean())
    size = np.abs(x)
    longest = LATTICE_CELLS // (2 * len(x))  # lattice points on each side of 0
    step = size.min()
    if not np.allclose(size / step, np.rint(size / step), rtol=0, atol=1e-6) or size.sum() / step > longest:
        step = size.sum() / longest
    units = np.rint(size / step).astype(np.int64)
    error = np.abs(size - units * step).sum()  # no pattern's lattice sum is further than this from its own
    reach = units.sum()
    counts = _lattice_counts(units, reach)
    sums = np.abs(np.arange(-reach, reach + 1) * step)
    return float(min(1.0, counts[sums >= observed - error - 1e-9 * max(observed, step)].sum()))


def _lattice_counts(units: np.ndarray, reach: int) -> np.ndarray:
    """The share of sign patterns whose sum is each point of [−reach, reach], reach = Σ units: each
    term ±u with probability ½ added in turn (a convolution). Two buffers in turn, and only the span
    the sums can have reached so far is touched: a fraction of the lattice's length per term.

    >>> _lattice_counts(np.array([1, 2]), 3).tolist()  # ±1 ± 2: −3, −1, 1, 3, a quarter each
    [0.25, 0.0, 0.25, 0.0, 0.25, 0.0, 0.25]
    """
    current, following = np.zeros(2 * reach + 1), np.zeros(2 * reach + 1)
    current[reach] = 1.0
    span = 0  # the sums so far lie in [−span, span]
    for u in units.tolist():
        low, high = reach - span, reach + span + 1
        half = 0.5 * current[low:high]  # ½ x + ½ y equals ½ (x + y) exactly: halving is exact
        following[low - u : high + u] = 0.0
        following[low - u : high - u] += half
        following[low + u : high + u] += half
        current, following, span = following, current, span + u
    return current


def paired_inputs(
    task_outcomes: pl.DataFrame,
    *,
    from_channel: str,
    to_channel: str,
    condition: str = "source",
    models: list[str] | None = None,
    draws: int = DEFAULT_PAIRED_DRAWS,
    seed: int = 0,
    conf_level: float = 0.95,
    margin: float | None = None,
    test: str = "equivalence",
    interval: str = "auto",
) -> pl.DataFrame:
    """One model, inputs X → Y, over the families in both cohorts (the paper's Table 12).

    ``verdict`` (`verdicts`): Y against X, ahead, behind, equivalent within ±``margin``
    (a share; default ``DEFAULT_MARGIN``, 2 pp) or, with ``test="non_inferiority"``, non-inferior
    (not worse by more than the margin), or undecided.

    Tasks are paired across the two inputs by family and target, so a cf task for
    candidate k under X meets the cf task for k under Y. With several samples per task
    the counts are expected counts (products of the two inputs' shares).

    Parameters
    ----------
    task_outcomes
        One row per model × channel × task of one condition over that channel's cohort:
        ``model, channel, family_id, target, y`` (``read_condition_outcomes``).

    Returns
    -------
    polars.DataFrame
        One row per model: ``model, from, to, condition, n, tasks, both_correct, gain,
        loss, both_wrong, delta, conf_low, conf_high, conf_level, method, draws,
        draws_undefined, seed``; both_correct + gain + loss + both_wrong = tasks (= n for
        source tasks, one per family).

    Examples
    --------
    Three families: right → right, wrong → right (a gain), wrong → wrong.

    >>> outcomes = pl.DataFrame({"model": ["m"] * 6, "channel": ["ir"] * 3 + ["all"] * 3,
    ...     "family_id": ["F1", "F2", "F3"] * 2, "target": ["A"] * 6, "y": [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]})
    >>> paired_inputs(outcomes, from_channel="ir", to_channel="all", draws=0).select(
    ...     "n", "both_correct", "gain", "loss", "both_wrong", "delta")
    shape: (1, 6)
    ┌─────┬──────────────┬──────┬──────┬────────────┬───────────┐
    │ n   ┆ both_correct ┆ gain ┆ loss ┆ both_wrong ┆ delta     │
    │ --- ┆ ---          ┆ ---  ┆ ---  ┆ ---        ┆ ---       │
    │ i64 ┆ f64          ┆ f64  ┆ f64  ┆ f64        ┆ f64       │
    ╞═════╪══════════════╪══════╪══════╪════════════╪═══════════╡
    │ 3   ┆ 1.0          ┆ 1.0  ┆ 0.0  ┆ 1.0        ┆ 33.333333 │
    └─────┴──────────────┴──────┴──────┴────────────┴───────────┘
    """
    models = models if models is not None else sorted(task_outcomes["model"].unique().to_list())
    if from_channel == to_channel:
        paired = (
            task_outcomes.filter(pl.col("channel") == from_channel)
            .with_columns(pl.col("y").alias("x"))
            .select("model", "family_id", "target", "x", "y")
        )
    else:
        paired = (
            task_outcomes.filter(pl.col("channel").is_in([from_channel, to_channel]))
            .pivot(on="channel", index=["model", "family_id", "target"], values="y")
            .rename({from_channel: "x", to_channel: "y"}, strict=False)
        )
        for name in ("x", "y"):
            if name not in paired.columns:
                paired = paired.with_columns(pl.lit(None, pl.Float64).alias(name))
        paired = paired.drop_nulls(["x", "y"])
    per_family = paired.group_by("model", "family_id").agg(
        pl.len().alias("tasks"),
        (pl.col("x") * pl.col("y")).sum().alias("both_correct"),
        ((1 - pl.col("x")) * pl.col("y")).sum().alias("gain"),
        (pl.col("x") * (1 - pl.col("y"))).sum().alias("loss"),
        ((1 - pl.col("x")) * (1 - pl.col("y"))).sum().alias("both_wrong"),
        (pl.col("y") - pl.col("x")).sum().alias("diff"),
    )
    _, arrays = family_matrices(
        per_family, models=models, columns=["tasks", "both_correct", "gain", "loss", "both_wrong", "diff"]
    )
    margin, test, interval = _check_margin(margin), check_test(test), intervals.check_rule(interval)
    key = f"{from_channel}->{to_channel}:{condition}"
    low, high, undefined, method, used, tost_low, tost_high = _difference_and_equivalence(
        arrays["gain"],
        arrays["loss"],
        arrays["tasks"],
        draws=draws,
        seed=seed,
        key=key,
        conf_level=conf_level,
        rule=interval,
    )
    tasks = arrays["tasks"].sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = np.where(tasks > 0, arrays["diff"].sum(axis=0) / np.where(tasks > 0, tasks, 1), np.nan)
    if from_channel == to_channel and used:  # the same answers on both sides: Δ is 0 by construction
        low, high = np.where(tasks > 0, 0.0, np.nan), np.where(tasks > 0, 0.0, np.nan)
        tost_low, tost_high = low, high
        method = np.full(len(models), intervals.FIXED, dtype=object)
    frame = pl.DataFrame(
        {
            "model": models,
            "from": from_channel,
            "to": to_channel,
            "condition": condition,
            "n": (arrays["tasks"] > 0).sum(axis=0).astype(np.int64),
            "tasks": tasks.astype(np.int64),
            **{c: arrays[c].sum(axis=0) for c in ("both_correct", "gain", "loss", "both_wrong")},
            "delta": delta,
            "conf_low": low,
            "conf_high": high,
            "conf_level": conf_level,
            "method": method.tolist(),
            "draws": used,
            "draws_undefined": undefined,
            "seed": seed,
            "verdict": verdicts(low, high, tost_low, tost_high, margin, test=test) if used else [None] * len(models),
            "margin": margin,
        },
        schema=PAIRED_INPUT_SCHEMA,
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    return units.percent_columns(frame, ("delta", "conf_low", "conf_high", "margin"))


def read_condition_outcomes(con: duckdb.DuckDBPyConnection, *, channels: list[str], condition: str) -> pl.DataFrame:
    """Per-model outcomes of the cohort tasks of one condition in each channel.

    One row per model × channel × task: ``model, channel, task_id, family_id, target, y``.
    P0 tasks belong to no channel; for ``condition = 'none'`` each channel gets its
    cohort's P0 tasks.
    """
    return con.sql(
        """SELECT model, channel, task_id, family_id, target, y FROM cohort_tasks
           WHERE condition = $condition AND list_contains($channels, channel)""",
        params={"channels": channels, "condition": condition},
    ).pl()


def model_transitions(
    task_outcomes: pl.DataFrame,
    *,
    channel: str,
    condition: str,
    pairs: list[tuple[str, str]] | None = None,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    conf_level: float = 0.95,
    margin: float | None = None,
    test: str = "equivalence",
    interval: str = "auto",
) -> pl.DataFrame:
    """Model-pair transitions on the same tasks (the paper's Figure 2).

    Parameters
    ----------
    task_outcomes
        One row per model × task: ``model, task_id, family_id, y``.
    pairs
        (model_a, model_b) pairs; default every pair of models in name order.

    Returns
    -------
    polars.DataFrame
        One row per pair: shares of tasks (%) both correct, A only, B only, both
        wrong; ``net`` = Acc_B − Acc_A (pp) with a family-bootstrap interval; the clustered
        McNemar ``p_value`` (`sign_flip_p_value` of each family's net: exact McNemar when every
        family has one task) and its Holm adjustment over the pairs (``p_adjusted``); ``verdict``
        (`verdicts`): model B against A, ahead, behind, equivalent within ±``margin`` (a share;
        non-inferior with ``test="non_inferiority"``), or undecided, from ``net``'s interval.
    """
    margin, test, interval = _check_margin(margin), check_test(test), intervals.check_rule(interval)
    models = sorted(task_outcomes["model"].unique().to_list())
    pairs = pairs if pairs is not None else list(itertools.combinations(models, 2))
    wide = task_outcomes.pivot(on="model", index=["task_id", "family_id"], values="y").sort("task_id")
    families = sorted(wide["family_id"].unique().to_list())
    family_index = (
        wide["family_id"].replace_strict({f: i for i, f in enumerate(families)}, return_dtype=pl.Int64).to_numpy()
    )
    rows, gains, losses, counts = [], [], [], []
    for a_name, b_name in pairs:
        for name in (a_name, b_name):
            if name not in wide.columns:
                raise UsageError(f"model {name!r} has no outcomes in channel {channel!r}, condition {condition!r}")
        a = wide[a_name].cast(pl.Float64).to_numpy()
        b = wide[b_name].cast(pl.Float64).to_numpy()
        # the tasks both answered: a model run on part of the benchmark is compared where it ran
        both = ~np.isnan(a) & ~np.isnan(b)
        a, b, index = a[both], b[both], family_index[both]
        tasks = len(a)
        share = lambda v: float(v.sum() / tasks) if tasks else float("nan")  # noqa: E731, B023 (called in this iteration)
        rows.append(
            {
                "channel": channel,
                "condition": condition,
                "model_a": a_name,
                "model_b": b_name,
                "tasks": tasks,
                "families": len(np.unique(index)),
                "both_correct": share(a * b),
                "a_only": share(a * (1 - b)),
                "b_only": share((1 - a) * b),
                "both_wrong": share((1 - a) * (1 - b)),
                "net": share(b - a),
                # clustered McNemar: each family's net of gains and losses, its sign flipped under H0
                "p_value": sign_flip_p_value(
                    np.bincount(index, weights=b - a, minlength=len(families)) / max(tasks, 1)
                ),
            }
        )
        gains.append(np.bincount(index, weights=(1 - a) * b, minlength=len(families)))
        losses.append(np.bincount(index, weights=a * (1 - b), minlength=len(families)))
        counts.append(np.bincount(index, minlength=len(families)).astype(float))
    if not rows:
        return pl.DataFrame(schema=TRANSITION_SCHEMA)
    counts = np.column_stack(counts)
    gains, losses, key = np.column_stack(gains), np.column_stack(losses), f"{channel}:{condition}"
    low, high, undefined, method, used, tost_low, tost_high = _difference_and_equivalence(
        gains, losses, counts, draws=draws, seed=seed, key=key, conf_level=conf_level, rule=interval
    )
    words = verdicts(low, high, tost_low, tost_high, margin, test=test) if used else [None] * len(rows)
    adjusted = pg.multicomp([row["p_value"] for row in rows], method="holm")[1]
    for row, lo, hi, und, how, p_holm, word in zip(rows, low, high, undefined, method, adjusted, words):
        row.update(
            conf_low=lo,
            conf_high=hi,
            conf_level=conf_level,
            method=how,
            draws=used,
            draws_undefined=int(und),
            seed=seed,
            p_adjusted=float(p_holm),
            adjustment="holm",
            verdict=word,
            margin=margin,
        )
    frame = pl.DataFrame(rows, schema=TRANSITION_SCHEMA).with_columns(pl.col(pl.Float64).fill_nan(None))
    return units.percent_columns(
        frame, ("both_correct", "a_only", "b_only", "both_wrong", "net", "conf_low", "conf_high", "margin")
    )
