"""The metrics and what they are read from: ``metrics``, ``plan``, ``estimate``, ``explanations``,
``cohort``. Paired comparisons (``compare-inputs``, ``transitions``) are in ``compare``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_DB, DEFAULT_DRAWS, DEFAULT_MAX_PEAKS, INTERVAL_HELP
from ..errors import require_known
from ..glossary import METRICS
from ..lazy import lazy_import
from .core import command
from .output import emit
from .params import (
    ChannelsOption,
    DbOption,
    ExcludeOption,
    FormatOption,
    IntervalOption,
    LevelOption,
    MetricsOption,
    OutOption,
    SeedOption,
    chosen_metrics,
    cohort_outcomes,
    interval_rule,
    known_channels,
    open_database,
)

pl = lazy_import("polars")
compare = lazy_import("molp2s_stats.stats.compare")
metrics = lazy_import("molp2s_stats.stats.metrics")
store = lazy_import("molp2s_stats.store")
subsample = lazy_import("molp2s_stats.stats.subsample")
units = lazy_import("molp2s_stats.units")


def _metrics_help() -> str:
    from ..glossary import definition

    lines = "\n\n".join(f"{metric}: {definition(metric)}" for metric in METRICS)
    return (
        "Every metric per model × channel, with family-level intervals (rates in %, differences in pp).\n\n"
        f"{INTERVAL_HELP}\n\n{lines}\n\nExample: molp2s metrics --metric pgr --metric cfr --bootstrap 2000 --seed 1 --format csv "
        "--out metrics.csv"
    )


@command("metrics", help=_metrics_help())
def metrics_command(
    db: DbOption = Path(DEFAULT_DB),
    metric: MetricsOption = None,
    channel: ChannelsOption = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap replicates (0: point estimates only).")
    ] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    invalid: Annotated[
        str,
        typer.Option(
            "--invalid",
            help="Invalid answers: wrong (scored 0, the paper's rule) | exclude (left out; n counts the families that entered).",
        ),
    ] = "wrong",
    interval: IntervalOption = "auto",
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Every metric (accuracy, RM, CF accuracy, PGR, CFR/Persist/Other) per model × channel with family-bootstrap intervals.

    Example: molp2s metrics --metric pgr --metric cfr --bootstrap 2000 --seed 1 --format csv --out metrics.csv
    """
    chosen = chosen_metrics(metric)
    interval = interval_rule(interval)
    con = open_database(db, responses=True)
    outcomes, channels, models = cohort_outcomes(con, exclude)
    result = metrics.compute_metrics(
        outcomes,
        channels=known_channels(channel, channels),
        models=models,
        metrics=chosen,
        draws=bootstrap,
        seed=seed,
        conf_level=conf_level,
        invalid=invalid,
        interval=interval,
    )
    if note := metrics.partial_note(metrics.read_partial_models(con)):
        typer.echo(note, err=True)
    emit(result, fmt, out, title="Metrics (rates in %, differences in pp)")


@command("plan")
def plan_command(
    out: Annotated[
        Path, typer.Option("--out", help="CSV of the chosen families (one row per family, column family_id).")
    ],
    db: DbOption = Path(DEFAULT_DB),
    fraction: Annotated[
        float | None, typer.Option("--fraction", help="Share of the cohorts' families to evaluate, e.g. 0.15.")
    ] = None,
    families: Annotated[
        int | None, typer.Option("--families", help="Number of families to evaluate (instead of --fraction).")
    ] = None,
    half_width: Annotated[
        float | None,
        typer.Option(
            "--half-width",
            help="Instead: the fewest families at which every channel's expected 95% PGR half-width is at most this (pp).",
        ),
    ] = None,
    channel: ChannelsOption = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the random draw within each stratum; recorded in the plan.")
    ] = 0,
) -> None:
    """Choose the families a new model is to answer, and say what that buys before anything is spent.

    The families are a stratified random sample: the models already answered in full say where a
    model's outcome is hard to predict from theirs, and those families get more of the budget. The
    plan is recorded in the database, so that `molp2s estimate` can weigh each answered family by
    its chance of being chosen. Prints the requests the plan costs and the expected 95% half-width
    of each channel's PGR, at this budget and at others beside it. Then export the chosen families'
    prompts with `molp2s prompts --families plan.csv --format openai-batch --model NEW --out requests.jsonl`.

    Example: molp2s plan --fraction 0.15 --seed 1 --out plan.csv
    """
    con = open_database(db, read_only=False, responses=True)
    plan = subsample.plan_from_db(
        con,
        fraction=fraction,
        families=families,
        half_width=half_width,
        channels=known_channels(channel, metrics.read_channels_and_models(con)[0]),
        seed=seed,
    )
    subsample.save_plan(con, plan)
    con.close()
    chosen = plan.families.filter("selected")
    chosen.select("family_id", "stratum", "inclusion_probability").write_csv(out)
    strata = int(plan.families["stratum"].max())
    typer.echo(
        f"{plan.plan_id}: {chosen.height} of {plan.families.height} families "
        f"({chosen.height / plan.families.height:.0%}) in {strata} {'stratum' if strata == 1 else 'strata'}, "
        f"seed {seed}; {plan.requests:,} requests (their tasks in {len(plan.channels)} channels and P0); "
        f"wrote {out}"
    )
    only = "".join(f" --channel {c}" for c in plan.channels) if channel else ""
    typer.echo(f"export their prompts with: molp2s prompts --db {db} --families {out}{only} --format … --out …")
    typer.echo("expected 95% half-width of each channel's PGR (pp), for a model like the complete ones:")
    from ..units import percent_column

    shown = plan.budgets.with_columns(percent_column("fraction", "percent").round(0).cast(pl.Int64))
    wide = shown.with_columns(pl.format("{} families ({}%)", "families", "percent").alias("budget")).pivot(
        on="budget", index="channel", values="half_width", maintain_order=True
    )
    emit(wide.with_columns(pl.col(pl.Float64).round(1)), None, None)
    chosen_budget = plan.budgets.filter(pl.col("families") == chosen.height)
    typer.echo(
        f"at {chosen.height} families, from a model as steady as the steadiest complete model to one as "
        "noisy as the noisiest (a model near the ceiling lands at the low end, or below): "
        + "; ".join(
            f"{c} {low:.1f}–{high:.1f}"
            for c, low, high in chosen_budget.select("channel", "half_width_low", "half_width_high").iter_rows()
        )
    )
    requests = plan.budgets.unique("families", maintain_order=True)
    typer.echo(
        "requests: " + ", ".join(f"{f} families {r:,}" for f, r in requests.select("families", "requests").iter_rows())
    )


