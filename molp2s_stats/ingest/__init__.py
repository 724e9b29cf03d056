"""Getting benchmarks and responses into the database, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..store import fetch_one, transaction
from .benchmark import BenchmarkSummary, load_benchmark, read_benchmark
from .errors import InputError, InterruptedAfterCommit
from .files import expand
from .responses import FileSummary, load_response_file, stage_file, truncation_advice

__all__ = [
    "InputError",
    "InterruptedAfterCommit",
    "LoadSummary",
    "load",
    "load_into",
    "read_benchmark",
    "read_task_map",
    "stage_file",
    "truncation_advice",
]


@dataclass(frozen=True)
class LoadSummary:
    benchmark: BenchmarkSummary | None
    files: list[FileSummary]


def load(
    con: duckdb.DuckDBPyConnection,
    *,
    benchmark: str | Path | None = None,
    responses: list[str | Path] = (),
    fmt: str | None = None,
    model: str | None = None,
    task_ids: dict[str, str] | None = None,
) -> LoadSummary:
    """Load a benchmark folder and response files (or folders of them) in one transaction.

    Any bad file rolls the whole load back, so the database is left as it was.
    ``fmt``, ``model`` and ``task_ids`` apply to every response file (see ``stage_file``).
    """
    responses = expand([Path(p) for p in responses])
    with transaction(con):
        summary = load_benchmark(con, benchmark) if benchmark is not None else None
        if responses and fetch_one(con, "SELECT count(*) FROM benchmark")[0] == 0:
            raise InputError(
                str(responses[0]),
                "no benchmark in the database yet; pass {benchmark}",
                arguments={"benchmark": "the benchmark folder"},
            )
        files = [load_response_file(con, p, fmt=fmt, model=model, task_ids=task_ids) for p in responses]
    return LoadSummary(summary, files)


def load_into(
    db: str | Path,
    *,
    wait: float = 0.0,
    benchmark: str | Path | None = None,
    responses: list[str | Path] = (),
    fmt: str | None = None,
    model: str | None = None,
    task_ids: dict[str, str] | None = None,
) -> LoadSummary:
    """Load into the database file ``db`` (``load``'s arguments), all or nothing, the file included.

    A database file the load created is removed if the load fails or is interrupted (with its
    WAL); one that was there is left as it was, the load's transaction rolled back. ``wait``
    is how long to wait for another process writing the file (``store.connect``).

    Raises ``InputError`` for bad input, ``StoreError`` or ``duckdb.Error`` for a store that
    fails (a full disk), ``KeyboardInterrupt`` for Ctrl-C (also as DuckDB reports it from inside
    a query), and ``InterruptedAfterCommit`` for a Ctrl-C that came after the commit: that load
    is in the database whole.
    """
    from ..store import connect

    existed = Path(db).exists()
    try:
        con = connect(db, wait=wait)
        loads_before = _loads(con)
    except (KeyboardInterrupt, RuntimeError) as exc:  # while the schema was being made: nothing is loaded yet
        _remove_new_database(db, existed)
        if _interrupted(exc):
            raise KeyboardInterrupt from None
        raise
    try:
        summary = load(con, benchmark=benchmark, responses=responses, fmt=fmt, model=model, task_ids=task_ids)
    except (InputError, KeyboardInterrupt, duckdb.Error, RuntimeError) as exc:
        interrupted = _interrupted(exc)
        if isinstance(exc, RuntimeError) and not isinstance(exc, duckdb.Error) and not interrupted:
            raise  # a bug, with its traceback
        # an interrupt may land just after the load's COMMIT: what the database holds says which it was
        if interrupted and _loads(con) != loads_before:
            con.close()
            raise InterruptedAfterCommit from None
        try:  # otherwise the load's transaction has been rolled back
            con.close()
        except duckdb.Error:  # a store that failed (a full disk) may fail to close too: the file goes below
            pass
        _remove_new_database(db, existed)
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    con.close()
    return summary


def read_task_map(path: str | Path) -> dict[str, str]:
    """Inspect sample ids to task ids, from a CSV with columns ``sample_id`` and ``task_id``."""
    import polars as pl

    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file")
    mapping = pl.read_csv(path, infer_schema=False)
    if {"sample_id", "task_id"} - set(mapping.columns):
        raise InputError(path, "needs columns sample_id and task_id")
    return dict(mapping.select("sample_id", "task_id").iter_rows())


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, also as DuckDB reports it from inside a query ("Query interrupted", or a scan of a Python
    object that failed with KeyboardInterrupt)."""
    return isinstance(exc, KeyboardInterrupt) or any(
        sign in str(exc) for sign in ("Query interrupted", "KeyboardInterrupt")
    )


def _remove_new_database(db: str | Path, existed: bool) -> None:
    """Leave no half-made database behind: the file (and its WAL) a failed load created, not one it found."""
    if not existed:
        for leftover in (Path(db), Path(f"{db}.wal")):
            leftover.unlink(missing_ok=True)


def _loads(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """What the database records of its loads (benchmarks, response files): how a commit shows."""
    try:
        return tuple(
            con.execute("SELECT (SELECT count(*) FROM benchmark), (SELECT count(*) FROM response_files)").fetchall()[0]
        )
    except duckdb.Error:
        return (-1, -1)
