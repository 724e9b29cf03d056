"""Evaluate a new model on a fraction of the benchmark: plan which families it answers, then
estimate every metric it would have had on the whole cohort, with a family-level interval.

The design is a stratified random sample of families. The models already answered in full
(the complete models) say, family by family, how predictable a model's outcome is from
theirs: each is predicted in turn from the others, and the families whose outcomes the
others predict badly form the strata that get more of the budget (Neyman allocation, blended
with proportional allocation so that a new model unlike the others is not starved of
families that looked predictable). Within a stratum every family has the same chance.

The estimate is the augmented inverse-probability-weighted (AIPW) estimator of survey
sampling, in its regression form (generalised regression, Särndal, Swensson and Wretman
1992, ch. 6): a family's outcome is predicted from the complete models' outcomes on it (its
difficulty in this channel, and pooled over every channel and condition), the prediction is
summed over every cohort family, and the sampled families' prediction errors, weighted by
the inverse of their inclusion probability, correct it. The correction keeps the estimate
consistent when the prediction is poor (a new model stronger than every complete one, say);
a good prediction only narrows the interval. A metric is a ratio of sums (``metrics``), so
its variance around the cohort's own score is that of the linearised residual ``(a − â) − θ (b − b̂)``
under the stratified design, with each stratum's finite-population correction; the interval is about
the score over families like these, as a complete model's is, so the cohort's own spread around it is
added (``cohort_variance``).

No library in the stack (scipy, pingouin, arviz) has survey estimators for a stratified design,
so the modules here follow the textbook formulas (Cochran 1977, ch. 5–6; Särndal et al. 1992).

The package, one job a module, each importing only those above it:

- ``data``: the (families × models) matrices of a channel and the regression they share;
- ``design``: predictability, strata, allocation, the sample, the half-widths a plan predicts;
- ``estimate``: the AIPW estimate, its standard error and intervals, every metric of a partial
  model, the check that its families look like a random draw;
- ``database``: plans and estimates read from and written to the database.

Everything callers use is importable from here (``from molp2s_stats.stats import subsample``).
The design function itself is ``subsample.design.design``: the name ``design`` here is the module.
"""

from __future__ import annotations

from .data import (
    PREDICTORS,
    ChannelData,
    channel_data,
    design_matrix,
    others_mean,
    pooled_difficulty,
    weighted_least_squares,
)
from .database import (
    ESTIMATED_METHODS,
    OTHER_FRACTIONS,
    Plan,
    complete_models,
    estimate_from_db,
    find_plan,
    plan_from_db,
    read_family_list,
    save_plan,
    tasks_per_family,
    with_estimates,
)
from .design import (
    FAMILIES_PER_STRATUM,
    MAX_STRATA,
    MIN_PER_STRATUM,
    NEYMAN_SHARE,
    PLAN_METRICS,
    SAFETY,
    Design,
    Predictability,
    allocate,
    choose_strata,
    leave_one_model_out,
    make_plan,
    predictability,
    predicted_half_widths,
    select,
    strata_count,
    universe,
)
from .estimate import (
    DIFFERENCES,
    KNOWN_DENOMINATORS,
    METHOD,
    METHOD_WITHOUT_PREDICTION,
    NEGLIGIBLE,
    SELECTION_Z,
    Estimate,
    aipw_ratio,
    bootstrap_se,
    cohort_capacity,
    cohort_variance,
    difference_interval,
    estimate_model,
    regression_pays,
    score_interval,
    selection_check,
    strata_of,
)

__all__ = [
    # data
    "PREDICTORS",
    "ChannelData",
    "channel_data",
    "design_matrix",
    "others_mean",
    "pooled_difficulty",
    "weighted_least_squares",
    # design
    "FAMILIES_PER_STRATUM",
    "MAX_STRATA",
    "MIN_PER_STRATUM",
    "NEYMAN_SHARE",
    "PLAN_METRICS",
    "SAFETY",
    "Design",
    "Predictability",
    "allocate",
    "choose_strata",
    "leave_one_model_out",
    "make_plan",
    "predictability",
    "predicted_half_widths",
    "select",
    "strata_count",
    "universe",
    # estimate
    "DIFFERENCES",
    "KNOWN_DENOMINATORS",
    "METHOD",
    "METHOD_WITHOUT_PREDICTION",
    "NEGLIGIBLE",
    "SELECTION_Z",
    "Estimate",
    "aipw_ratio",
    "bootstrap_se",
    "cohort_capacity",
    "cohort_variance",
    "difference_interval",
    "estimate_model",
    "regression_pays",
    "score_interval",
    "selection_check",
    "strata_of",
    # database
    "ESTIMATED_METHODS",
    "OTHER_FRACTIONS",
    "Plan",
    "complete_models",
    "estimate_from_db",
    "find_plan",
    "plan_from_db",
    "read_family_list",
    "save_plan",
    "tasks_per_family",
    "with_estimates",
]
