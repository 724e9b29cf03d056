"""The DuckDB database file: schema, views, transactions and read-only access.

The database holds the benchmark tables under the names of the benchmark's files, every loaded
response row in ``responses``, and the views from ``sql/`` (staging, then marts),
so a user can open the file in the DuckDB CLI and query ``cohort`` or
``family_outcomes`` by name.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from .defaults import DB_ENV_VAR, DEFAULT_DB
from .lazy import lazy_import

pl = lazy_import("polars")

MEMORY_ENV_VAR = "MOLP2S_MEMORY_LIMIT"  # e.g. 8GB: DuckDB's memory cap
# DuckDB's own default is 80% of the machine's memory, and the metrics' aggregation over
# every response (one group per model × task × sample) takes what it is given: 10.3 GiB
# peak at 100 M rows. With 3 GB it spills to disk instead: 2.3 GiB peak at 40 M rows for
# 18% more time (benchmarks/bench_load_and_metrics.py, 2026-12-01).
DEFAULT_MEMORY_LIMIT = "3GB"

# A wheel carries sql/ inside the package; a checkout (and an editable install) has it
# at the top of the repository.
_PACKAGE = Path(__file__).resolve().parent
SQL_DIR = _PACKAGE / "sql" if (_PACKAGE / "sql").is_dir() else _PACKAGE.parent / "sql"

# Views in dependency order: staging reads tables, marts read staging and each other.
VIEW_FILES = (
    "staging/stg_channels.sql",
    "staging/stg_pair_distances.sql",
    "staging/stg_responses.sql",
    "staging/stg_channel_components.sql",
    "staging/stg_candidates.sql",
    "staging/stg_families.sql",
    "staging/stg_tasks.sql",
    "staging/stg_models.sql",
    "staging/stg_model_names.sql",
    "staging/stg_terminal_responses.sql",
    "marts/family_candidates.sql",
    "marts/benchmark_tasks.sql",
    "marts/channel_tasks.sql",
    "marts/pair_separation.sql",
    "marts/input_validation.sql",
    "marts/task_outcomes.sql",
    "marts/family_coverage.sql",
    "marts/model_coverage.sql",
    "marts/coverage.sql",
    "marts/cohort.sql",
    "marts/cohort_summary.sql",
    "marts/cohort_tasks.sql",
    "marts/binomial_cells.sql",
    "marts/family_outcomes.sql",
    "marts/separability.sql",
    "marts/benchmark_summary.sql",
    "marts/invalid_rates.sql",
)


class StoreError(RuntimeError):
    """The database cannot be opened or does not hold what a command needs."""


# What DuckDB says when a database file cannot be used, and what a user can do about it. A failure of
# the store is one line naming the file, never a traceback (the CLI's command wrapper asks this).
FAILURES = (
    (
        ("checksum", "corrupt", "could not read enough bytes"),
        "the database file is damaged or truncated ({error}); rebuild it: `molp2s load` the benchmark "
        'and the response files again into a new file (`molp2s sql "SELECT path, sha256 FROM '
        'response_files"` on a copy that still opens lists them)',
    ),
    (
        ("no space left", "file too large", "disk is full", "could not write"),
        "the disk is full or the file is over its size limit ({error}); nothing was written: free space and run the "
        "same command again",
    ),
    (
        ("permission denied",),
        "permission denied ({error}): the file or its folder is not writable by you; use "
        "a file you can write, or a read-only command",
    ),
    (("not a valid duckdb database",), "not a DuckDB database file ({error})"),
    (
        ("newer version", "version number", "storage version"),
        "the database was written by another DuckDB version ({error}); rebuild it with this version "
        "(`molp2s load` the benchmark and responses into a new file)",
    ),
)


def explain_failure(error: BaseException, path: object = None) -> str | None:
    """One line for a DuckDB failure a user can act on (a damaged file, a full disk …), or None."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    lowered = str(error).lower()
    for needles, message in FAILURES:
        if any(needle in lowered for needle in needles):
            where = f"{path}: " if path is not None else ""
            return where + message.format(error=text)
    return None


