"""The ``molp2s`` command line: parse arguments, call the package, print. Nothing else."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import duckdb
import polars as pl
import typer

from . import compare, metrics, store
from .ingest import InputError, load
from .output import Format, emit, leaderboard

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "data" / "default"

app = typer.Typer(
    help="MolP2SBench statistics: load responses, build cohorts, report metrics with family-level uncertainty.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[Path, typer.Option("--db", help="DuckDB database file (env MOLP2S_DB).",
                                        envvar=store.DB_ENV_VAR, show_default=True)]
FormatOption = Annotated[Format, typer.Option("--format", help="table | csv | json | parquet.")]
OutOption = Annotated[Optional[Path], typer.Option("--out", help="Write to this file instead of stdout.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap; recorded in the output.")]
LevelOption = Annotated[float, typer.Option("--conf-level", help="Interval coverage, e.g. 0.95.")]


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _open(db: Path, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    try:
        con = store.connect(db, read_only=read_only)
        store.require_benchmark(con, str(db))
    except store.StoreError as exc:
        _fail(str(exc))
    return con


@app.command("load")
def load_command(
    responses: Annotated[Optional[list[Path]], typer.Option("--responses", help="Response files (.jsonl, .csv, .parquet).")] = None,
    benchmark: Annotated[Optional[Path], typer.Option("--benchmark", help="Benchmark folder (families, candidates, properties, tasks[, channels]).")] = None,
    db: DbOption = Path(store.DEFAULT_DB),
) -> None:
    """Load a benchmark and response files into the database, all or nothing.

    Example: molp2s load --benchmark data/default --responses data/default/responses/sim-alpha.jsonl --db runs.duckdb
    """
    if benchmark is None and not responses:
        _fail("nothing to load: give --benchmark DIR and/or --responses FILE ...")
    try:
        con = store.connect(db)
    except store.StoreError as exc:
        _fail(str(exc))
    try:
        summary = load(con, benchmark=benchmark, responses=list(responses or []))
    except InputError as exc:
        _fail(f"{exc}\nnothing was loaded; the database is unchanged")
    if summary.benchmark is not None:
        b = summary.benchmark
        state = "already loaded" if b.already_loaded else "loaded"
        typer.echo(f"benchmark {b.path}: {state} ({b.families} families, {b.tasks} tasks, "
                   f"{b.channels} channels, {b.pair_distances} pair distances)")
    for f in summary.files:
        if f.already_loaded:
            typer.echo(f"{f.path}: already loaded, nothing added")
        else:
            typer.echo(f"{f.path}: {f.rows} rows ({f.parsed} parsed from text, {f.invalid} invalid)")


@app.command("metrics")
def metrics_command(
    db: DbOption = Path(store.DEFAULT_DB),
    metric: Annotated[Optional[list[str]], typer.Option("--metric", help=f"One of: {', '.join(metrics.METRICS)}; repeat for several. Default: all.")] = None,
    channel: Annotated[Optional[list[str]], typer.Option("--channel", help="Restrict to these channels.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates (0: point estimates only).")] = metrics.DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Every SPEC metric per model × channel with family-bootstrap intervals.

    Example: molp2s metrics --metric pgr --metric cfr --bootstrap 2000 --seed 1 --format csv --out metrics.csv
    """
    con = _open(db)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    if channel:
        unknown = [c for c in channel if c not in channels]
        if unknown:
            _fail(f"unknown channel(s) {unknown}; known: {', '.join(channels)}")
        channels = [c for c in channels if c in channel]
    try:
        result = metrics.compute_metrics(outcomes, channels=channels, models=models,
                                         metrics=tuple(metric) if metric else metrics.METRICS,
                                         draws=bootstrap, seed=seed, conf_level=conf_level)
    except ValueError as exc:
        _fail(str(exc))
    emit(result, fmt, out, title="Metrics (rates in %, differences in pp)")


