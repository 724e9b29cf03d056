"""Paired comparisons on the same families: ``compare-inputs`` (two inputs of one model) and
``transitions`` (two models on one channel), each with a verdict in words."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_DB, DEFAULT_DRAWS, DEFAULT_PAIRED_DRAWS
from ..errors import require_known
from ..lazy import lazy_import
from .core import command, fail
from .output import emit
from .params import (
    ConditionOption,
    DbOption,
    FormatOption,
    IntervalOption,
    LevelOption,
    MarginOption,
    NonInferiorityOption,
    OutOption,
    SeedOption,
    check_conditions,
    interval_rule,
    known_channels,
    open_database,
    verdict_test,
)

compare = lazy_import("molp2s_stats.stats.compare")
metrics = lazy_import("molp2s_stats.stats.metrics")
units = lazy_import("molp2s_stats.units")


@command("compare-inputs")
def compare_inputs_command(
    from_channel: Annotated[str, typer.Option("--from", help="Input X (a channel or bundle).")],
    to_channel: Annotated[str, typer.Option("--to", help="Input Y.")],
    db: DbOption = Path(DEFAULT_DB),
    model: Annotated[list[str] | None, typer.Option("--model", help="Model(s); default: every model.")] = None,
    condition: ConditionOption = "source",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_PAIRED_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    margin: MarginOption = None,
    non_inferiority: NonInferiorityOption = False,
    interval: IntervalOption = "auto",
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Paired input comparison X → Y per model over the families in both cohorts (Table 12).

    Δ's interval is the family bootstrap's percentile interval while the two inputs' answers differ on
    15 or more families' worth of tasks, the MOVER interval of the gain and loss shares at 5 or fewer,
    the two weighted in between (the method column says which; --interval asks for one:
    --interval percentile is the paper's rule, and on its counts gives its Table 12 to within one
    family's step of the bootstrap's Monte Carlo error). The verdict says Y against X in words: ahead
    or behind (the interval excludes 0), equivalent within ±--margin (the 1 − 2α interval lies inside it), or undecided;
    with --non-inferiority, non-inferior (Y not worse than X by more than the margin) in place of
    equivalent.

    Example: molp2s compare-inputs --from vibrational_bundle --to all --model sim-vibrational-expert
    """
    check_conditions(condition)
    interval_rule(interval)
    con = open_database(db, responses=True)
    channels, models = metrics.read_channels_and_models(con)
    require_known("channel", "--from", [from_channel], channels)
    require_known("channel", "--to", [to_channel], channels)
    require_known("model", "--model", model or [], models)
    outcomes = compare.read_condition_outcomes(con, channels=[from_channel, to_channel], condition=condition)
    result = compare.paired_inputs(
        outcomes,
        from_channel=from_channel,
        to_channel=to_channel,
        condition=condition,
        models=model or models,
        draws=bootstrap,
        seed=seed,
        conf_level=conf_level,
        margin=None if margin is None else units.proportion(margin),
        test=verdict_test(non_inferiority),
        interval=interval,
    )
    emit(result, fmt, out, title=f"Paired input comparison {from_channel} → {to_channel} ({condition} tasks)")


@command("transitions")
def transitions_command(
    channel: Annotated[str, typer.Option("--channel", help="Channel whose cohort tasks are compared.")],
    db: DbOption = Path(DEFAULT_DB),
    condition: ConditionOption = "source",
    model_a: Annotated[
        str | None, typer.Option("--model-a", help="First model (with --model-b); default: every pair.")
    ] = None,
    model_b: Annotated[str | None, typer.Option("--model-b", help="Second model.")] = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap replicates for the net difference.")
    ] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    margin: MarginOption = None,
    non_inferiority: NonInferiorityOption = False,
    interval: IntervalOption = "auto",
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Model-pair transitions on one channel and condition (Figure 2): both right, A only, B only, both wrong.

    The net's interval is the family bootstrap's percentile interval while the two models disagree on
    15 or more families' worth of tasks, the MOVER interval of its two discordant shares at 5 or fewer,
    the two weighted in between (the method column says which; --interval asks for one): two models
    right on every task are not reported as certainly tied.
    The p-value is McNemar's, clustered by family. The verdict says B against A in words: ahead or
    behind (net's interval excludes 0), equivalent within ±--margin (non-inferior with
    --non-inferiority), or undecided.

    Example: molp2s transitions --channel ir --condition source --model-a sim-vibrational-expert --model-b sim-generalist
    """
    check_conditions(condition)
    interval_rule(interval)
    if (model_a is None) != (model_b is None):
        fail("give both --model-a and --model-b, or neither")
    con = open_database(db, responses=True)
    channels, models = metrics.read_channels_and_models(con)
    known_channels([channel], channels)
    require_known("model", "--model-a", [model_a], models)
    require_known("model", "--model-b", [model_b], models)
    outcomes = compare.read_condition_outcomes(con, channels=[channel], condition=condition)
    if outcomes.height == 0:
        fail(f"no cohort tasks for channel {channel!r} and condition {condition!r}")
    pairs = [(model_a, model_b)] if model_a else None
    result = compare.model_transitions(
        outcomes,
        channel=channel,
        condition=condition,
        pairs=pairs,
        draws=bootstrap,
        seed=seed,
        conf_level=conf_level,
        margin=None if margin is None else units.proportion(margin),
        test=verdict_test(non_inferiority),
        interval=interval,
    )
    emit(result, fmt, out, title=f"Model-pair transitions, {channel} / {condition} (% of tasks; net in pp)")