def _db_option(path: object) -> str:
    """`` --db PATH`` as a command names the database, or nothing for the default one."""
    return "" if str(path) == DEFAULT_DB else f" --db {path}"


def missing_database(path: object, *, instead: str | None = None) -> str:
    """One line for a database file that is not there: the ``molp2s load`` that builds it from the
    package's default data, then ``instead`` (what else to type), by default the default database
    where that one is here."""
    from .defaults import default_data_options

    line = (
        f"{path}: no such database; build it from the default data with "
        f"`molp2s load {default_data_options()}{_db_option(path)}`"
    )
    if instead:
        line += f", or {instead}"
    elif str(path) != DEFAULT_DB and Path(DEFAULT_DB).exists():
        leave = "unset MOLP2S_DB" if os.environ.get(DB_ENV_VAR) == str(path) else "leave out --db"
        line += f", or {leave} to use the default {DEFAULT_DB}"
    return line


def _read_sql(name: str) -> str:
    return (SQL_DIR / name).read_text(encoding="utf-8")


def initialise(con: duckdb.DuckDBPyConnection) -> None:
    """Create the tables (if absent) and (re)create every view, in one transaction.

    One transaction, so that a process killed part-way leaves the schema whole or absent,
    never tables without their views (which a reader would take for an old version's file).
    """
    with transaction(con):
        con.execute(_read_sql("schema.sql"))
        for name in VIEW_FILES:
            con.execute(_read_sql(name))


