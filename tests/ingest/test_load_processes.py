"""Issue 7: loads as separate processes. Two loads started at once both finish (the
second waits for the first's lock) with no row lost or doubled; a load killed with
SIGKILL in the middle leaves the database as it was before it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from molp2s_stats import store
from tests.support import ROOT as REPO

BENCHMARK = REPO / "data" / "benchmark"
MOLP2S = [sys.executable, "-m", "molp2s_stats.cli"]


def _run(*args, **kw):
    return subprocess.run(MOLP2S + list(args), capture_output=True, text=True, timeout=600, **kw)


def _state(db: Path) -> tuple:
    con = store.connect(db, read_only=True)
    try:
        return con.sql(
            "SELECT count(*), coalesce(sum(hash(model, task_id, sample, attempt, choice)), 0), "
            "(SELECT count(*) FROM response_files) FROM responses"
        ).fetchall()[0]
    finally:
        con.close()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("processes")
    db = root / "base.duckdb"
    result = _run("load", "--benchmark", str(BENCHMARK), "--db", str(db))
    assert result.returncode == 0, result.stderr
    tasks = pl.read_parquet(BENCHMARK / "tasks.parquet")["task_id"]
    return root, db, tasks


def _responses(path: Path, tasks: pl.Series, model: str, samples: int) -> Path:
    frame = pl.DataFrame({"task_id": tasks}).join(pl.DataFrame({"sample": range(samples)}), how="cross")
    frame.with_columns(pl.lit(model).alias("model"), pl.lit("A").alias("choice")).write_parquet(path)
    return path


def test_two_loads_at_once_both_finish_and_nothing_is_lost_or_doubled(setup, tmp_path):
    root, base, tasks = setup
    db = tmp_path / "db.duckdb"
    db.write_bytes(base.read_bytes())
    files = [_responses(tmp_path / f"m{i}.parquet", tasks, f"m{i}", 20) for i in range(2)]
    processes = [
        subprocess.Popen(
            MOLP2S + ["load", "--responses", str(f), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outputs = [p.communicate(timeout=600) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    rows, _, file_count = _state(db)
    assert rows == 2 * len(tasks) * 20 and file_count == 2


def test_a_killed_load_leaves_the_database_as_it_was(setup, tmp_path):
    root, base, tasks = setup
    db = tmp_path / "db.duckdb"
    db.write_bytes(base.read_bytes())
    first = _run("load", "--responses", str(_responses(tmp_path / "small.parquet", tasks, "kept", 1)), "--db", str(db))
    assert first.returncode == 0, first.stderr
    before = _state(db)
    big = _responses(tmp_path / "big.parquet", tasks, "killed", 400)  # 5.6 M rows: seconds to check and insert
    process = subprocess.Popen(
        MOLP2S + ["load", "--responses", str(big), "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    time.sleep(4.0)
    assert process.poll() is None, "the load finished before it could be killed; make the file larger"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert _state(db) == before
    # and the database still takes the same load afterwards
    again = _run("load", "--responses", str(_responses(tmp_path / "after.parquet", tasks, "after", 1)), "--db", str(db))
    assert again.returncode == 0, again.stderr