@app.command("compare-inputs")
def compare_inputs_command(
    from_channel: Annotated[str, typer.Option("--from", help="Input X (a channel or bundle).")],
    to_channel: Annotated[str, typer.Option("--to", help="Input Y.")],
    db: DbOption = Path(store.DEFAULT_DB),
    model: Annotated[Optional[list[str]], typer.Option("--model", help="Model(s); default: every model.")] = None,
    condition: Annotated[str, typer.Option("--condition", help="none | source | shuffled | cf.")] = "source",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = compare.DEFAULT_PAIRED_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Paired input comparison X → Y per model over the families in both cohorts (Table 12).

    Example: molp2s compare-inputs --from vibrational_bundle --to all --model sim-alpha
    """
    if condition not in compare.CONDITION_COLUMN:
        _fail(f"--condition must be one of {', '.join(compare.CONDITION_COLUMN)}")
    con = _open(db)
    outcomes, channels, models = metrics.read_family_outcomes(con)
    for name in (from_channel, to_channel):
        if name not in channels:
            _fail(f"unknown channel {name!r}; known: {', '.join(channels)}")
    for name in model or []:
        if name not in models:
            _fail(f"unknown model {name!r}; known: {', '.join(models)}")
    result = compare.paired_inputs(outcomes, from_channel=from_channel, to_channel=to_channel,
                                   condition=condition, models=model or models, draws=bootstrap,
                                   seed=seed, conf_level=conf_level)
    emit(result, fmt, out, title=f"Paired input comparison {from_channel} → {to_channel} ({condition} tasks)")


@app.command("transitions")
def transitions_command(
    channel: Annotated[str, typer.Option("--channel", help="Channel whose cohort tasks are compared.")],
    db: DbOption = Path(store.DEFAULT_DB),
    condition: Annotated[str, typer.Option("--condition", help="none | source | shuffled | cf.")] = "source",
    model_a: Annotated[Optional[str], typer.Option("--model-a", help="First model (with --model-b); default: every pair.")] = None,
    model_b: Annotated[Optional[str], typer.Option("--model-b", help="Second model.")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for the net difference.")] = metrics.DEFAULT_DRAWS,
    seed: SeedOption = 0,
    conf_level: LevelOption = 0.95,
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Model-pair transitions on one channel and condition (Figure 2): both right, A only, B only, both wrong.

    Example: molp2s transitions --channel ir --condition source --model-a sim-alpha --model-b sim-beta
    """
    if condition not in compare.CONDITION_COLUMN:
        _fail(f"--condition must be one of {', '.join(compare.CONDITION_COLUMN)}")
    if (model_a is None) != (model_b is None):
        _fail("give both --model-a and --model-b, or neither")
    con = _open(db)
    outcomes = compare.read_task_outcomes(con, channel=channel, condition=condition)
    if outcomes.height == 0:
        _fail(f"no cohort tasks for channel {channel!r} and condition {condition!r}")
    pairs = [(model_a, model_b)] if model_a else None
    try:
        result = compare.model_transitions(outcomes, channel=channel, condition=condition, pairs=pairs,
                                           draws=bootstrap, seed=seed, conf_level=conf_level)
    except ValueError as exc:
        _fail(str(exc))
    emit(result, fmt, out, title=f"Model-pair transitions, {channel} / {condition} (% of tasks; net in pp)")


@app.command("cohort")
def cohort_command(
    db: DbOption = Path(store.DEFAULT_DB),
    dropped: Annotated[bool, typer.Option("--dropped", help="List the families left out, with the reason.")] = False,
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Cohort size per channel and the criteria behind it (Table 5).

    Example: molp2s cohort --dropped
    """
    con = _open(db)
    if dropped:
        result = con.sql(
            """SELECT c.channel, c.family_id, c.input_validated, c.complete_coverage, c.drop_reason
               FROM cohort AS c LEFT JOIN channels AS ch USING (channel)
               WHERE NOT c.in_cohort ORDER BY ch.position NULLS LAST, c.channel, c.family_id"""
        ).pl()
        emit(result, fmt, out, title="Families left out of each channel's cohort")
    else:
        emit(con.sql("SELECT * FROM cohort_summary").pl(), fmt, out, title="Cohort per channel")


@app.command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL to run (read-only).")],
    db: DbOption = Path(store.DEFAULT_DB),
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Run a read-only query against the database's tables and views.

    Example: molp2s sql "SELECT channel, cohort FROM cohort_summary"
    """
    try:
        con = store.connect(db, read_only=True)
    except store.StoreError as exc:
        _fail(str(exc))
    try:
        result = con.sql(query)
    except duckdb.InvalidInputException as exc:
        if "read-only" in str(exc):
            _fail("the database is opened read-only; `molp2s sql` cannot write (use `molp2s load`)")
        _fail(str(exc))
    except duckdb.Error as exc:
        _fail(str(exc))
    if result is None:
        _fail("the statement returned no rows to show")
    emit(result.pl(), fmt, out)


@app.command("demo")
def demo_command(
    db: DbOption = Path("molp2s-demo.duckdb"),
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = metrics.DEFAULT_DRAWS,
    seed: SeedOption = 0,
    fmt: FormatOption = Format.table,
    out: OutOption = None,
) -> None:
    """Load the package's default data and print the PGR leaderboard.

    Example: molp2s demo --db demo.duckdb
    """
    responses = sorted(p for p in (DEFAULT_DATA / "responses").iterdir() if p.suffix in (".jsonl", ".csv", ".parquet"))
    try:
        con = store.connect(db)
        load(con, benchmark=DEFAULT_DATA, responses=responses)
    except (InputError, store.StoreError) as exc:
        _fail(str(exc))
    typer.echo(f"database: {db} (default data from {DEFAULT_DATA})")
    emit(con.sql("SELECT * FROM cohort_summary").pl(), Format.table, None, title="Cohort per channel")
    result = metrics.metrics_from_db(con, metrics=("pgr", "random_baseline"), draws=bootstrap, seed=seed)
    if fmt is Format.table:
        emit(leaderboard(result, "pgr"), fmt, out,
             title=f"PGR leaderboard, % [95% family-bootstrap interval, {bootstrap} draws, seed {seed}]")
    else:
        emit(result, fmt, out)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
