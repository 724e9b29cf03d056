"""Planning the next study: ``variance`` (where a score's variance comes from) and ``design``
(the cheapest families × answers per task × cf tasks that buy a precision)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_DB
from ..errors import UsageError, require_known
from ..lazy import lazy_import
from .core import command
from .output import emit
from .params import ChannelsOption, DbOption, FormatOption, OutOption, known_channels, open_database, ranked_models

pl = lazy_import("polars")
units = lazy_import("molp2s_stats.units")
metrics = lazy_import("molp2s_stats.stats.metrics")
planning = lazy_import("molp2s_stats.stats.planning")
variance = lazy_import("molp2s_stats.stats.variance")

PlanMetricOption = Annotated[
    str,
    typer.Option(
        "--metric", help="acc_p0 | acc_source | acc_shuffled | reliance_margin | pgr: a family mean of task outcomes."
    ),
]
SampleShareOption = Annotated[
    float | None,
    typer.Option(
        "--sample-share",
        help="With one answer per task: the share (0–1) of the cf tasks' spread within a family taken to be "
        "the noise of a repeated answer. An assumption, recorded; default: repeated answers are not planned.",
    ),
]


def _study_tasks(db: Path, channel: list[str] | None):
    """The complete models' cohort tasks, the chosen channels and every channel's single channels."""
    con = open_database(db, responses=True)
    channels, models = metrics.read_channels_and_models(con)
    chosen = known_channels(channel, channels)
    tasks = variance.tasks_from_db(con, ranked_models(con, models))
    return tasks, chosen, variance.channel_components(con)


@command("variance")
def variance_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="acc_p0 | acc_source | acc_shuffled | reliance_margin | pgr; repeat for several."
        ),
    ] = None,
    sample_share: SampleShareOption = None,
    draws: Annotated[
        int, typer.Option("--draws", help="Family bootstrap replicates for the intervals (0: none).")
    ] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap; recorded in the output.")] = 0,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Where each score's variance comes from: family, family × channel, cf task within family, repeated answer.

    Per channel and metric, averaged over the complete models: the variance of one family's contribution
    to a model's score (pp²; a score over F families has the sum over F), split by the method of moments:
    the part a family carries into every channel (its covariance with the other single channels), the cf tasks' spread
    within a family, the disagreement of repeated answers to one task, and the rest (the family's
    difficulty in this channel; with one task a family, source and shuffled answers' own noise too).
    With one answer per task the last two cannot be told apart: `sample_source` says so. 95% family
    bootstrap intervals.

    Example: molp2s variance --metric pgr --channel ir --channel dipole_norm
    """
    tasks, chosen, components = _study_tasks(db, channel)
    table = variance.variance_components(
        tasks,
        metrics=tuple(metric) if metric else ("acc_source", "reliance_margin", "pgr"),
        channels=chosen,
        draws=draws,
        seed=seed,
        sample_share=sample_share,
        components=components,
    )
    emit(table, fmt, out, title="Variance components of one family's contribution (pp²; share in %)")


