"""Getting benchmarks and responses into the database, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..store import transaction
from .benchmark import BenchmarkSummary, load_benchmark, read_benchmark
from ..store import fetch_one
from .errors import InputError
from .responses import FileSummary, load_response_file, stage_file

__all__ = ["InputError", "LoadSummary", "load", "read_benchmark", "stage_file"]


@dataclass(frozen=True)
class LoadSummary:
    benchmark: BenchmarkSummary | None
    files: list[FileSummary]


def load(con: duckdb.DuckDBPyConnection, *, benchmark: str | Path | None = None,
         responses: list[str | Path] = ()) -> LoadSummary:
    """Load a benchmark folder and response files in one transaction.

    Any bad file rolls the whole load back, so the database is left as it was.
    """
    with transaction(con):
        summary = load_benchmark(con, benchmark) if benchmark is not None else None
        if responses and fetch_one(con, "SELECT count(*) FROM benchmark")[0] == 0:
            raise InputError(str(responses[0]), "no benchmark in the database yet; pass --benchmark DIR")
        files = [load_response_file(con, p) for p in responses]
    return LoadSummary(summary, files)
