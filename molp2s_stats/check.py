"""Can this database be trusted? Its own blocks read back, and what it recorded of the files it was loaded from.

One row per check (``check, subject, status, detail``; status ``ok``, ``changed``,
``missing`` or ``failed``):

- ``readable``: every table read through, every column (DuckDB verifies each block's
  checksum as it reads it, so a damaged block fails here rather than in a later query);
- ``rows``: each response file's answers in the database against the rows it had when
  loaded;
- ``file``: each response file still on disk, and whether its SHA-256 is the one recorded
  (a changed file was edited after loading: the database holds the old answers);
- ``benchmark``: the benchmark folder the database was built from, still there.

A database whose tables all read and whose rows match its record can be trusted; the
files are what it can be rebuilt from (``rebuild_sources``).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

CHECK_SCHEMA = {"check": pl.String, "subject": pl.String, "status": pl.String, "detail": pl.String}
TABLES = (
    "channels",
    "models",
    "families",
    "candidates",
    "properties",
    "tasks",
    "pair_distances",
    "benchmark",
    "response_files",
    "responses",
)


def check(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    rows = []
    present = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    for table in (t for t in TABLES if t in present):
        try:
            (count,) = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0]
            # hashing every column of every row makes DuckDB read, and checksum, every block of the table
            con.execute(f"SELECT sum(hash(COLUMNS(*))) FROM {table}").fetchall()
            rows.append(("readable", table, "ok", f"{count:,} rows read"))
        except duckdb.Error as exc:
            rows.append(("readable", table, "failed", str(exc).splitlines()[0]))
    if "response_files" in present and not any(r[2] == "failed" for r in rows):
        recorded = con.execute("""
            SELECT f.file_id, f.path, f.sha256, f.rows, count(r.file_id) AS stored
            FROM response_files AS f LEFT JOIN responses AS r USING (file_id)
            GROUP BY ALL ORDER BY f.file_id""").fetchall()
        for _, path, sha256, expected, stored in recorded:
            status = "ok" if stored == expected else "failed"
            rows.append(("rows", path, status, f"{stored:,} answers stored of the {expected:,} rows loaded"))
            rows.append(("file", path, *_file_status(Path(path), sha256)))
    if "benchmark" in present:
        for (path,) in con.execute("SELECT path FROM benchmark").fetchall():
            there = Path(path).is_dir()
            rows.append(
                (
                    "benchmark",
                    path,
                    "ok" if there else "missing",
                    "the folder is there" if there else "the folder is gone: keep a copy to rebuild from",
                )
            )
    return pl.DataFrame(rows, schema=CHECK_SCHEMA, orient="row")


def _file_status(path: Path, sha256: str) -> tuple[str, str]:
    from .ingest.errors import InputError
    from .ingest.files import file_sha256

    if not path.exists():
        return "missing", "not on disk any more: the database holds the only copy of its answers"
    try:
        now = file_sha256(path)
    except InputError as exc:
        return "failed", str(exc)
    if now != sha256:
        return "changed", "its SHA-256 differs from the one recorded at load: it was edited since"
    return "ok", "on disk, as loaded (SHA-256 matches)"


def trusted(result: pl.DataFrame) -> bool:
    """The database's own data are sound: every table reads and every file's answers are all there."""
    return not result.filter(pl.col("check").is_in(["readable", "rows"]) & (pl.col("status") != "ok")).height


def rebuild_sources(result: pl.DataFrame) -> tuple[str | None, list[str]]:
    """What the database can be rebuilt from, as it recorded them: ``(benchmark folder or None,
    response files)``. The files must still exist (the ``file`` rows say whether they do)."""
    benchmark = result.filter(pl.col("check") == "benchmark")["subject"].to_list()
    files = result.filter(pl.col("check") == "file")["subject"].to_list()
    return (benchmark[-1] if benchmark else None), files
