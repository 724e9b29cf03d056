"""The cheapest study that buys a given precision: families, answers per task, cf tasks a family.

From the variance components of a loaded study (``variance``), one family's contribution to a
typical model's score has variance ``V = B + W(S, m)``: ``B`` is what only more families
reduce (family, family × channel, and the task variation of conditions with one task a
family), ``W`` the within-family part, which shrinks with the cf tasks a family has (m) and the
answers per task (S):

    W(S, m) = Σ_k w_k² · (σ²_task,k + σ²_sample,k / S) / n_k,   n_cf = m, n_k = 1 otherwise.

At the study's own design the prediction is the observed ``V`` itself. Over F families a
score's standard error is ``√(V / F)``; the difference of two models has
``V_d = B_d + 2 W`` (``B_d``: the variance of the difference between families less both models'
within-family parts, averaged over the model pairs). That takes the within-family noise as
independent between models: answer noise is, but a cf task that is hard for every model is
shared, and cancels in the difference. Where it is shared, ``B_d`` comes out low (it can be
negative) and a design with fewer cf tasks than the study's is predicted to lose more precision
than it does: on the safe side. A target is met at

    half-width H:        F = ⌈(z_{1−α/2} · √V / H)²⌉
    difference D, power: F = ⌈((z_{1−α/2} + z_{power}) · √V_d / D)²⌉
    margin M, power:     F = ⌈((z_{1−α/2} + z_{power}) · √V / M)²⌉    (one model's score ≠ 0)

(normal approximation; the package's family bootstrap intervals have this width to within a
few % at 100+ families). Assumptions, said in the output: new families are drawn like the
loaded ones; with one answer per task the worth of repeated answers is unknown unless a share is
assumed; more cf tasks than the benchmark has need new candidates.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import stats

from .. import units
from ..errors import UsageError
from . import variance as vc

TARGETS = ("half_width", "difference", "margin")
MAX_SAMPLES = 5
# designs are planned on the predicted variance's one-sided 80% upper bound (z = 0.84): see ChannelInputs.noise
PLANNING_Z = float(stats.norm.ppf(0.8))


@dataclass(frozen=True)
class ChannelInputs:
    """What the prediction needs of one channel × metric, pooled over the models (proportions²)."""

    channel: str
    metric: str
    families: int
    models: int
    observed: float  # V at the study's own design
    between: float  # B
    between_difference: float  # B_d (NaN with one model)
    task: dict[str, float]  # σ²_task per condition (0 where one task a family: in B)
    sample: dict[str, float]  # σ²_sample per condition (NaN: not identified)
    inverse_tasks: dict[str, float]  # mean 1/n_k over families (observed)
    inverse_answers: dict[str, float]  # mean Σ_t(1/S_t)/n_k² (observed)
    cf_tasks: int  # the cf tasks a family has (rounded mean)
    samples: float  # mean answers per task
    notes: tuple[str, ...] = field(default_factory=tuple)
    stated: bool = False  # components given by the user, not estimated: no estimation error to plan for
    observed_se: float = 0.0  # standard error of ``observed`` (see ``noise``)
    difference_se: float = 0.0  # the same for the difference of two models
    own_samples: int | None = 1  # the answers every task had, None where they differ
    own_cf_tasks: int | None = None  # the cf tasks every family had, None where they differ

    def own_design(self, samples: int, cf_tasks: int) -> bool:
        """Whether (samples, cf_tasks) is the study's own design, whose variance is the one observed:
        only where every task had that many answers and every family that many cf tasks."""
        uses_cf = "cf" in vc.METRIC_WEIGHTS[self.metric]
        return samples == self.own_samples and (not uses_cf or cf_tasks == self.own_cf_tasks)

    @property
    def repeats_identified(self) -> bool:
        """Whether what repeated answers buy is known (answered repeatedly, or a share assumed)."""
        return any(not math.isnan(v) for v in self.sample.values())

    def within(self, samples: int | None, cf_tasks: int | None) -> float:
        """W at S answers per task and m cf tasks a family; None keeps the study's own."""
        total = 0.0
        for condition, w in vc.METRIC_WEIGHTS[self.metric].items():
            own = cf_tasks is None or condition != "cf"
            inv_n = self.inverse_tasks[condition] if own else 1.0 / cf_tasks
            sample = self.sample[condition]
            if samples is None:
                inv_answers = self.inverse_answers[condition] if own else inv_n / self.samples
            else:
                inv_answers = inv_n / samples
            total += w**2 * (self.task[condition] * inv_n + (0.0 if math.isnan(sample) else sample * inv_answers))
        return total

    def variance(self, samples: int | None = None, cf_tasks: int | None = None, *, difference: bool = False) -> float:
        base = self.between_difference if difference else self.between
        return base + (2 if difference else 1) * self.within(samples, cf_tasks)

    def noise(self, *, difference: bool = False) -> float:
        """Standard error of the observed per-family variance that every prediction is anchored to.

        A prediction for another design adds known within-family terms to the observed variance,
        so it carries that variance's sampling error whole. Where a design trades families for
        answers, the error is a larger share of what is left: planning on the point estimate alone
        picks such designs when the pilot happened to show a small variance, and they deliver less
        than predicted (bench_design.py measured up to 9 pp of power). Stated components have none.
        """
        return 0.0 if self.stated else (self.difference_se if difference else self.observed_se)

    def planning_variance(self, samples: int | None, cf_tasks: int | None, *, difference: bool = False) -> float:
        """The variance a design is planned on: the prediction at its one-sided 80% upper bound."""
        return self.variance(samples, cf_tasks, difference=difference) + PLANNING_Z * self.noise(difference=difference)


