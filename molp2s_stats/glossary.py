"""Every column any output frame may have, and what it means.

One word for one thing: the SQL views, the Python frames, the CLI and the reports
use these names. ``check_columns`` lets tests reject a column that is not here.
"""

from __future__ import annotations

from collections.abc import Iterable

#: What each metric of ``molp2s metrics`` is, in the order they are reported. The pages,
#: ``--help`` and the README take their definitions from here (a test holds the README to it).
#: Each is computed over the channel's cohort; y(t) is 1 when the answer to task t is its
#: target (the mean over samples when there are several).
METRIC_DEFINITIONS: dict[str, str] = {
    "acc_p0": "the share of cohort families whose P0 task (no properties shown) is answered right; "
    "every channel has its own P0 figure, over its own cohort",
    "acc_source": "the share of cohort families whose source task (the molecule's own properties) is answered right",
    "acc_shuffled": "the share of cohort families whose shuffled task (another family's properties) is answered right",
    "reliance_margin": "reliance margin (RM): acc_source − acc_shuffled, in percentage points: how much the right "
    "pairing of properties and molecule helps",
    "cf_accuracy": "the share of all counterfactual tasks answered with the counterfactual candidate; every "
    "(family, counterfactual) pair weighs the same",
    "pgr": "property-grounded recovery (PGR): per family with a cf task, half its source score plus half its "
    "mean cf score, averaged over families",
    "cfr": "counterfactual flip rate (CFR): among families whose source task was answered right (weighted by "
    "y(source) when there are samples), the mean share of their cf tasks answered with the counterfactual "
    "candidate",
    "persist": "the same share for cf tasks answered with the original source candidate",
    "other": "the same share for cf tasks answered with anything else, invalid answers included; "
    "CFR + Persist + Other = 100",
    "random_baseline": "the mean over cohort families of 1/K_f (K_f candidates): what a uniform guess scores on "
    "accuracy and PGR; every other metric has its own baseline (the baseline column)",
}
#: The metric ids of ``molp2s metrics``, in the order they are reported.
METRICS = tuple(METRIC_DEFINITIONS)


def definition(metric: str) -> str:
    """The one-sentence definition of a metric id, capitalised, as pages and help print it.

    >>> definition("reliance_margin")
    'Reliance margin (RM): acc_source − acc_shuffled, in percentage points: how much the right pairing of properties and molecule helps.'
    """
    text = METRIC_DEFINITIONS[metric]
    return text[0].upper() + text[1:] + "."


