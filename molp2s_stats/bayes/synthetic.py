"""Binomial cells simulated straight from a logistic model with family effects, for any study shape.

``simulate.py`` answers a benchmark's tasks as text; this draws the model's cells
directly (no database, no parsing), so a benchmark can fit hundreds of study shapes:
one to dozens of models, two to fifteen channels, 30 to 400 families per channel,
repeated samples, models at chance or near the ceiling, family × channel spread from
0 to large. Its assumptions are deliberately not the fitted model's priors: effects are
drawn from fixed distributions (or set per model), spreads are chosen per shape.

For model m, condition k, channel c and family f, on the logit scale:

    logit P(right) = ability[m] + shift[k] + boost[m, k, c] + d_f + e_{f,c}
    logit P(right | P0) = ability[m] + d_f

with ``shift = (+0.8, 0, −0.4)`` for (source, shuffled, cf), ``boost`` 0 for shuffled
and Normal(0, channel_sd) otherwise (``|·|`` for source, so reliance is never
negative), ``d_f ~ Normal(0, family_sd)``, ``e_{f,c} ~ Normal(0, family_channel_sd)``.
With ``family_sd_by_model`` each model has its own family effects instead of shared
ones (a misfit for the fitted model, whose family effects are shared). A model "at chance" answers every task with P = 1/K (ability logit(1/K), no boost);
one "at the ceiling" has ability 4 (98 %). With ``task_sd`` each task has its own
difficulty beyond its family's (shared by the models), and with ``model_task_sd`` each
model its own take on each task, shared by its repeated samples: both are variation the
fitted model, whose finest effect is the family × channel, does not have.

The truth is the quantity the posterior estimates: reliance and cf accuracy of each
model × channel averaged over that channel's cohort families with their realised
family effects (``mean_f σ(source) − σ(shuffled)``, ``mean_f σ(cf)``), as proportions;
with task effects, σ(·) of each family is the mean over its tasks, realised effects included.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy.special import expit, logit

from .data import MODELLED_CONDITIONS, ModelData, index

CONDITION_SHIFT = {"source": 0.8, "shuffled": 0.0, "cf": -0.4}
CEILING_ABILITY = 4.0


@dataclass(frozen=True)
class Shape:
    """A study's shape: how many of everything, and how large each source of variation is."""

    name: str
    models: int
    channels: int
    families: int  # families in the benchmark; each channel's cohort is ``families_per_channel`` of them
    family_sd: float = 0.8
    family_channel_sd: float = 0.3
    channel_sd: float = 0.7  # spread of a model's channel effects (boost) on the logit scale
    samples: int = 1  # answers per task
    candidates: int = 4  # K of every family
    cf_per_family: int = 2  # counterfactual tasks per family and channel
    families_per_channel: tuple[int, ...] = ()  # default: every family in every channel
    at_chance: int = 0  # the last ``at_chance`` models guess uniformly
    at_ceiling: int = 0  # the first ``at_ceiling`` models are near-perfect
    ability: tuple[float, ...] = field(default=())  # per model; default drawn Normal(0, 0.8)
    # a family × model interaction the fitted model lacks: each model its own family effects, with its own sd
    family_sd_by_model: tuple[float, ...] = field(default=())
    # variation within a family the fitted model lacks: each task its own difficulty, shared by the models
    task_sd: float = 0.0
    # and each model's own take on each task, shared by its repeated samples (a model at temperature 0
    # answers a task the same way every time: its samples of a task are not independent draws)
    model_task_sd: float = 0.0

    def cohort_sizes(self) -> tuple[int, ...]:
        sizes = self.families_per_channel or (self.families,) * self.channels
        if len(sizes) != self.channels or max(sizes) > self.families:
            raise ValueError(f"shape {self.name}: families_per_channel must give ≤ {self.families} per channel")
        return sizes


