"""How far the figures can be trusted: ``stability``, ``ranks``, ``power``, ``frequentist``,
``separability``, ``audit``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_DB, DEFAULT_DRAWS
from ..errors import UsageError, require_known
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
    MarginOption,
    NonInferiorityOption,
    OutOption,
    RankMetricOption,
    SeedOption,
    chosen_metrics,
    cohort_outcomes,
    interval_rule,
    known_channels,
    open_database,
    ranked_models,
    verdict_test,
)

pl = lazy_import("polars")
units = lazy_import("molp2s_stats.units")
metrics = lazy_import("molp2s_stats.stats.metrics")
power = lazy_import("molp2s_stats.stats.power")
stability = lazy_import("molp2s_stats.stats.stability")
store = lazy_import("molp2s_stats.store")


@command("stability")
def stability_command(
    db: DbOption = Path(DEFAULT_DB),
    score: RankMetricOption = "pgr",
    channel: ChannelsOption = None,
    macro: Annotated[bool, typer.Option("--macro", help="Rank by the mean of the metric over the channels.")] = False,
    sizes: Annotated[
        str, typer.Option("--sizes", help="Subset sizes, comma-separated (capped at the cohort).")
    ] = "25,50,75,100,125",
    draws: Annotated[int, typer.Option("--subsets", "--draws", help="Family subsets drawn per size.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the subsampling; recorded in the output.")] = 0,
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Would the model ranking survive fewer families? Spearman ρ, Exact %, MAD per size (Tables 10–11).

    Example: molp2s stability --metric reliance_margin --macro --sizes 25,50,75,100,125 --subsets 1000 --seed 1
    """
    con = open_database(db, responses=True)
    outcomes, channels, models = cohort_outcomes(con, exclude)
    chosen = known_channels(channel, channels)  # a misspelt channel is said before any note
    models = ranked_models(con, models)
    size_list = tuple(int(part) for part in sizes.split(",") if part.strip())
    groups = 1 if macro else len(chosen)
    from rich.progress import Progress

    with Progress(transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("subsampling", total=groups * len(size_list))
        result = stability.ranking_stability(
            outcomes,
            score=score,
            channels=chosen,
            models=models,
            macro=macro,
            sizes=size_list,
            draws=draws,
            seed=seed,
            progress=lambda n: bar.advance(task, n),
        )
    emit(result, fmt, out, title=f"Ranking stability of {score} under family subsampling")


@command("ranks")
def ranks_command(
    db: DbOption = Path(DEFAULT_DB),
    score: RankMetricOption = "pgr",
    channel: ChannelsOption = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_DRAWS,
    distribution: Annotated[
        bool, typer.Option("--distribution", help="Print P(rank) per model instead of the intervals.")
    ] = False,
    pairs: Annotated[
        bool, typer.Option("--pairs", help="Print every pair of models in words (the verdicts) instead.")
    ] = False,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    margin: MarginOption = None,
    non_inferiority: NonInferiorityOption = False,
    interval: IntervalOption = "auto",
    exclude: ExcludeOption = None,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Each model's rank range ("2–4") and tie group per channel: what the data can and cannot tell apart.

    Every pair of models is tested on its family-clustered difference, by a step-down max-T test on
    the family bootstrap and by a sign-flip (clustered McNemar) test with Holm's adjustment; a pair
    is separated where both separate it, so the ranges are simultaneous within a channel at
    --conf-level (95%: the chance that any pair called separated is not is at most 5%; not across
    channels). A model's rank range runs from 1 + the models separated ahead of it to the number of
    models − those separated behind. Tie groups run down the leaderboard, no two models of a group
    separated ("not separated at 95%" says the data could not tell them apart, not that they are
    equal). A channel whose top tie group holds two or more models with lower ends at or above 90%
    is marked saturated. A model with no score on the cohort is listed last, unranked.
    --distribution prints P(rank) per model instead.

    --pairs prints every pair of ranked models per channel instead, the better placed as model_a:
    model_b's score minus model_a's with its per-pair interval, and a verdict: behind where the
    test above separates them (so a verdict never contradicts the tie groups), else equivalent
    where the 1 − 2α interval lies within ±--margin (per pair), or non-inferior with
    --non-inferiority, else undecided. --interval picks the pairs' interval (the rank ranges' tests
    do not change with it).

    Example: molp2s ranks --metric pgr --channel ir
    """
    if distribution and pairs:
        raise UsageError("give --distribution or --pairs, not both")
    interval_rule(interval)
    con = open_database(db, responses=True)
    outcomes, channels, models = cohort_outcomes(con, exclude)
    chosen = known_channels(channel, channels)  # a misspelt channel is said before any note
    models = ranked_models(con, models)
    if pairs:
        verdicts = stability.pair_verdicts(
            outcomes,
            score=score,
            channels=chosen,
            models=models,
            draws=bootstrap,
            seed=seed,
            conf_level=conf_level,
            margin=None if margin is None else units.proportion(margin),
            test=verdict_test(non_inferiority),
            interval=interval,
        )
        emit(
            verdicts,
            fmt,
            out,
            title=f"Every pair of models by {score}: model_b against model_a (pp; behind: separated at "
            f"{conf_level:.0%}, simultaneous within a channel)",
        )
        return
    ranges, probabilities = stability.rank_intervals(
        outcomes, score=score, channels=chosen, models=models, draws=bootstrap, seed=seed, conf_level=conf_level
    )
    for saturated in stability.saturated_channels(ranges):
        typer.echo(
            f"saturated: {saturated}: the top tie group's models all have lower ends at or above "
            f"{stability.SATURATION_LEVEL:.0%} by {score}; these families do not separate them",
            err=True,
        )
    emit(
        probabilities if distribution else ranges,
        fmt,
        out,
        title=f"Rank ranges and tie groups by {score} (1 = best; {conf_level:.0%} simultaneous within a channel)",
    )


@command("power")
def power_command(
    db: DbOption = Path(DEFAULT_DB),
    channel: ChannelsOption = None,
    families: Annotated[
        int | None, typer.Option("--families", help="Families per channel; default: the cohort size.")
    ] = None,
    difference: Annotated[
        float | None, typer.Option("--difference", help="Also report the families needed for this difference (pp).")
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided test level.")] = 0.05,
    target_power: Annotated[float, typer.Option("--power", help="Power.")] = 0.8,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Minimum detectable RM and PGR difference between two models, with the family design effect.

    One intra-cluster correlation for every outcome; `molp2s design --difference` plans from the variance
    the model pairs' differences show, with answers per task, cf tasks a family and a cost.

    Example: molp2s power --families 136 --difference 10
    """
    con = open_database(db, responses=True)
    outcomes, channels, _ = metrics.read_family_outcomes(con)
    table = power.power_table(
        outcomes,
        channels=known_channels(channel, channels),
        families=families,
        alpha=alpha,
        power=target_power,
        difference=difference,
    )
    emit(table, fmt, out, title="Minimum detectable difference between two models (pp)")


@command("frequentist")
def frequentist_command(
    db: DbOption = Path(DEFAULT_DB),
    metric: Annotated[list[str] | None, typer.Option("--metric", help="Metric(s); default: all.")] = None,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Wilson intervals and family-clustered standard errors beside the bootstrap ones.

    Example: molp2s frequentist --metric acc_source --format csv
    """
    chosen = chosen_metrics(metric)
    con = open_database(db, responses=True)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    result = metrics.frequentist_companions(
        outcomes, channels=channels, models=models, metrics=chosen, conf_level=conf_level
    )
    emit(result, fmt, out, title="Wilson intervals and clustered standard errors (pp)")


@command("separability")
def separability_command(
    db: DbOption = Path(DEFAULT_DB),
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """How far each source candidate lies from its nearest distractor, per channel (Table 6).

    Example: molp2s separability --format csv --out separability.csv
    """
    con = open_database(db)
    emit(
        store.read_mart(con, "separability"),
        fmt,
        out,
        title="Separability of source candidates (nearest distractor; UV-Vis and bundles over the cutoff)",
    )


@command("audit")
def audit_command(
    db: DbOption = Path(DEFAULT_DB),
    q: Annotated[
        float,
        typer.Option(
            "--q", help="False-discovery rate over families at which wrong_key flags a family (Benjamini–Hochberg)."
        ),
    ] = 0.05,
    replicates: Annotated[
        int,
        typer.Option(
            "--replicates",
            help="Answer sets drawn under each family's key for wrong_key's p-value (more where a family's statistic is far out, up to 100,000).",
        ),
    ] = 999,
    seed: Annotated[int, typer.Option("--seed", help="Seed of those draws and of the bootstrap.")] = 0,
    impact: Annotated[
        bool,
        typer.Option(
            "--impact",
            help="Print instead how --metric and each model's rank move per channel when the flagged families leave the cohort, with family-level intervals.",
        ),
    ] = False,
    metric: Annotated[str, typer.Option("--metric", help="The headline metric --impact reports.")] = "pgr",
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap replicates for --impact's intervals.")
    ] = DEFAULT_DRAWS,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Audit the benchmark: families whose key the answers contradict (wrong_key), candidates that are one
    molecule (duplicate_candidates), a source whose shown properties match a distractor's within the channel's
    resolution (indistinguishable), and families every model gets right, or wrong, under every condition
    (no_signal). One row per finding, most suspicious first within each flag.

    Then how the ranking by --metric moves without the flagged families (--impact: the metric
    and rank of every model with and without them, with intervals). Leave them out of any
    table with --exclude findings.csv on metrics, ranks and stability.

    Example: molp2s audit --format csv --out findings.csv
    """
    from ..stats import audit

    if not 0 < q < 1:
        raise UsageError("--q must be between 0 and 1")
    if replicates < 99:
        raise UsageError("--replicates must be at least 99")
    require_known("metric", "--metric", [metric], list(METRICS))  # before the audit, which takes a while
    con = open_database(db, responses=True)
    findings = audit.audit(con, q=q, replicates=replicates, seed=seed).sort(
        pl.col("flag").replace_strict({f: i for i, f in enumerate(audit.FLAGS)}),
        -pl.col("score"),
        "family_id",
        "channel",
    )
    counts = ", ".join(f"{flag} {findings.filter(pl.col('flag') == flag).height}" for flag in audit.FLAGS)
    typer.echo(f"findings: {counts} (wrong_key at a false-discovery rate of {q:g}, seed {seed})", err=True)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    moved = audit.impact(
        outcomes,
        findings.select("family_id", "channel"),
        channels=channels,
        models=ranked_models(con, models),
        metric=metric,
        draws=bootstrap if impact else 0,
        seed=seed,
    )
    changes = audit.rank_changes(moved)
    typer.echo(
        f"without the flagged families, the ranking by {metric} "
        + ("moves: " + "; ".join(changes) if changes else "stays as it is on every channel"),
        err=True,
    )
    if impact:
        emit(moved, fmt, out, title=f"{metric} with and without the flagged families (exclusion: none | flagged)")
        return
    emit(findings, fmt, out, title="Benchmark audit: families that cannot measure what they claim")
