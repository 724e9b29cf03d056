"""The package's own data: the embedded benchmark (data/benchmark) and the simulated models' answers
(data/responses)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from ..defaults import DEFAULT_BENCHMARK, DEFAULT_RESPONSES
from . import load


def default_response_files() -> list[Path]:
    return sorted(p for p in DEFAULT_RESPONSES.iterdir() if p.suffix in (".jsonl", ".csv", ".parquet"))


def load_default_data(con: duckdb.DuckDBPyConnection) -> None:
    """Load data/benchmark and data/responses (a second call adds nothing: files are seen by hash)."""
    load(con, benchmark=DEFAULT_BENCHMARK, responses=default_response_files())