def connect(path: str | os.PathLike[str], *, read_only: bool = False, wait: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open the database file; a writable connection also makes sure the schema exists.

    A read-only connection refuses every write, which is what ``molp2s sql`` and the
    reports use. DuckDB lets one process write a file at a time: with ``wait`` > 0 a
    connection that finds the file locked retries for that many seconds (two loads
    started together then run one after the other) before it gives up, saying why.
    """
    path = str(path)
    if read_only and not Path(path).exists():
        raise StoreError(missing_database(path))
    deadline = time.monotonic() + wait
    while True:
        try:
            con = duckdb.connect(path, read_only=read_only)
            break
        except duckdb.IOException as exc:
            locked = "lock" in str(exc).lower()
            if locked and time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            if locked:
                raise StoreError(
                    f"{path}: another process has the database open (waited {wait:g} s; try again when it has finished)"
                ) from exc
            raise StoreError(explain_failure(exc, path) or f"{path}: cannot open the database ({exc})") from exc
        except duckdb.Error as exc:  # a damaged file can fail to open with other errors than IOException
            raise StoreError(explain_failure(exc, path) or f"{path}: cannot open the database ({exc})") from exc
    # Under the cap, large joins and aggregations spill to disk beside the database.
    limit = os.environ.get(MEMORY_ENV_VAR, "").strip() or DEFAULT_MEMORY_LIMIT
    if not limit[0].isdigit():
        raise StoreError(f"{MEMORY_ENV_VAR}={limit!r}: expected a size such as 4GB")
    con.execute(f"SET memory_limit = '{limit}'")
    if not read_only:
        initialise(con)
    else:
        _require_current(con, path)
    return con


def _missing_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Views of this version and columns its schema adds to older tables that the database lacks."""
    views = {row[0] for row in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    columns = set(con.execute("SELECT table_name, column_name FROM duckdb_columns()").fetchall())
    wanted_views = [Path(name).stem for name in VIEW_FILES]
    added = re.findall(r"ALTER TABLE (\w+) ADD COLUMN IF NOT EXISTS (\w+)", _read_sql("schema.sql"))
    return [v for v in wanted_views if v not in views] + [f"{t}.{c}" for t, c in added if (t, c) not in columns]


def _require_current(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """A read-only connection cannot update the views; refuse a database an earlier version wrote,
    saying how to update it, rather than fail later on a missing view or column."""
    try:
        loaded = con.execute("SELECT path FROM benchmark").fetchall()
    except duckdb.CatalogException:  # not a database of ours (or empty): require_benchmark says so
        return
    missing = _missing_objects(con)
    if missing:
        source = loaded[0][0] if loaded else "DIR"
        raise StoreError(
            f"{path}: written by an earlier version of molp2s-stats (it lacks {', '.join(missing[:3])}"
            f"{', …' if len(missing) > 3 else ''}); update it with "
            f"`molp2s load --db {path} --benchmark {source}`"
        )


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All-or-nothing: commit when the block finishes, roll back on any exception."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        try:
            con.execute("ROLLBACK")
        except duckdb.Error:  # a connection DuckDB closed (interrupted inside a query) holds no transaction
            pass  # to roll back: uncommitted work is gone with it; the first error is the one to report
        raise
    con.execute("COMMIT")


def fetch_one(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None) -> tuple | None:
    """The first row of a query, reading the result to its end.

    DuckDB 2 refuses further work on a connection whose last result was not read
    to the end, so ``execute(...).fetchone()`` must not be used.
    """
    rows = con.execute(query, params or []).fetchall()
    return rows[0] if rows else None


def require_benchmark(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Raise StoreError unless a benchmark has been loaded into the database."""
    try:
        loaded = fetch_one(con, "SELECT count(*) FROM benchmark")[0]
    except duckdb.CatalogException:
        loaded = 0
    if not loaded:
        raise StoreError(f"{path}: no benchmark loaded; run `molp2s load --benchmark DIR{_db_option(path)}`")


def require_responses(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Raise StoreError unless responses have been loaded (a benchmark alone has nothing to score),
    naming the ``molp2s load`` to type: the default responses when the default benchmark is loaded."""
    if fetch_one(con, "SELECT count(*) FROM responses")[0]:
        return
    from .defaults import DEFAULT_BENCHMARK, DEFAULT_RESPONSES, shown_path

    loaded = [Path(row[0]) for row in con.execute("SELECT path FROM benchmark").fetchall()]
    default = any(p.resolve() == DEFAULT_BENCHMARK.resolve() for p in loaded if p.exists())
    typed = shown_path(DEFAULT_RESPONSES)
    files = "FILE ..." if not default else ("--example" if Path(typed).is_absolute() else f"--responses {typed}")
    raise StoreError(
        f"{path}: a benchmark but no responses loaded; load them with `molp2s load {files}{_db_option(path)}`"
    )


def read_mart(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    """One of the views of ``sql/marts`` (``cohort_summary``, ``separability`` …), whole."""
    marts = [Path(file).stem for file in VIEW_FILES if file.startswith("marts/")]
    if name not in marts:
        raise ValueError(f"no mart {name!r}; the marts: {', '.join(marts)}")
    return con.sql(f"SELECT * FROM {name}").pl()


class QueryTimeout(StoreError):
    """A query stopped because it ran longer than it was given."""


def read_only_query(path: str | os.PathLike[str], query: str, *, timeout: float = 0.0) -> pl.DataFrame | None:
    """The rows of ``query`` against the database file, run so that it cannot write; None for a
    statement that returns no rows.

    The file is opened read-only, and files, other databases and extensions are out of reach
    (no COPY TO, ATTACH, INSTALL or LOAD), in a locked configuration the query cannot undo.
    With ``timeout`` > 0 the query is stopped after that many seconds (``QueryTimeout``);
    DuckDB's own error says what else is wrong (``duckdb.Error``), and a write is refused as
    one (``duckdb.InvalidInputException`` naming the read-only file).
    """
    import threading

    con = connect(path, read_only=True)
    # No file system, no extensions, and a locked configuration so the query cannot undo it.
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
    timer = threading.Timer(timeout, con.interrupt) if timeout > 0 else None
    if timer:
        timer.start()
    try:
        relation = con.sql(query)
        return relation.pl() if relation is not None else None
    except duckdb.InterruptException as exc:
        raise QueryTimeout(f"the query ran longer than {timeout:g} s and was stopped") from exc
    finally:
        if timer:
            timer.cancel()
        con.close()