def simulate_cells(shape: Shape, seed: int) -> tuple[ModelData, pl.DataFrame]:
    """Cells of ``shape`` drawn with ``seed``; returns the model's data and the truth.

    The truth has one row per model × channel × metric (``reliance``, ``responsiveness``)
    with ``truth`` as a proportion, and ``seed`` and ``shape`` columns.
    """
    rng = np.random.default_rng(seed)
    m, c, f = shape.models, shape.channels, shape.families
    models = [f"m{i:02d}" for i in range(m)]
    channels = [f"ch{i:02d}" for i in range(c)]
    families = [f"F{i:04d}" for i in range(f)]
    chance = float(logit(1.0 / shape.candidates))
    ability = np.array(shape.ability, dtype=float) if shape.ability else rng.normal(0.0, 0.8, m)
    ability[: shape.at_ceiling] = CEILING_ABILITY
    boost = rng.normal(0.0, shape.channel_sd, (m, len(MODELLED_CONDITIONS), c))
    boost[:, 0] = np.abs(boost[:, 0])
    boost[:, 1] = 0.0
    shift = np.array([CONDITION_SHIFT[k] for k in MODELLED_CONDITIONS])
    cell = ability[:, None, None] + shift[None, :, None] + boost
    p0_logit = ability.copy()
    if shape.at_chance:
        cell[m - shape.at_chance :] = chance
        p0_logit[m - shape.at_chance :] = chance
    family = rng.normal(0.0, shape.family_sd, f)
    family_channel = rng.normal(0.0, shape.family_channel_sd, (c, f))
    # which families each channel's cohort holds: a random subset of the requested size
    members = [np.sort(rng.choice(f, size, replace=False)) for size in shape.cohort_sizes()]
    in_cohort = np.zeros((c, f), dtype=bool)
    for ch, chosen in enumerate(members):
        in_cohort[ch, chosen] = True
    in_any = in_cohort.any(axis=0)
    at_chance = np.zeros(m, dtype=bool)
    at_chance[m - shape.at_chance :] = shape.at_chance > 0
    tasks = {"source": 1, "shuffled": 1, "cf": shape.cf_per_family}
    rows, truth = [], []
    within_family = shape.task_sd > 0 or shape.model_task_sd > 0
    # drawn only when asked for, so that the other shapes' draws stay as they were
    task_effect = (
        {k: rng.normal(0.0, shape.task_sd, (tasks[k], c, f)) for k in MODELLED_CONDITIONS} if within_family else {}
    )
    p0_task_effect = rng.normal(0.0, shape.task_sd, f) if within_family else np.zeros(f)
    own_family = (
        np.array(shape.family_sd_by_model)[:, None] * rng.normal(size=(m, f))
        if shape.family_sd_by_model
        else np.broadcast_to(family, (m, f))
    )
    for mi in range(m):
        for ch in range(c):
            fam = members[ch]
            effects = np.zeros(len(fam)) if at_chance[mi] else own_family[mi, fam] + family_channel[ch, fam]
            eta = cell[mi, :, ch][:, None] + effects[None, :]
            p = expit(eta)
            shares = []  # with task effects: each family's mean over its tasks, realised effects included
            for ki, condition in enumerate(MODELLED_CONDITIONS):
                trials = tasks[condition] * shape.samples
                if within_family:
                    task_eta = (
                        np.full((tasks[condition], len(fam)), chance)
                        if at_chance[mi]
                        else eta[ki][None, :]
                        + task_effect[condition][:, ch, fam]
                        + rng.normal(0.0, shape.model_task_sd, (tasks[condition], len(fam)))
                    )
                    task_p = expit(task_eta)  # (tasks, families)
                    successes = rng.binomial(shape.samples, task_p).sum(axis=0)
                    shares.append(task_p.mean(axis=0))
                else:
                    successes = rng.binomial(trials, p[ki])
                rows += [
                    (models[mi], channels[ch], condition, families[j], int(s), trials) for j, s in zip(fam, successes)
                ]
            if within_family:
                p = np.array(shares)
            truth += [
                (models[mi], channels[ch], "reliance", float((p[0] - p[1]).mean())),
                (models[mi], channels[ch], "responsiveness", float(p[2].mean())),
            ]
    cells = pl.DataFrame(
        rows,
        schema={
            "model": pl.String,
            "channel": pl.String,
            "condition": pl.String,
            "family_id": pl.String,
            "successes": pl.Int64,
            "trials": pl.Int64,
        },
        orient="row",
    )
    p0_rows = []
    for mi in range(m):
        eta = p0_logit[mi] + (np.zeros(in_any.sum()) if at_chance[mi] else own_family[mi, in_any])
        if within_family and not at_chance[mi]:
            eta = eta + p0_task_effect[in_any] + rng.normal(0.0, shape.model_task_sd, eta.shape)
        successes = rng.binomial(shape.samples, expit(eta))
        p0_rows += [(models[mi], families[j], int(s), shape.samples) for j, s in zip(np.flatnonzero(in_any), successes)]
    p0 = pl.DataFrame(
        p0_rows,
        schema={"model": pl.String, "family_id": pl.String, "successes": pl.Int64, "trials": pl.Int64},
        orient="row",
    )
    frame = pl.DataFrame(
        truth, schema={"model": pl.String, "channel": pl.String, "metric": pl.String, "truth": pl.Float64}, orient="row"
    )
    frame = frame.with_columns(pl.lit(seed).alias("seed"), pl.lit(shape.name).alias("shape"))
    return index(cells, p0, n_candidates=float(shape.candidates)), frame
