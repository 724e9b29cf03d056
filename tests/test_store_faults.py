"""A database that cannot be used is one line that names the file and what to do, never a traceback."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from molp2s_stats.ingest import load

from tiny_benchmark import write_benchmark, write_responses


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    con = store.connect(root / "db.duckdb")
    load(con, benchmark=write_benchmark(root / "bench"), responses=write_responses(root / "responses"))
    con.execute("CHECKPOINT")
    con.close()
    return root / "db.duckdb"


def _damaged(database, tmp_path, how: str):
    path = tmp_path / f"{how}.duckdb"
    shutil.copy(database, path)
    data = bytearray(path.read_bytes())
    if how == "text":
        path.write_text("not a database\n")
    elif how == "flipped":  # every block after the header overwritten: checksums cannot match
        for at in range(8192, len(data)):
            data[at] ^= 0x5A
        path.write_bytes(bytes(data))
    else:  # truncated to half
        path.write_bytes(bytes(data[: len(data) // 2]))
    return path


@pytest.mark.parametrize("how, says", [("text", "not a DuckDB database file"),
                                       ("flipped", "the database file is damaged or truncated"),
                                       ("truncated", "the database file is damaged or truncated")])
def test_a_damaged_database_is_a_message(database, tmp_path, how, says):
    path = _damaged(database, tmp_path, how)
    result = CliRunner().invoke(app, ["metrics", "--db", str(path), "--bootstrap", "0"])
    assert result.exit_code in (1, 2), result.output
    assert f"error: {path}: {says}" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # a message, not an exception


def test_explain_failure_reads_what_duckdb_says():
    assert store.explain_failure(OSError("IO Error: No space left on device"), "a.duckdb").startswith(
        "a.duckdb: the disk is full or the file is over its size limit")
    assert "File too large" in store.explain_failure(OSError("IO Error: File too large"), "a.duckdb")
    assert store.explain_failure(OSError("Binder Error: no such column"), "a.duckdb") is None