def channel_inputs(
    tasks: pl.DataFrame,
    metric: str,
    *,
    channels: list[str] | None = None,
    sample_share: float | None = None,
) -> list[ChannelInputs]:
    """The inputs of ``design`` for each channel, from the ``cohort_tasks`` of a loaded study."""
    cells, chosen = vc.checked_cells(tasks, (metric,), channels, sample_share)
    point = np.ones((1, len(cells.families)))
    within = vc._within(cells, point, sample_share)
    task_part, sample_part = vc.within_parts(cells, within, point, metric)
    g = vc.family_scores(cells, metric)
    notes = []
    if not cells.answered_repeatedly:
        notes.append(
            "one answer per task: what repeated answers buy is not identified"
            + (
                f"; assumed {sample_share:.0%} of the cf tasks' spread is sample noise"
                if sample_share is not None
                else ""
            )
        )
    result, left_out = [], []
    for c, channel in enumerate(cells.channels):
        if channel not in chosen:
            continue
        present = np.isfinite(g[:, c, :])
        usable = [m for m in range(len(cells.models)) if present[m].sum() >= vc.MIN_FAMILIES]
        if not usable:
            left_out.append(f"{channel}: fewer than {vc.MIN_FAMILIES} families with {metric}")
            continue
        spread = [_variance_and_error(g[m, c, present[m]]) for m in usable]
        per_model_total = np.array([v for v, _ in spread])
        within_obs = np.nan_to_num(task_part[:, c, 0]) + np.nan_to_num(sample_part[:, c, 0])
        between = float(np.mean(per_model_total - within_obs[usable]))
        pairs, pair_errors, pair_totals = [], [], []
        for a in usable:
            for b in usable:
                both = present[a] & present[b]
                if a < b and both.sum() >= vc.MIN_FAMILIES:
                    total, error = _variance_and_error(g[a, c, both] - g[b, c, both])
                    pairs.append(total - within_obs[a] - within_obs[b])
                    pair_totals.append(total)
                    pair_errors.append(error)
        if not per_model_total.mean() > 0:
            notes.append(
                f"{channel}: no variance between families on {metric} (every model at 0% or 100%?): any number of "
                "families predicts a zero-width interval, which a new study need not repeat"
            )
        task, sample, inv_n, inv_s = {}, {}, {}, {}
        for condition in vc.METRIC_WEIGHTS[metric]:
            k = vc.CONDITIONS.index(condition)
            n = cells.n[:, c, k, :]
            used = n > 0
            task[condition] = _mean_or(within["task"][:, c, k, 0], 0.0)  # one task a family: in B
            sample[condition] = _mean_or(within["sample"][:, c, k, 0], float("nan"))
            inv_n[condition] = float(np.mean(1.0 / n[used]))
            inv_s[condition] = float(np.mean(cells.sum_inv_s[:, c, k, :][used] / n[used] ** 2))
        cf = vc.CONDITIONS.index("cf")
        n_cf = cells.n[:, c, cf, :]
        answers = cells.sum_inv_s[:, c, :, :]
        own_samples = _uniform(cells, c, metric)
        counts = np.unique(n_cf[n_cf > 0])
        result.append(
            ChannelInputs(
                channel=channel,
                metric=metric,
                families=int(present.any(axis=0).sum()),
                models=len(cells.models),
                observed=float(per_model_total.mean()),
                between=between,
                between_difference=float(np.mean(pairs)) if pairs else float("nan"),
                task=task,
                sample=sample,
                inverse_tasks=inv_n,
                inverse_answers=inv_s,
                cf_tasks=int(round(float(n_cf[n_cf > 0].mean()))) if (n_cf > 0).any() else 0,
                samples=float(cells.n[:, c].sum() / answers[cells.n[:, c] > 0].sum()) if answers.sum() else 1.0,
                notes=tuple(notes),
                observed_se=float(np.mean([e for _, e in spread])),
                difference_se=float(np.mean(pair_errors)) if pair_errors else float("nan"),
                own_samples=own_samples,
                own_cf_tasks=int(counts[0]) if len(counts) == 1 else None,
            )
        )
    if not result:
        raise UsageError("no channel to plan for: " + "; ".join(left_out))
    return [dataclasses.replace(r, notes=r.notes + tuple(f"{o}: left out" for o in left_out)) for r in result]


