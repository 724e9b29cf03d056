"""The loader's standard staged frame: what every response format is read into first."""

from __future__ import annotations

import polars as pl

# ``_where`` and ``_line`` say where a row came from (for errors and for the stored line);
# ``_failed`` marks a harness or batch request that failed (it loads as invalid, request_failed)
STANDARD_SCHEMA = {
    "_where": pl.String, "_line": pl.Int64, "model": pl.String, "task_id": pl.String,
    "sample": pl.Int64, "attempt": pl.Int64, "response": pl.String, "choice": pl.String,
    "metadata": pl.String, "_failed": pl.String,
}


def rows_frame(rows: list[dict]) -> pl.DataFrame:
    """Staged rows (dicts) as the standard frame; ``_failed`` is optional per row."""
    return pl.DataFrame([{"_failed": None, **row} for row in rows], schema=STANDARD_SCHEMA, orient="row")
