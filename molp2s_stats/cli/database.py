"""The database itself: ``check``, ``sql``, ``demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_BENCHMARK, DEFAULT_DB, DEFAULT_DRAWS, DEFAULT_RESPONSES
from ..lazy import lazy_import
from .core import command, fail
from .output import Format, emit, leaderboard, resolve_format
from .params import DbOption, FormatOption, OutOption, SeedOption

pl = lazy_import("polars")
duckdb = lazy_import("duckdb")
metrics = lazy_import("molp2s_stats.stats.metrics")
store = lazy_import("molp2s_stats.store")


@command("check")
def check_command(
    db: DbOption = Path(DEFAULT_DB),
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Can this database be trusted? Reads every table through (DuckDB checks each block as it reads it),
    compares each response file's answers with the rows it had, and looks for the files on disk (SHA-256 as
    recorded at load). Exit 1 if it cannot be trusted, with the `molp2s load` that rebuilds it.

    Example: molp2s check
    """
    from .. import check as checking

    con = store.connect(db, read_only=True)
    result = checking.check(con)
    con.close()
    emit(result, fmt, out, title=f"Database check ({db})")
    if not checking.trusted(result):
        benchmark, files = checking.rebuild_sources(result)
        how = (
            " ".join(
                ["molp2s load"]
                + ([f"--benchmark {benchmark}"] if benchmark else [])
                + ["--responses", *files, f"--db {Path(db).with_suffix('.rebuilt.duckdb')}"]
            )
            if files
            else "molp2s load --benchmark BENCHMARK --responses FILES --db NEW.duckdb (its file list cannot be read)"
        )
        typer.secho(f"{db}: cannot be trusted (see the rows marked failed); rebuild it: {how}", err=True, fg="red")
        raise typer.Exit(1)
    gone = result.filter((pl.col("check").is_in(["file", "benchmark"])) & (pl.col("status") != "ok")).height
    typer.echo(
        f"{db}: can be trusted"
        + (
            f"; {gone} of the files it was loaded from are missing or changed: keep "
            "copies, they are what it can be rebuilt from"
            if gone
            else ""
        ),
        err=True,
    )


@command("sql")
def sql_command(
    query: Annotated[str, typer.Argument(help="SQL to run (read-only).")],
    db: DbOption = Path(DEFAULT_DB),
    timeout: Annotated[
        float, typer.Option("--timeout", help="Stop the query after this many seconds (0: never).")
    ] = 60.0,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Run a read-only query against the database's tables and views.

    Nothing can be written: the file is opened read-only, and files, other databases
    and extensions are out of reach (no COPY TO, ATTACH, INSTALL or LOAD).

    Example: molp2s sql "SELECT channel, cohort FROM cohort_summary" --timeout 10
    """
    try:
        result = store.read_only_query(db, query, timeout=timeout)
    except store.QueryTimeout:
        fail(f"the query ran longer than --timeout {timeout:g} s and was stopped")
    except duckdb.InvalidInputException as exc:
        if "read-only" in str(exc):
            fail("the database is opened read-only; `molp2s sql` cannot write (use `molp2s load`)")
        fail(str(exc))
    except duckdb.Error as exc:
        fail(str(exc))
    if result is None:
        fail("the statement returned no rows to show")
    emit(result, fmt, out)


@command("demo")
def demo_command(
    db: DbOption = Path("molp2s-demo.duckdb"),
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
    fmt: FormatOption = None,
    out: OutOption = None,
) -> None:
    """Load the package's default data and print the PGR leaderboard.

    Example: molp2s demo
    """
    con = store.connect(db)
    from ..ingest.default_data import load_default_data

    load_default_data(con)
    result = metrics.metrics_from_db(con, metrics=("pgr", "random_baseline"), draws=bootstrap, seed=seed)
    fmt = resolve_format(fmt, out)
    if fmt is not Format.table:  # machine-readable output: the frame alone on stdout
        emit(result, fmt, out)
        return
    typer.echo(f"database: {db} (benchmark {DEFAULT_BENCHMARK}, responses {DEFAULT_RESPONSES})")
    emit(store.read_mart(con, "cohort_summary"), Format.table, None, title="Cohort per channel")
    wide = leaderboard(result, "pgr")
    # one table per kind of channel, as the paper groups them: fifteen channel columns
    # side by side would not fit a terminal
    for group, channels in metrics.read_channel_groups(con):
        shown = [c for c in channels if c in wide.columns]
        if shown:
            emit(
                wide.select("model", *shown),
                fmt,
                out,
                title=f"PGR leaderboard, {group.replace('_', ' ')} channels, % "
                f"[95% family-bootstrap interval, {bootstrap} draws, seed {seed}]",
            )