def _variance_and_error(values: np.ndarray) -> tuple[float, float]:
    """The sample variance of ``values`` and its standard error from their own fourth moment,
    ``Var(s²) ≈ (m₄ − s⁴(n − 3)/(n − 1)) / n``: for outcomes of a few tasks (far from normal)
    the normal-theory ``s²·√(2/(n − 1))`` overstated it about twofold (a review's simulation:
    0.0144 against a realised 0.0060 at 100 families)."""
    n = len(values)
    s2 = float(np.var(values, ddof=1))
    m4 = float(np.mean((values - values.mean()) ** 4))
    return s2, math.sqrt(max(m4 - s2**2 * (n - 3) / (n - 1), 0.0) / n)


def _uniform(cells: vc.Cells, c: int, metric: str) -> int | None:
    """The answers every task of the metric's conditions had in channel ``c``, None where they differ."""
    fewest, most = set(), set()
    for condition in vc.METRIC_WEIGHTS[metric]:
        k = vc.CONDITIONS.index(condition)
        used = cells.n[:, c, k, :] > 0
        fewest |= set(cells.fewest_answers[:, c, k, :][used].tolist())
        most |= set(cells.most_answers[:, c, k, :][used].tolist())
    return int(fewest.pop()) if len(fewest) == 1 and fewest == most else None