@command("estimate")
def estimate_command(
    model: Annotated[str, typer.Option("--model", help="The partial model (answered on a plan's families).")],
    db: DbOption = Path(DEFAULT_DB),
    plan: Annotated[
        str | None,
        typer.Option(
            "--plan",
            help="Plan id (as `molp2s plan` printed it); default: the recorded plan that holds the model's families.",
        ),
    ] = None,
    bootstrap: Annotated[
        int,
        typer.Option(
            "--bootstrap",
            help="Bootstrap replicates of the answered families within their strata for the standard error (0: the design-based one, exact for this estimator up to its linearisation); either way the interval is a score interval that stays off a bound.",
        ),
    ] = 0,
    metric: MetricsOption = None,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """A partial model's every metric over the complete cohort: the value it would have had if it had
    answered everything, with a family-level interval (same rows as `molp2s metrics`).

    The complete models predict the families it did not answer; its answered families, weighed by
    the inverse of their chance of being planned, correct that prediction (the AIPW estimator), so the
    estimate stays consistent when the prediction is poor. The interval is about what a complete
    model's is about, the score over families like these: it is the wider for each family not
    answered, and a model that answered every family gets a complete model's interval, so the two
    sit side by side on one leaderboard. `method` names the estimator, `n` counts the families answered.

    To try it on the default data, make a partial model from a complete one on the families of the
    latest plan (`molp2s plan --fraction 0.15 --seed 1 --out plan.csv`), then load it:
    `molp2s sql "SELECT 'new-model' AS model, task_id, sample, response, choice FROM responses JOIN tasks
    USING (task_id) JOIN plan_families USING (family_id) WHERE model = 'sim-generalist' AND selected AND
    plan_id = (SELECT plan_id FROM plans ORDER BY created_at DESC LIMIT 1)" --out new-model.parquet`, then
    `molp2s load --responses new-model.parquet`.

    Example: molp2s estimate --model new-model --format csv --out estimate.csv
    """
    chosen = chosen_metrics(metric)
    con = open_database(db, responses=True)
    require_known("model", "--model", [model], metrics.read_channels_and_models(con)[1])
    result, note = subsample.estimate_from_db(
        con, model, plan_id=plan, metrics=chosen, conf_level=conf_level, seed=seed, draws=bootstrap
    )
    if note:
        typer.echo(f"note: {note}", err=True)
    emit(result, fmt, out, title=f"Estimated metrics of {model} (rates in %, differences in pp)")


@command("explanations")
def explanations_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap replicates (0: point estimates only).")
    ] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    per_response: Annotated[
        bool, typer.Option("--per-response", help="One row per response (cites, persists) instead of the rates.")
    ] = False,
    max_peaks: Annotated[
        int, typer.Option("--max-peaks", help="The IR and Raman peak cap the prompts were exported with.")
    ] = DEFAULT_MAX_PEAKS,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Do the justifications cite the shown property? Rates per model × channel × condition.

    A response cites the property when its text names the channel's quantity (dipole, gap,
    IR, shielding, ...) or repeats a number the prompt showed. On cf tasks,
    cites_but_persists is the share of answers that cite the property yet keep the source
    candidate. Only responses with text count (a bare label has no justification). Intervals:
    the family bootstrap's percentile interval, or near 0% and 100% Wilson's score interval on the
    effective number of families (the method column says which).

    Example: molp2s explanations --channel ir --bootstrap 2000 --seed 1
    """
    from ..stats import explanations

    con = open_database(db, responses=True)
    known, _ = metrics.read_channels_and_models(con)
    chosen = known_channels(channel, known)
    if per_response:
        result = explanations.response_citations(con, max_peaks=max_peaks, channels=chosen)
        emit(result, fmt, out, title="Justifications that cite the shown property, per response")
        return
    result = explanations.explanations_from_db(
        con, draws=bootstrap, seed=seed, conf_level=conf_level, max_peaks=max_peaks, channels=chosen
    )
    emit(result, fmt, out, title="Justifications that cite the shown property (% of answers with text)")


@command("cohort")
def cohort_command(
    db: DbOption = Path(DEFAULT_DB),
    dropped: Annotated[bool, typer.Option("--dropped", help="List the families left out, with the reason.")] = False,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Cohort size per channel and the criteria behind it (Table 5).

    Example: molp2s cohort --dropped
    """
    con = open_database(db)
    if dropped:
        result = metrics.read_dropped_families(con)
        emit(result, fmt, out, title="Families left out of each channel's cohort")
    else:
        emit(store.read_mart(con, "cohort_summary"), fmt, out, title="Cohort per channel")