@command("design")
def design_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    metric: PlanMetricOption = "pgr",
    half_width: Annotated[
        float | None,
        typer.Option("--half-width", help="Target: one model's interval half-width (pp) at 1 − --alpha (95%)."),
    ] = None,
    difference: Annotated[
        float | None,
        typer.Option("--difference", help="Target: tell two models this far apart (pp) with --power at --alpha."),
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option("--margin", help="Target: detect a model's score this far from 0 (pp; a reliance margin, say)."),
    ] = None,
    target_power: Annotated[float, typer.Option("--power", help="Power of a difference or margin target.")] = 0.8,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided level (a half-width's is 1 − alpha).")] = 0.05,
    models: Annotated[
        int | None, typer.Option("--models", help="Models the study runs; default: those in the database.")
    ] = None,
    response_cost: Annotated[
        list[str] | None,
        typer.Option(
            "--response-cost",
            help="Cost of a response: a number for every model, or MODEL=COST for one (repeat). Default 1: "
            "the cost counts responses.",
        ),
    ] = None,
    family_cost: Annotated[
        float, typer.Option("--family-cost", help="Cost of building a family beyond those that exist.")
    ] = 0.0,
    budget: Annotated[
        float | None, typer.Option("--budget", help="Spend at most this; an unmet target says what it buys.")
    ] = None,
    max_families: Annotated[
        int | None, typer.Option("--max-families", help="Families at most (the benchmark cannot grow beyond).")
    ] = None,
    max_samples: Annotated[int, typer.Option("--max-samples", help="Answers per task at most.")] = 5,
    sample_share: SampleShareOption = None,
    between: Annotated[
        float | None,
        typer.Option(
            "--between",
            help="For a study not yet run: the variance (pp²) of one family's contribution that only more families "
            "reduce; with --task, --sample, --cf-tasks and --families, instead of a database.",
        ),
    ] = None,
    task: Annotated[float | None, typer.Option("--task", help="Stated: one cf answer's task variance (pp²).")] = None,
    sample: Annotated[
        float | None, typer.Option("--sample", help="Stated: one answer's sample variance (pp²); default: unknown.")
    ] = None,
    cf_tasks: Annotated[int, typer.Option("--cf-tasks", help="Stated: cf tasks a family has.")] = 3,
    families: Annotated[int, typer.Option("--families", help="Stated: families that exist already.")] = 0,
    curve: Annotated[
        Path | None, typer.Option("--curve", help="Also write cost against precision over many family counts (CSV).")
    ] = None,
    chart: Annotated[
        Path | None,
        typer.Option("--chart", help="Also draw cost against precision, a line per design (.svg, .png or .html)."),
    ] = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """The cheapest study that buys a precision: families × answers per task × cf tasks a family.

    Give one target: --half-width (one model's score), --difference (two models, with --power) or
    --margin (one model's score away from 0). The variance of each channel's score comes from the
    loaded study (the complete models; `molp2s variance`), or from stated components for a study not
    yet run (--between, --task, --sample). Every design meeting the target is listed, cheapest first:
    its families (new ones beyond the benchmark's), answers per task, cf tasks a family, responses,
    cost, and the precision predicted (`half_width` or `power`) and planned on (`_planned`: at the
    variance's 80% upper bound, since the pilot's own variance is an estimate). Assumes new families
    are drawn like the old; with one answer per task, repeated answers are planned only with
    --sample-share.

    Example: molp2s design --half-width 3 --channel ir --channel dipole_norm --response-cost 0.002 --family-cost 5
    """
    targets = {
        "half_width": half_width,
        "difference": difference,
        "margin": margin,
    }
    given = {k: v for k, v in targets.items() if v is not None}
    if len(given) != 1:
        raise UsageError("give one target: --half-width, --difference or --margin")
    kind, value = next(iter(given.items()))
    target = planning.Target(kind, value, alpha=alpha, power=target_power)
    if between is not None:
        if task is None:
            raise UsageError("a stated study needs --task too (0 if cf tasks of a family agree)")
        inputs = [
            planning.assumed_inputs(
                metric, between=between, task=task, sample=sample, cf_tasks=cf_tasks, families=families
            )
        ]
        study_models = models or 2
    else:
        tasks, chosen, _ = _study_tasks(db, channel)
        inputs = planning.channel_inputs(tasks, metric, channels=chosen, sample_share=sample_share)
        study_models = models or inputs[0].models
    prices = _response_costs(response_cost)
    if between is None:  # a loaded study: a model priced on its own is one of its models
        require_known("model", "--response-cost", list(prices["per_model"]), sorted(tasks["model"].unique()))
    cost = planning.Cost(models=study_models, per_new_family=family_cost, **prices)
    table = planning.design(inputs, target, cost, budget=budget, max_families=max_families, max_samples=max_samples)
    for note in dict.fromkeys(n for i in inputs for n in i.notes):
        typer.echo(f"note: {note}", err=True)
    if table.filter(pl.col("cheapest") & (pl.col("new_families") > 0)).height:
        typer.echo("note: designs with new families assume they are drawn like the benchmark's", err=True)
    for short in table.filter(~pl.col("meets_target"))["channel"].to_list():
        typer.echo(
            f"note: {short}: no design meets the target within the limits; its row is the most precise", err=True
        )
    if curve is not None or chart is not None:
        points = planning.precision_curve(inputs, target, cost, max_samples=max_samples)
        if curve is not None:
            points.write_csv(curve)
        if chart is not None:
            from ..report import charts

            # half-widths up to four times the target: the steep start (3 families) says nothing
            shown = (
                points.filter(pl.col("precision") <= 4 * value)
                if kind == "half_width"
                else units.percent_columns(points, ["precision"])
            )
            axis = "95% half-width (pp)" if kind == "half_width" else "power (%)"
            line = value if kind == "half_width" else units.percent(target_power)
            charts.save(
                charts.cost_precision(
                    shown, target=line, title=f"Cost against precision, {metric}", precision_title=axis
                ),
                chart,
            )
    what = {
        "half_width": f"a {value:g} pp half-width",
        "difference": f"a {value:g} pp difference at {target_power:.0%} power",
        "margin": f"a {value:g} pp margin at {target_power:.0%} power",
    }[kind]
    emit(table, fmt, out, title=f"Designs that buy {what} on {metric}, cheapest first")


def _response_costs(entries: list[str] | None) -> dict:
    """--response-cost values: a bare number for every model, MODEL=COST for one."""
    per_model, every = {}, None
    for entry in entries or []:
        name, sep, number = entry.rpartition("=")
        try:
            price = float(number)
        except ValueError:
            raise UsageError(f"--response-cost takes a number or MODEL=NUMBER, got {entry!r}") from None
        if price < 0:
            raise UsageError(f"--response-cost cannot be negative, got {entry!r}")
        if sep:
            per_model[name] = price
        else:
            every = price
    return {"per_model": per_model, **({"per_response": every} if every is not None else {})}