COLUMNS: dict[str, str] = {
    # keys
    "model": "model identifier, as in the response files",
    "channel": "property channel (or bundle) whose cohort the row is computed on (model checks: none for P0, "
    "all for every channel)",
    "condition": "task condition: none (P0), source, shuffled or cf (model checks: all for every condition)",
    "model_a": "first model of a pair",
    "model_b": "second model of a pair",
    "from": "input channel compared from (X in X → Y)",
    "to": "input channel compared to (Y in X → Y)",
    "metric": "name of the statistic (see METRICS in molp2s_stats.glossary)",
    # estimates
    "estimate": "point estimate on the full cohort: rates in %, differences in pp",
    "conf_low": "lower end of the interval (same unit as estimate)",
    "conf_high": "upper end of the interval (same unit as estimate)",
    "conf_level": "coverage the interval aims at, e.g. 0.95",
    "baseline": "random baseline: the metric's value for a guesser that picks uniformly among each family's K_f "
    "candidates, on the same cohort (1/K for accuracy and PGR, 0 pp for RM, 1/K for CFR and Persist, "
    "(K−2)/K for Other); a leaderboard's closing random-baseline row",
    "n": "families that enter the estimate (its resampling units)",
    "method": "how the interval was made, e.g. family_bootstrap_percentile; 'point' when no interval",
    "draws": "random draws behind the figure, in all: bootstrap replicates (0 when no interval), family "
    "subsets (stability), posterior draws over every chain (the hierarchical model), or predictive replicates "
    "(model checks)",
    "draws_per_chain": "posterior draws per chain, after tuning",
    "draws_undefined": "replicates left out of the interval because the statistic was undefined in them",
    "seed": "seed of the random stream; rerunning with it gives the same interval",
    "invalid": "estimates: how invalid answers entered, wrong (scored 0, the paper's rule) or exclude (left out); "
    "task_outcomes and cohort_tasks: the share of the task's answers that name no candidate",
    # comparisons
    "tasks": "tasks in the comparison",
    "families": "families in the comparison",
    "both_correct": "both models (or both inputs) right: % of tasks for model pairs, a count for paired inputs",
    "a_only": "only model A right, % of tasks",
    "b_only": "only model B right, % of tasks",
    "both_wrong": "both wrong: % of tasks for model pairs, a count for paired inputs",
    "gain": "families wrong with input X and right with Y",
    "loss": "families right with input X and wrong with Y",
    "net": "accuracy of model B minus model A, pp",
    "delta": "accuracy with input Y minus with X, pp",
    "p_value": "clustered McNemar p-value (two-sided sign-flip test of each family's net of discordant tasks; "
    "the exact McNemar test when every family has one task); in the model checks, "
    "the predictive p-value: the share of replicates whose statistic is at least the observed one "
    "(near 0 or 1: the model does not reproduce it)",
    "p_adjusted": "p_value adjusted for the comparisons in the same output (see adjustment)",
    "verdict": "the paired difference in words (model B against A; input `to` against `from`): ahead or behind "
    "(its interval excludes 0; in ranks --pairs, the pair is separated by the rank ranges' simultaneous test), "
    "equivalent (its 1 − 2α interval lies within ±margin: two one-sided tests), non-inferior where "
    "non-inferiority was asked for (that interval's lower end lies above −margin), else undecided; equivalence "
    "and non-inferiority per pair, not adjusted over the pairs",
    "margin": "the equivalence (or non-inferiority) margin of verdict, pp",
    "adjustment": "multiple-comparison method behind p_adjusted, e.g. holm",
    "answers": "terminal answers counted (explanations: those with justification text)",
    "invalid_answers": "terminal answers that name no candidate",
    "invalid_share": "invalid_answers over answers (a proportion)",
    "invalid_pct": "the same in %",
    "models": "models with answers",
    "channels": "channels and bundles with tasks",
    "correct_samples": "terminal answers (one per sample) that name the task's target",
    "successes": "right answers in a binomial cell of the hierarchical model",
    "trials": "answers in that cell (invalid ones count as not right)",
    # cohort
    "families_total": "families with tasks in the channel",
    "input_validated": "families whose verifiable candidate pairs are all at least the cutoff apart",
    "complete_coverage": "every model has a terminal response to every required task of the family (coverage); "
    "the number of such families (cohort_summary)",
    "cohort": "families in the cohort: input-validated and complete coverage",
    "family_id": "family identifier",
    "task_id": "task identifier",
    "sample": "sample number of an answer (0 for the first; several when a task was sampled repeatedly)",
    "cites": "the answer's justification names the channel's quantity or repeats a number its prompt showed",
    "persists": "a cf answer that chose the family's source candidate",
    "drop_reason": "why the family is not in the channel's cohort",
    # stability, ranks, power, frequentist companions
    "size": "families per subsample (capped at the cohort size)",
    "spearman_rho": "mean Spearman correlation of the subsample ranking with the full-cohort ranking",
    "exact": "% of subsamples whose complete ranking equals the full-cohort ranking",
    "mad": "mean absolute deviation of the score from its full-cohort value, over models and draws (pp)",
    "rank": "rank among the models on the row's cohort, the full cohort unless said (1 = best; ties share the "
    "mean rank)",
    "exclusion": "which families the row leaves out of the cohort: none, or those the audit flagged",
    "rank_low": "best rank the data allow: 1 + the models separated ahead of it (simultaneous within a channel at conf_level)",
    "rank_high": "worst rank the data allow: the number of ranked models − those separated behind it",
    "rank_range": "rank_low–rank_high as printed on the Leaderboard page",
    "tier": "tie group, 1 = the top: models in leaderboard order, no two of a group separated at conf_level; empty for a model with no score",
    "saturated": "the channel's top tie group holds two or more models, every one with its interval's lower end at or above 90% (rates; never for the reliance margin)",
    "probability": "share of bootstrap replicates with this rank",
    "alpha": "two-sided test level",
    "power": "probability of detecting the difference",
    "icc": "intra-cluster correlation of outcomes within a family, across models and conditions",
    "design_effect": "variance with clustering by family over the variance without",
    "sd_family": "standard deviation of the per-family difference between two models (pp)",
    "mde": "minimum detectable difference between two models (pp)",
    "difference": "difference asked about (pp)",
    "families_needed": "families needed to detect the difference",
    # variance components and study designs (variance, design)
    "level": "where a variance component sits: family (carried into every channel), family_channel (the "
    "family's difficulty in this channel, with the answer noise of its single-task conditions unless repeated "
    "answers separate it), task (the cf tasks' spread within a family), sample (repeated answers to one task)",
    "variance": "variance of one family's contribution to a model's score at this level (pp²), averaged over the "
    "complete models; a score over F families has the sum of the levels over F",
    "share": "the level's % of the total variance of one family's contribution",
    "sample_identified": "whether repeated answers to a task (or a stated share) separate sample from task",
    "sample_source": "where the sample level comes from: repeated answers, an assumed share of the cf spread, or "
    "nowhere (one answer per task)",
    "new_families": "families the design needs beyond those the benchmark has",
    "responses": "responses the design asks of all the models together",
    "cost": "cost of the design: responses at their cost plus new families at theirs",
    "half_width": "predicted 95% half-width of one model's score (pp), at the variance the study shows",
    "half_width_planned": "the half-width at the variance's 80% upper bound, which the design is planned on "
    "(at most the target)",
    "power_planned": "the power at the variance's 80% upper bound, which the design is planned on (at least the "
    "target)",
    "cheapest": "the cheapest design of the channel that meets the target",
    "meets_target": "whether the design buys the target within the budget and the cap on families; a channel "
    "where none does shows its most precise design within them",
    "precision": "half-width (pp) or power the design buys",
    "wilson_low": "lower end of the Wilson score interval (tasks as independent)",
    "wilson_high": "upper end of the Wilson score interval",
    "se_independent": "standard error treating tasks as independent (pp)",
    "se_clustered": "cluster-robust standard error with families as clusters (pp)",
    # the hierarchical model
    "r_hat_max": "largest R-hat over the sampled parameters",
    "ess_bulk_min": "smallest bulk effective sample size",
    "ess_bulk_min_parameter": "the parameter (with its coordinates) that has the smallest bulk ESS",
    "ess_tail_min": "smallest tail effective sample size",
    "divergences": "divergent transitions after tuning",
    "bfmi_min": "smallest Bayesian fraction of missing information (E-BFMI) over the chains; shown beside the "
    "health gate, not part of it (below 0.3, where Stan warns, read the ESS and R-hat closely)",
    "passed": "R-hat <= 1.01, bulk and tail ESS >= 400 and no divergence (in the attempts table: of the draws kept "
    "after that attempt)",
    "seconds": "wall time of the fit, every attempt (in the attempts table: of that attempt)",
    "chains": "Markov chains (in the attempts table: sampled in that attempt)",
    "attempts": "sampling attempts the fit made (a first run, then extensions or restarts while the gate failed)",
    "action": "what the attempt did: first run; more chains (too few effective draws or a high R-hat); "
    "a higher target acceptance or the low-rank mass matrix (divergences)",
    "tune": "warm-up (tuning) steps per chain",
    "target_accept": "NUTS target acceptance: higher means smaller steps",
    "low_rank": "whether nutpie's low-rank mass matrix was used",
    "chains_kept": "chains the fit holds after the attempt (an extension pools its chains with the earlier ones)",
    "final": "whether this attempt's draws are the fit as saved",
    # model checks (posterior FIT --what predictive / prior)
    "statistic": "the statistic checked: accuracy (share right, %) or family_spread (standard deviation across "
    "cohort families of each family's share right, pp)",
    "observed": "the statistic on the observed answers",
    "predicted": "its mean over the predictive replicates (answers drawn from the model)",
    "outside": "whether the observed value lies outside the replicates' central interval",
    "loo_elpd": "expected log predictive density (PSIS-LOO) of the model",
    "loo_elpd_no_family": "the same for the model without family effects",
    "loo_difference": "loo_elpd minus loo_elpd_no_family (positive favours family effects)",
    "loo_difference_se": "standard error of that difference",
    "loo_pareto_k_max": "largest Pareto k of PSIS-LOO over both models (above 0.63, 1 − 1/log10 of the 500 draws LOO reads: LOO unreliable there)",
    "fit_passed": "whether the fit behind these numbers passed its health gate",
    # separability
    "source_tasks": "source tasks in the channel (every family, not only the cohort)",
    "verifiable": "source tasks with at least one distractor that has a value to compare",
    "separated": "separability: % of source tasks whose source is at least the cutoff away from every distractor; "
    "pair_separation: whether the pair is at least the cutoff apart",
    "nearest_median": "median distance from the source to its nearest distractor",
    "nearest_q1": "first quartile of that distance",
    "nearest_q3": "third quartile of that distance",
    "scale": "raw distance, or over_cutoff (distance divided by the cutoff: UV-Vis and bundles)",
    # the benchmark audit (molp2s audit)
    "flag": "what the audit found: wrong_key, duplicate_candidates, indistinguishable or no_signal",
    "score": "how suspicious a finding is, comparable within its flag (higher: more): wrong_key, the log likelihood "
    "ratio of another label as the key; duplicate_candidates, 2 where the key is duplicated, else 1; "
    "indistinguishable, 1 − distance / cutoff; no_signal, the answers behind it",
    "evidence": "what the audit saw, in words and numbers",
    "findings": "how many findings the audit made: families, or family × channel cells",
    # molp2s check
    "check": "what was checked: readable (a table read through), rows (a file's answers against its rows), file "
    "(a loaded file on disk, SHA-256 as recorded) or benchmark (the benchmark folder)",
    "subject": "the table, file or folder checked",
    "status": "ok, changed (a file edited since it was loaded), missing or failed",
    "detail": "what the check saw",
    # the benchmark as loaded (staging views)
    "group": "a channel's group (electronic, vibrational, magnetic_resonance, bundles), or a model's (closed-weight, "
    "say): the leaderboards' spanners",
    "subgroup": "a channel's second spanner on the leaderboards (¹H NMR), if any",
    "label": "a candidate's letter within its family (A, B, …)",
    "column_label": "a channel's column label on the leaderboards, under its spanners (Peaks)",
    "name": "what prompts, row labels and chart panels call a channel (¹H peaks)",
    "display_name": "what the reports call a model",
    "position": "display order (of channels, or of the models table's rows)",
    "distance": "how two candidates' values of a channel differ, on the channel's scale (D, Hartree, 1 − M, ppm)",
    "cutoff": "the smallest distance at which two candidates count as told apart",
    "components": "the single channels a bundle shows (* for every one)",
    "component": "one single channel of a bundle",
    "label_a": "first candidate of a pair (the smaller label)",
    "label_b": "second candidate of a pair",
    "distance_over_cutoff": "distance divided by the channel's cutoff (1 = at the cutoff)",
    "fragment": "a candidate's masked piece, SMILES with one [*] attachment point",
    "molecule": "the molecule a candidate completes, SMILES",
    "scaffold": "the family's masked molecule, SMILES with one [*] where the missing piece attaches",
    "source_label": "label of the family's source candidate (the molecule the properties belong to)",
    "n_candidates": "K_f: the family's number of candidates",
    "target": "the label a task's right answer names (the source, or k for a cf task)",
    "shown_family": "family whose properties the task shows (another family's for a shuffled task)",
    "shown_label": "candidate whose properties the task shows",
    "attempt": "attempt number of a response (a retried request has several; the highest is terminal); in a "
    "fit's attempts table, the sampling attempt's number, 1 first",
    "response": "the model's answer text, as given",
    "choice": "the candidate label the answer names (parsed from its text, or given); empty when invalid",
    "invalid_reason": "why an answer names no candidate (no_answer, ambiguous, request_failed, truncated, …)",
    "choice_source": "where choice came from: given in the file, or parsed from the response text",
    # per task and family (the cohort marts)
    "samples": "terminal answers to the task (one per sample)",
    "valid_samples": "those that name a candidate",
    "y": "share of the task's answers that name its target",
    "chose_source": "share of the task's answers that name the family's source candidate",
    "chose_other": "share that name neither the target nor the source, invalid answers included",
    "chose_other_valid": "share of the valid answers that name neither the target nor the source",
    "cf_other_valid": "cf_other over the valid answers only: those naming another candidate",
    "y_p0": "the family's P0 task: share of answers right",
    "y_source": "the family's source task in the channel: share of answers right",
    "y_shuffled": "the family's shuffled task in the channel: share of answers right",
    "cf_tasks": "the family's cf tasks in the channel",
    "cf_correct": "sum over the family's cf tasks of the share of answers naming the counterfactual candidate",
    "cf_flip": "mean over the family's cf tasks of the share of answers that follow the counterfactual",
    "cf_persist": "mean over the family's cf tasks of the share of answers that stay with the source",
    "cf_other": "mean over the family's cf tasks of the share of answers naming anything else (invalid included)",
    "verifiable_pairs": "candidate pairs of the family with values to compare in the channel",
    "separated_pairs": "those at least the cutoff apart",
    "required_tasks": "tasks every model must answer for the family to enter the channel's cohort",
    "has_all_conditions": "the family has a P0, source, shuffled and cf task in the channel",
    "models_incomplete": "models that miss at least one required task",
    "missing_responses": "required (model, task) pairs with no terminal response",
    "in_cohort": "the family is in the channel's cohort (input-validated and completely covered)",
    "answered_tasks": "of the tasks the channel reads for the family, those the model has a response to",
    "missing_tasks": "of the tasks the channel reads for the family, those the model has no response to",
    "answered_property_tasks": "of the channel's own tasks for the family (all but P0), those the model has a "
    "response to",
    "families_answered": "families the model has a response for in some channel (P0 tasks aside)",
    "partial": "the model was run on part of the benchmark: some family × channel has no response from it (P0 "
    "aside); it is scored on the cohort families it answered in full and never shrinks the cohort",
    "defines_cohort": "the model's coverage decides which families are complete: every complete model (every "
    "model, when none is complete)",
}

