"""What the commands share: their options, and one check for each kind of option value.

Every check runs before the command reads or computes anything, and says what is wrong in
one line (``UsageError``) naming the flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import CONDITIONS, DB_ENV_VAR
from ..errors import UsageError, require_known
from ..glossary import METRICS
from ..lazy import lazy_import
from .output import Format

duckdb = lazy_import("duckdb")
metrics = lazy_import("molp2s_stats.stats.metrics")
stability = lazy_import("molp2s_stats.stats.stability")
store = lazy_import("molp2s_stats.store")

DbOption = Annotated[
    Path, typer.Option("--db", help="DuckDB database file (env MOLP2S_DB).", envvar=DB_ENV_VAR, show_default=True)
]
FormatOption = Annotated[
    Format | None,
    typer.Option(
        "--format",
        help="table | csv | json | parquet; default: from the suffix of --out (.csv, .json, .parquet), else table.",
    ),
]
OutOption = Annotated[Path | None, typer.Option("--out", help="Write to this file instead of stdout.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap; recorded in the output.")]
# one flag for one idea: the channel(s) a command covers; --channels is kept for scripts that use it
ChannelsOption = Annotated[
    list[str] | None,
    typer.Option("--channel", "--channels", help="Channel(s), repeat for several; default: every channel."),
]
LevelOption = Annotated[float, typer.Option("--conf-level", help="Interval coverage, e.g. 0.95.")]
ExcludeOption = Annotated[
    Path | None,
    typer.Option(
        "--exclude",
        help="Leave these families out of the cohort: `molp2s audit`'s output (family_id, channel), any "
        "table with a family_id column, or one family id a line.",
        show_default=False,
    ),
]
MetricsOption = Annotated[
    list[str] | None, typer.Option("--metric", help=f"One of: {', '.join(METRICS)}; repeat for several. Default: all.")
]
ConditionOption = Annotated[str, typer.Option("--condition", help="none | source | shuffled | cf.")]
MarginOption = Annotated[
    float | None,
    typer.Option(
        "--margin",
        help="Equivalence margin, pp (default 2): a difference whose 1 − 2α interval lies within ±margin is "
        "called equivalent (the verdict column).",
        show_default=False,
    ),
]
IntervalOption = Annotated[
    str,
    typer.Option(
        "--interval",
        help="Which interval: auto (the family bootstrap's percentile interval in the middle of the range, a "
        "score or MOVER interval near 0% and 100%), percentile (the percentile interval everywhere, as the "
        "paper's tables were computed) or score (the score or MOVER interval everywhere). The method column "
        "says which a row carries.",
    ),
]


def interval_rule(interval: str) -> str:
    """--interval's value, checked before any work."""
    from ..stats.intervals import RULES

    require_known("interval", "--interval", [interval], list(RULES))
    return interval


NonInferiorityOption = Annotated[
    bool,
    typer.Option(
        "--non-inferiority",
        help="Where no difference is shown, test non-inferiority instead of equivalence: the verdict is "
        "non-inferior where the second side's 1 − 2α interval lies above −margin (not worse by more than the "
        "margin).",
    ),
]


def verdict_test(non_inferiority: bool) -> str:
    """The verdict's test for --non-inferiority: non_inferiority, else equivalence."""
    return "non_inferiority" if non_inferiority else "equivalence"


# ranks and stability: the one metric a ranking is by (--score, the older name, still works)
RankMetricOption = Annotated[
    str, typer.Option("--metric", "--score", help="The metric models are ranked by: pgr, reliance_margin, cfr, …")
]


# --- checks: one per kind of value --------------------------------------------------------------


def check_conditions(conditions: str | list[str] | None) -> None:
    """Refuse a ``--condition`` that is not one of the benchmark's conditions (one value or several)."""
    given = [conditions] if isinstance(conditions, str) else list(conditions or [])
    for name in given:
        if name not in CONDITIONS:
            raise UsageError(f"--condition must be one of {', '.join(CONDITIONS)}, got {name!r}")


def chosen_metrics(requested: list[str] | None, *, option: str = "--metric") -> tuple[str, ...]:
    """The metrics asked for (every metric by default), refusing unknown ones by the flag."""
    if not requested:
        return tuple(METRICS)
    require_known("metric", option, list(requested), list(METRICS))
    return tuple(requested)


def known_channels(requested: list[str] | None, channels: list[str], *, option: str = "--channel") -> list[str]:
    """The requested channels (all by default), refusing unknown ones."""
    if not requested:
        return channels
    require_known("channel", option, requested, channels)
    return [c for c in channels if c in requested]


# --- the database and what commands read from it -------------------------------------------------


def open_database(
    db: Path, *, read_only: bool = True, responses: bool = False, instead: str | None = None
) -> duckdb.DuckDBPyConnection:
    """The database, holding a benchmark (and responses, where the command scores them); a StoreError
    prints as one line (``core.command``). A database that is not there is never created here: the
    error says how to build it, or ``instead`` what else to type."""
    if not Path(db).exists():
        raise store.StoreError(store.missing_database(db, instead=instead))
    con = store.connect(db, read_only=read_only)
    store.require_benchmark(con, str(db))
    if responses:
        store.require_responses(con, str(db))
    return con


def cohort_outcomes(con, exclude: Path | None):
    """The cohort's family outcomes, channels and models; without the families ``exclude`` lists (said on stderr)."""
    outcomes, channels, models = metrics.read_family_outcomes(con)
    if exclude is None:
        return outcomes, channels, models
    from ..stats import audit

    exclusions = audit.read_exclusions(exclude, metrics.read_family_ids(con))
    kept = audit.excluding(outcomes, exclusions)
    cells = (
        outcomes.select("family_id", "channel").unique().height - kept.select("family_id", "channel").unique().height
    )
    typer.echo(
        f"left out of the cohort: {exclusions['family_id'].n_unique()} families listed in {exclude} "
        f"({cells} family × channel cells)",
        err=True,
    )
    return kept, channels, models


def ranked_models(con, models: list[str]) -> list[str]:
    """The complete models, for a ranking; the partial ones left out are named on stderr."""
    ranked, note = stability.ranked_models(models, metrics.read_partial_models(con))
    if note:
        typer.echo(note, err=True)
    return ranked