def _mean_or(values: np.ndarray, empty: float) -> float:
    """Mean over the models where defined; ``empty`` where no model has a value."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else empty


@dataclass(frozen=True)
class Target:
    """What a design must buy: ``kind`` one of half_width, difference, margin; ``value`` in pp."""

    kind: str
    value: float
    alpha: float = 0.05
    power: float = 0.8

    def __post_init__(self):
        if self.kind not in TARGETS:
            raise UsageError(f"the target must be one of {', '.join(TARGETS)}, got {self.kind!r}")
        if not self.value > 0:
            raise UsageError(f"the target's {self.kind.replace('_', ' ')} must be above 0 pp, got {self.value}")
        if not (0 < self.alpha < 1 and 0 < self.power < 1):
            raise UsageError("the level and the power must lie between 0 and 1")

    @property
    def z(self) -> float:
        quantile = stats.norm.ppf(1 - self.alpha / 2)
        return float(quantile if self.kind == "half_width" else quantile + stats.norm.ppf(self.power))

    def families(self, variance: float) -> int:
        """The fewest families that meet the target at this per-family variance."""
        return max(
            vc.MIN_FAMILIES, math.ceil((self.z * math.sqrt(max(variance, 0.0)) / units.proportion(self.value)) ** 2)
        )

    def achieved(self, variance: float, families: int) -> float:
        """The half-width (pp) or the power (a probability) at this many families."""
        se = math.sqrt(max(variance, 0.0) / families)
        if self.kind == "half_width":
            return units.percent(stats.norm.ppf(1 - self.alpha / 2) * se)
        if se == 0:
            return 1.0
        return float(stats.norm.cdf(units.proportion(self.value) / se - stats.norm.ppf(1 - self.alpha / 2)))


@dataclass(frozen=True)
class Cost:
    """Cost of a design: each response (each model's, if given) and each family beyond those that exist."""

    per_response: float = 1.0
    per_model: dict[str, float] = field(default_factory=dict)
    per_new_family: float = 0.0
    models: int = 1

    def response_cost(self) -> float:
        """The cost of one response from every model of the study."""
        if len(self.per_model) > self.models:
            raise UsageError(
                f"costs are given for {len(self.per_model)} models and the study has {self.models}: "
                "{models} counts every model, those with a cost of their own too",
                arguments={"models": "models"},
            )
        named = sum(self.per_model.values())
        return named + self.per_response * max(self.models - len(self.per_model), 0)


DESIGN_SCHEMA = {
    "channel": pl.String,
    "metric": pl.String,
    "families": pl.Int64,
    "new_families": pl.Int64,
    "samples": pl.Int64,
    "cf_tasks": pl.Int64,
    "responses": pl.Int64,
    "cost": pl.Float64,
    "predicted": pl.Float64,
    "planned": pl.Float64,
    "meets_target": pl.Boolean,
    "cheapest": pl.Boolean,
}


def _designs(inputs: ChannelInputs, max_samples: int, samples_free: bool) -> list[tuple[int, int]]:
    sample_options = range(1, max_samples + 1) if samples_free else [max(1, int(round(inputs.samples)))]
    cf_options = (
        range(1, inputs.cf_tasks + 1)
        if "cf" in vc.METRIC_WEIGHTS[inputs.metric] and inputs.cf_tasks
        else [inputs.cf_tasks]
    )
    return [(s, m) for s in sample_options for m in cf_options]


def design(
    inputs: list[ChannelInputs],
    target: Target,
    cost: Cost,
    *,
    budget: float | None = None,
    max_families: int | None = None,
    max_samples: int = MAX_SAMPLES,
) -> pl.DataFrame:
    """Every design of families × answers per task × cf tasks that meets the target, cheapest first.

    For each channel and each (answers per task, cf tasks) the fewest families that meet the
    target, its responses (per model: families × answers × (P0 + source + shuffled + cf tasks),
    times the models), its cost and the precision it buys; ``cheapest`` marks the channel's
    cheapest. With a budget or a cap on families, designs beyond them are left out. A channel
    with none left gets one row, ``meets_target`` false: the design with the best precision
    within them (which channels a budget can rank models on at all); where no channel meets
    the target, the error says each one's best.
    """
    rows, shortfalls = [], []
    limit = " and ".join(
        part
        for part in (
            f"a budget of {budget:g}" if budget is not None else "",
            f"{max_families} families at most" if max_families is not None else "",
        )
        if part
    )
    for channel in inputs:
        if target.kind == "difference" and math.isnan(channel.between_difference):
            raise UsageError(f"{channel.channel}: a difference between models needs two models in the study")
        best_within: tuple[float, tuple] | None = None
        channel_rows = []
        for samples, cf_tasks in _designs(channel, max_samples, channel.repeats_identified):
            v, v_plan = _variances(channel, target, samples, cf_tasks)
            per_family = samples * (3 + cf_tasks) * cost.response_cost()
            families = target.families(v_plan)
            if not _affordable(families, channel.families, per_family, cost, budget, max_families):
                most = _most_families(channel.families, per_family, cost, budget, max_families)
                if most >= vc.MIN_FAMILIES:
                    reach = target.achieved(v_plan, most)
                    better = (lambda a, b: a < b) if target.kind == "half_width" else (lambda a, b: a > b)
                    if best_within is None or better(reach, best_within[0]):
                        best_within = (reach, (v, v_plan, most, samples, cf_tasks, per_family))
                continue
            channel_rows.append(_row(channel, target, cost, (v, v_plan), families, samples, cf_tasks, per_family, True))
        if channel_rows:
            rows.extend(sorted(channel_rows, key=lambda r: (r[7], r[2])))
            continue
        if best_within is None:
            shortfalls.append(f"{channel.channel}: not even {vc.MIN_FAMILIES} families fit within {limit}")
            continue
        reach, (v, v_plan, f, s, m, per_family) = best_within
        what = f"a half-width of {reach:.1f} pp" if target.kind == "half_width" else f"a power of {reach:.0%}"
        shortfalls.append(
            f"{channel.channel}: no design meets the target within {limit}; the best is {what}"
            f" ({f} families, {s} answer{'s' if s > 1 else ''} per task, {m} cf tasks a family)"
        )
        rows.append(_row(channel, target, cost, (v, v_plan), f, s, m, per_family, False))
    if not any(row[-1] for row in rows):
        raise UsageError("; ".join(shortfalls))
    table = pl.DataFrame(rows, schema={k: v for k, v in DESIGN_SCHEMA.items() if k != "cheapest"}, orient="row")
    named = "half_width" if target.kind == "half_width" else "power"
    first = pl.int_range(pl.len()).over("channel") == 0
    return table.with_columns((first & pl.col("meets_target")).alias("cheapest")).rename(
        {"predicted": named, "planned": f"{named}_planned"}
    )


def _variances(channel: ChannelInputs, target: Target, samples: int, cf_tasks: int) -> tuple[float, float]:
    """(predicted, planned-on) variance of one family's contribution at this design."""
    own = channel.own_design(samples, cf_tasks)
    args = (None if own else samples, None if own else cf_tasks)
    difference = target.kind == "difference"
    return channel.variance(*args, difference=difference), channel.planning_variance(*args, difference=difference)


def _spend(families: int, existing: int, per_family: float, cost: Cost) -> float:
    """Responses at their cost, and the families beyond the existing ones at theirs."""
    return families * per_family + max(0, families - existing) * cost.per_new_family


def _affordable(families, existing, per_family, cost, budget, max_families) -> bool:
    if max_families is not None and families > max_families:
        return False
    return budget is None or _spend(families, existing, per_family, cost) <= budget


def _most_families(existing, per_family, cost, budget, max_families) -> int:
    most = max_families if max_families is not None else 10**9
    if budget is not None:
        within_existing = int(budget // per_family) if per_family > 0 else 10**9
        if within_existing > existing:
            extra = (budget - existing * per_family) // (per_family + cost.per_new_family)
            within_existing = existing + int(extra)
        most = min(most, within_existing)
    return most


def _row(channel, target, cost, variances, families, samples, cf_tasks, per_family, meets):
    responses = families * samples * (3 + cf_tasks) * cost.models
    spend = _spend(families, channel.families, per_family, cost)
    point, bound = (target.achieved(v, families) for v in variances)
    return (
        channel.channel,
        channel.metric,
        families,
        max(0, families - channel.families),
        samples,
        cf_tasks,
        responses,
        spend,
        point,
        bound,
        meets,
    )


def precision_curve(
    inputs: list[ChannelInputs], target: Target, cost: Cost, *, max_samples: int = MAX_SAMPLES, points: int = 40
) -> pl.DataFrame:
    """Cost against precision for each (answers per task, cf tasks), over a range of families: the chart's
    data. The precision is the one the design table plans on (at the variance's upper bound), so a line
    crosses the target where the table's row for that design does."""
    rows = []
    for channel in inputs:
        difference = target.kind == "difference"
        top = max(
            4 * channel.families, 2 * target.families(channel.planning_variance(None, None, difference=difference))
        )
        grid = np.unique(np.geomspace(vc.MIN_FAMILIES, top, points).round().astype(int))
        for samples, cf_tasks in _designs(channel, max_samples, channel.repeats_identified):
            _, v_plan = _variances(channel, target, samples, cf_tasks)
            per_family = samples * (3 + cf_tasks) * cost.response_cost()
            for families in grid.tolist():
                spend = _spend(families, channel.families, per_family, cost)
                rows.append((channel.channel, families, samples, cf_tasks, spend, target.achieved(v_plan, families)))
    return pl.DataFrame(
        rows,
        schema={
            "channel": pl.String,
            "families": pl.Int64,
            "samples": pl.Int64,
            "cf_tasks": pl.Int64,
            "cost": pl.Float64,
            "precision": pl.Float64,
        },
        orient="row",
    )


def assumed_inputs(
    metric: str,
    *,
    between: float,
    task: float,
    sample: float | None,
    cf_tasks: int,
    families: int,
    between_difference: float | None = None,
    channel: str = "assumed",
) -> ChannelInputs:
    """Inputs for a study not yet run, from stated components (pp², one family's contribution for
    ``between``; one answer's for ``task``, the cf tasks' spread within a family, and ``sample``, the
    spread of repeated answers, the same for every condition). ``families``: how many exist already."""
    if metric not in vc.METRIC_WEIGHTS:
        raise UsageError(f"no design for {metric}: it exists for {', '.join(vc.VARIANCE_METRICS)}")
    for name, value in (
        ("between", between),
        ("task", task),
        ("sample", sample),
        ("between_difference", between_difference),
    ):
        if value is not None and value < 0:
            raise UsageError(f"{{{name}}} is a variance and cannot be negative, got {value}", arguments={name: name})
    if cf_tasks < 1 and "cf" in vc.METRIC_WEIGHTS[metric]:
        raise UsageError("{cf_tasks} must be at least 1 for a metric over cf tasks", arguments={"cf_tasks": "cf_tasks"})
    conditions = vc.METRIC_WEIGHTS[metric]
    p2 = units.proportion(units.proportion(1.0))  # pp² → proportion²
    return ChannelInputs(
        channel=channel,
        metric=metric,
        families=families,
        models=2,
        observed=float("nan"),
        between=between * p2,
        between_difference=(between_difference if between_difference is not None else 2 * between) * p2,
        task={k: (task * p2 if k == "cf" else 0.0) for k in conditions},
        sample={k: (sample * p2 if sample is not None else float("nan")) for k in conditions},
        inverse_tasks={k: (1.0 / cf_tasks if k == "cf" else 1.0) for k in conditions},
        inverse_answers={k: (1.0 / cf_tasks if k == "cf" else 1.0) for k in conditions},
        cf_tasks=cf_tasks,
        own_cf_tasks=cf_tasks,
        samples=1.0,
        notes=("components stated, not estimated: the prediction is as good as they are",),
        stated=True,
    )