#: A column named ``<name>_valid`` is ``<name>`` over the valid answers only (NULL where
#: there are none): the sensitivity in which invalid answers are left out.
VALID_SUFFIX = "_valid"


def check_columns(columns: Iterable[str]) -> None:
    """Raise ValueError naming any column that the glossary does not define."""
    unknown = [
        c
        for c in columns
        if c not in COLUMNS and not (c.endswith(VALID_SUFFIX) and c.removesuffix(VALID_SUFFIX) in COLUMNS)
    ]
    if unknown:
        raise ValueError(f"columns not in the glossary: {unknown}")


#: Column headings of the report's tables, where the id alone would not read well; any
#: other column is headed by `column_label`'s spelling of its id (``families_total`` →
#: "Families total"). The exported CSV keeps the ids.
COLUMN_LABELS: dict[str, str] = {
    "model": "Model",
    "channel": "Channel",
    "condition": "Condition",
    "metric": "Metric",
    "model_a": "Model A",
    "model_b": "Model B",
    "from": "From",
    "to": "To",
    "estimate": "Estimate",
    "conf_low": "Low",
    "conf_high": "High",
    "conf_level": "Level",
    "n": "Families",
    "draws": "Draws",
    "draws_undefined": "Undefined draws",
    "seed": "Seed",
    "baseline": "Random baseline",
    "both_correct": "Both right",
    "a_only": "A only",
    "b_only": "B only",
    "both_wrong": "Both wrong",
    "net": "Net (pp)",
    "delta": "Δ (pp)",
    "p_value": "p",
    "p_adjusted": "p (adjusted)",
    "invalid_pct": "Invalid (%)",
    "invalid_share": "Invalid share",
    "invalid_answers": "Invalid answers",
    "families_total": "Families",
    "input_validated": "Input-validated",
    "complete_coverage": "Complete coverage",
    "cohort": "Cohort",
    "r_hat_max": "Max R-hat",
    "ess_bulk_min": "Min bulk ESS",
    "ess_bulk_min_parameter": "Parameter with min bulk ESS",
    "ess_tail_min": "Min tail ESS",
    "bfmi_min": "Min BFMI",
    "passed": "Passed",
    "seconds": "Seconds",
    "draws_per_chain": "Draws per chain",
    "target_accept": "Target acceptance",
    "low_rank": "Low-rank mass matrix",
    "chains_kept": "Chains kept",
    "final": "Final",
    "loo_elpd": "LOO elpd",
    "loo_elpd_no_family": "LOO elpd, no family effects",
    "loo_difference": "LOO difference",
    "loo_difference_se": "LOO difference SE",
    "loo_pareto_k_max": "Max Pareto k",
    "mad": "MAD",
    "spearman_rho": "Spearman ρ",
    "icc": "ICC",
    "mde": "MDE (pp)",
    "sd_family": "Family SD",
    "se_independent": "SE (independent)",
    "se_clustered": "SE (clustered)",
    "rank_low": "Rank low",
    "rank_high": "Rank high",
    "rank_range": "Rank range",
    "wilson_low": "Wilson low",
    "wilson_high": "Wilson high",
    "nearest_median": "Nearest, median",
    "nearest_q1": "Nearest, Q1",
    "nearest_q3": "Nearest, Q3",
    "source_tasks": "Source tasks",
    "cites": "Cites",
    "persists": "Persists",
    "cites_property": "Cites a property",
    "cites_but_persists": "Cites but persists",
}


def column_label(column: str) -> str:
    """The heading of a column in the report's tables.

    >>> column_label("ess_tail_min"), column_label("families_needed"), column_label("x_pct")
    ('Min tail ESS', 'Families needed', 'X (%)')
    """
    if column in COLUMN_LABELS:
        return COLUMN_LABELS[column]
    words = column.removesuffix("_pct").replace("_", " ")
    words = words[:1].upper() + words[1:]
    return f"{words} (%)" if column.endswith("_pct") else words
