"""A database that cannot be used is one line that names the file and what to do, never a traceback."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from molp2s_stats.ingest import load
from tests.support.tiny_benchmark import write_benchmark, write_responses


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


@pytest.mark.parametrize(
    "how, says",
    [
        ("text", "not a DuckDB database file"),
        ("flipped", "the database file is damaged or truncated"),
        ("truncated", "the database file is damaged or truncated"),
    ],
)
def test_a_damaged_database_is_a_message(database, tmp_path, how, says):
    path = _damaged(database, tmp_path, how)
    result = CliRunner().invoke(app, ["metrics", "--db", str(path), "--bootstrap", "0"])
    assert result.exit_code in (1, 2), result.output
    assert f"error: {path}: {says}" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # a message, not an exception


@pytest.mark.parametrize("how", ["--debug", "MOLP2S_DEBUG"])
def test_debug_shows_the_traceback_behind_the_message(database, tmp_path, monkeypatch, how):
    path = _damaged(database, tmp_path, "text")
    monkeypatch.setenv("MOLP2S_DEBUG", "0")  # 0 is off; and the variable is restored after the test
    arguments = ["metrics", "--db", str(path), "--bootstrap", "0"]
    if how == "--debug":
        arguments.insert(0, "--debug")
    else:
        monkeypatch.setenv("MOLP2S_DEBUG", "1")
    result = CliRunner().invoke(app, arguments)
    assert f"error: {path}: not a DuckDB database file" in result.output  # the line first
    assert result.exit_code != 0 and result.exception is not None and not isinstance(result.exception, SystemExit)
    cause = result.exception.__cause__ or result.exception.__context__  # DuckDB's own error, behind ours
    assert "duckdb" in type(cause).__module__


def test_explain_failure_reads_what_duckdb_says():
    assert store.explain_failure(OSError("IO Error: No space left on device"), "a.duckdb").startswith(
        "a.duckdb: the disk is full or the file is over its size limit"
    )
    assert "File too large" in store.explain_failure(OSError("IO Error: File too large"), "a.duckdb")
    assert store.explain_failure(OSError("Binder Error: no such column"), "a.duckdb") is None


# --- crash tests: a load stopped at some point is all or nothing ------------------------------------------

import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from tests.support import DATA

MOLP2S = Path(sys.executable).with_name("molp2s")


def _load_process(db):
    """`molp2s load` of the default data (389 families, 8 models: about 160,000 answers, several seconds)."""
    return subprocess.Popen(
        [
            str(MOLP2S),
            "load",
            "--benchmark",
            str(DATA / "benchmark"),
            "--responses",
            *map(str, sorted((DATA / "responses").glob("*.parquet"))),
            "--db",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _counts(db) -> tuple[int, int]:
    con = store.connect(db, read_only=True)
    try:
        # a kill between DuckDB making the file and the schema's commit leaves a database with no
        # tables: nothing loaded, as (0, 0) says
        if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'families'").fetchone()[
            0
        ]:
            return (0, 0)
        return (
            con.execute("SELECT count(*) FROM families").fetchall()[0][0],
            con.execute("SELECT count(*) FROM responses").fetchall()[0][0],
        )
    finally:
        con.close()


@pytest.mark.parametrize("after", [0.2, 1.5])
def test_ctrl_c_stops_a_load_and_leaves_nothing(tmp_path, after):
    db = tmp_path / "interrupted.duckdb"
    process = _load_process(db)
    deadline = time.monotonic() + 60
    while not db.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the load has begun once it has made the database (imports take seconds on a busy machine)
    time.sleep(after)
    if process.poll() is not None:
        pytest.skip("the load finished before the interrupt")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted: load stopped; nothing was loaded: the database is as it was" in stderr
    assert "Traceback" not in stderr
    assert not db.exists()  # a database the load was making is not left behind, half made or empty


def test_a_load_killed_at_any_point_is_all_or_nothing(tmp_path, default_database):
    full = _counts(default_database)  # what the whole load makes (the suite's default database)
    for trial, after in enumerate((0.8, 2.0, 3.5, 5.0)):
        db = tmp_path / f"killed-{trial}.duckdb"
        process = _load_process(db)
        time.sleep(after)
        process.kill()  # SIGKILL: no handler runs, no rollback is asked for
        process.communicate(timeout=60)
        if not db.exists():
            continue  # killed before the file was made
        assert _counts(db) in ((0, 0), full), (trial, after)
        # and the same load, run again, completes
    again = _load_process(db)
    again.communicate(timeout=300)
    assert again.returncode == 0 and _counts(db) == full


def test_the_schema_is_made_whole_or_not_at_all(tmp_path, monkeypatch):
    """A process stopped while it creates the views leaves no tables without their views (a reader
    would take that file for an earlier version's); the killed loads above can land there too."""
    real = store._read_sql
    stop_at = store.VIEW_FILES[2]

    def failing(name):
        if name == stop_at:
            raise KeyboardInterrupt  # as if the process stopped here
        return real(name)

    db = tmp_path / "half.duckdb"
    monkeypatch.setattr(store, "_read_sql", failing)
    with pytest.raises(KeyboardInterrupt):
        store.connect(db)
    monkeypatch.setattr(store, "_read_sql", real)
    assert _counts(db) == (0, 0)
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == 0
    con.close()
    store.connect(db).close()  # and the next writer makes it whole
    con = store.connect(db, read_only=True)
    assert store._missing_objects(con) == []
    con.close()


def test_check_trusts_a_sound_database_and_notices_a_changed_file(database, tmp_path):
    import polars as pl

    runner = CliRunner()
    result = runner.invoke(app, ["check", "--db", str(database), "--format", "csv"])
    assert result.exit_code == 0, result.output
    table = pl.read_csv(result.stdout.encode())
    assert set(table["check"]) == {"readable", "rows", "file", "benchmark"}
    assert table.filter(pl.col("check") == "rows")["status"].to_list() == ["ok", "ok"]
    assert f"{database}: can be trusted" in result.output
    # a response file edited after loading: the database still can be trusted, and says the file changed
    copy = tmp_path / "db.duckdb"
    shutil.copy(database, copy)
    m2 = database.parent / "responses" / "m2.csv"
    original = m2.read_text()
    try:
        m2.write_text(original + "m2,F1-p0,9,A\n")
        result = runner.invoke(app, ["check", "--db", str(copy), "--format", "csv"])
        assert result.exit_code == 0
        changed = pl.read_csv(result.stdout.encode()).filter(pl.col("status") == "changed")
        assert changed["subject"].to_list() == [str(m2)]
        assert "1 of the files it was loaded from are missing or changed" in result.output
    finally:
        m2.write_text(original)


def test_check_says_how_to_rebuild_a_damaged_database(database, tmp_path):
    path = _damaged(database, tmp_path, "flipped")
    result = CliRunner().invoke(app, ["check", "--db", str(path)])
    assert result.exit_code in (1, 2)  # 2 where it cannot even be opened
    # damaged where the check reads it: either it cannot be opened at all, or a table fails to read through
    assert (
        f"error: {path}: the database file is damaged or truncated" in result.output
        or f"{path}: cannot be trusted" in result.output
    ), result.output


def test_a_full_disk_during_a_load_is_a_message_and_leaves_nothing(tmp_path):
    db = tmp_path / "full.duckdb"
    # every file the load writes capped at 4 MB (bash's ulimit -f counts 1,024-byte blocks): the database
    # outgrows it. Set by the shell, not by a preexec_fn: forking this process (JAX's threads) is unsafe
    done = subprocess.run(
        [
            "bash",
            "-c",
            'ulimit -f 4096 && exec "$0" "$@"',
            str(MOLP2S),
            "load",
            "--benchmark",
            str(DATA / "benchmark"),
            "--responses",
            *map(str, sorted((DATA / "responses").glob("*.parquet"))),
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"error: {db}: the disk is full or the file is over its size limit" in done.stderr
    assert not db.exists()  # the database the load was making is not left behind


def test_a_reader_during_a_load_is_told_to_wait_and_two_loads_both_land(tmp_path, default_database):
    db = tmp_path / "busy.duckdb"
    first = _load_process(db)
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = _load_process(db)  # the same files: it waits for the first, then finds them loaded
    reader = subprocess.run(
        [str(MOLP2S), "sql", "--db", str(db), "SELECT count(*) FROM responses"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    first.communicate(timeout=300)
    _, second_err = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, second_err
    if reader.returncode:  # it came while a load held the file: a message, not a traceback
        assert "another process has the database open" in reader.stderr and "Traceback" not in reader.stderr
    assert _counts(db) == _counts(default_database)


def test_a_database_names_the_files_it_can_be_rebuilt_from(database):
    from molp2s_stats import check

    con = store.connect(database, read_only=True)
    try:
        benchmark, files = check.rebuild_sources(check.check(con))
    finally:
        con.close()
    assert benchmark == str(database.parent / "bench")
    assert sorted(Path(f).name for f in files) == ["m1.jsonl", "m2.csv"]
