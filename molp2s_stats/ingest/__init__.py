"""Getting benchmarks and responses into the database, all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ..store import transaction
from .benchmark import BenchmarkSummary, load_benchmark, read_benchmark
from ..store import fetch_one
from .errors import InputError
from .files import expand
from .responses import FileSummary, load_response_file, stage_file, truncation_advice

__all__ = ["InputError", "LoadSummary", "load", "read_benchmark", "stage_file", "truncation_advice"]


@dataclass(frozen=True)
class LoadSummary:
    benchmark: BenchmarkSummary | None
    files: list[FileSummary]


def load(con: duckdb.DuckDBPyConnection, *, benchmark: str | Path | None = None,
         responses: list[str | Path] = (), fmt: str | None = None, model: str | None = None,
         task_ids: dict[str, str] | None = None) -> LoadSummary:
    """Load a benchmark folder and response files (or folders of them) in one transaction.

    Any bad file rolls the whole load back, so the database is left as it was.
    ``fmt``, ``model`` and ``task_ids`` apply to every response file (see ``stage_file``).
    """
    responses = expand([Path(p) for p in responses])
    with transaction(con):
        summary = load_benchmark(con, benchmark) if benchmark is not None else None
        if responses and fetch_one(con, "SELECT count(*) FROM benchmark")[0] == 0:
            raise InputError(str(responses[0]), "no benchmark in the database yet; pass --benchmark DIR")
        files = [load_response_file(con, p, fmt=fmt, model=model, task_ids=task_ids) for p in responses]
    return LoadSummary(summary, files)
