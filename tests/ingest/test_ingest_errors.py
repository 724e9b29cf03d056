"""Bad inputs to the loader: every one is refused with an InputError
that names the file, the line or row, and the problem, and leaves the database
exactly as it was (one transaction per ``load`` call).

Each test works on its own copy of a DuckDB file that already holds the default
benchmark and one good response file (``sim-alpha.jsonl``); the copy is made from
a database built once per session, so the whole module stays fast.
"""

from __future__ import annotations

import gc
import hashlib
import json
import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from molp2s_stats.ingest import InputError, load
from tests.support import TOY

DEFAULT = TOY
ALPHA = DEFAULT / "responses" / "sim-alpha.jsonl"
BETA = DEFAULT / "responses" / "sim-beta.csv"
GAMMA = DEFAULT / "responses" / "sim-gamma.parquet"
# rows of each file: the toy benchmark's 912 tasks answered once each, plus one row per
# failed first attempt (13, 23, 21); sim-gamma leaves one task unanswered
ALPHA_ROWS, BETA_ROWS, GAMMA_ROWS = 912 + 13, 912 + 23, 911 + 21

# Tasks of family F01 (candidates A, B, C, D; source D).
T0, T1, T2, T3 = "F01-p0", "F01-dipole_norm-source", "F01-dipole_norm-shuffled", "F01-dipole_norm-cf-A"


def good(task_id: str = T0, **extra) -> dict:
    return {"model": "m-test", "task_id": task_id, "response": "Answer: B", **extra}


# What pytest.raises raises when nothing is raised: a known bug that accepts bad input.


# ------------------------------------------------------------------ helpers


def write_jsonl(path: Path, *lines) -> Path:
    """One line per item: dicts are JSON-encoded, strings written as they are."""
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def write_csv(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join((header, *rows)) + "\n", encoding="utf-8")
    return path


def snapshot(con) -> dict:
    """Row count and a hash of the sorted rows of every table, plus the list of views."""
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() ORDER BY 1"
        ).fetchall()
    ]
    assert {
        "families",
        "candidates",
        "properties",
        "tasks",
        "channels",
        "pair_distances",
        "benchmark",
        "response_files",
        "responses",
    } <= set(tables)
    state = {}
    for table in tables:
        rows = sorted(repr(row) for row in con.execute(f'SELECT * FROM "{table}"').fetchall())
        state[table] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
    state["_views"] = tuple(
        r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
    )
    return state


def snapshot_file(path: Path) -> dict:
    """``snapshot`` of a database file through a read-only connection that is fully released afterwards
    (DuckDB refuses a second open of one file with another configuration while an instance lives)."""
    con = store.connect(path, read_only=True)
    try:
        return snapshot(con)
    finally:
        con.close()
        del con
        gc.collect()


def count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def msg(path: Path | str, where: str | None, problem: str) -> str:
    """Regex for ``<path>: <where>: <problem>``; ``problem`` is itself a regex."""
    head = f"{path}: {where}: " if where else f"{path}: "
    return "^" + re.escape(head) + problem


def refused(con, pattern: str, **kwargs) -> InputError:
    """``load(con, **kwargs)`` raises an InputError matching ``pattern`` and changes nothing."""
    before = snapshot(con)
    with pytest.raises(InputError, match=pattern) as info:
        load(con, **kwargs)
    assert snapshot(con) == before
    return info.value


# ----------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def base_db(tmp_path_factory) -> Path:
    """Default benchmark plus sim-alpha.jsonl, built once; tests work on copies."""
    path = tmp_path_factory.mktemp("base") / "base.duckdb"
    con = store.connect(path)
    load(con, benchmark=DEFAULT, responses=[ALPHA])
    con.close()
    return path


@pytest.fixture
def db_path(base_db, tmp_path) -> Path:
    path = tmp_path / "test.duckdb"
    shutil.copyfile(base_db, path)
    return path


@pytest.fixture
def con(db_path):
    # The copy already has the schema and views; a plain open skips store.initialise (speed).
    con = duckdb.connect(str(db_path))
    yield con
    con.close()


@pytest.fixture(scope="session")
def empty_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("empty") / "empty.duckdb"
    store.connect(path).close()
    return path


@pytest.fixture
def fresh(empty_db, tmp_path):
    """An empty database: schema and views only, no benchmark."""
    path = tmp_path / "fresh.duckdb"
    shutil.copyfile(empty_db, path)
    con = duckdb.connect(str(path))
    yield con
    con.close()


@pytest.fixture
def bench(tmp_path) -> Path:
    """A writable copy of the default benchmark folder (without responses)."""
    folder = tmp_path / "bench"
    folder.mkdir()
    for name in ("families.csv", "candidates.csv", "properties.jsonl", "tasks.parquet"):
        shutil.copyfile(DEFAULT / name, folder / name)
    return folder


def test_base_database_holds_benchmark_and_one_file(con):
    assert count(con, "benchmark") == 1
    assert count(con, "families") == 12
    assert con.execute("SELECT path FROM response_files").fetchall() == [(str(ALPHA),)]
    assert count(con, "responses") == ALPHA_ROWS


# ------------------------------------------------------ JSONL response files

JSONL_CASES = [
    # id, lines, where, problem regex
    (
        "malformed_json_line3",
        [good(T0), good(T1), '{"model": "m-test", "task_id": '],
        "line 3",
        r"malformed JSON \(.+ at column \d+\)$",
    ),
    ("malformed_after_blank_line", [good(T0), "", "{oops"], "line 3", r"malformed JSON"),
    ("array_not_object", [good(T0), '["m-test", "F01-p0", "B"]'], "line 2", r"expected a JSON object, got array$"),
    ("number_not_object", [good(T0), good(T1), "42"], "line 3", r"expected a JSON object, got \w+$"),
    ("missing_model", [good(T0), {"task_id": T1, "response": "B"}], "line 2", r"missing required field 'model'$"),
    (
        "null_model",
        [good(T0), {"model": None, "task_id": T1, "response": "B"}],
        "line 2",
        r"missing required field 'model'$",
    ),
    (
        "empty_model",
        [good(T0), {"model": "  ", "task_id": T1, "response": "B"}],
        "line 2",
        r"missing required field 'model'$",
    ),
    (
        "missing_task_id",
        [good(T0), good(T1), {"model": "m-test", "response": "B"}],
        "line 3",
        r"missing required field 'task_id'$",
    ),
    (
        "empty_task_id",
        [good(T0), {"model": "m-test", "task_id": "", "response": "B"}],
        "line 2",
        r"missing required field 'task_id'$",
    ),
    (
        "neither_response_nor_choice",
        [good(T0), {"model": "m-test", "task_id": T1, "sample": 0}],
        "line 2",
        r"needs a 'response' or a 'choice'",
    ),
    (
        "response_and_choice_null",
        [good(T0), {"model": "m-test", "task_id": T1, "response": None, "choice": None}],
        "line 2",
        r"needs a 'response' or a 'choice'",
    ),
    (
        "model_is_number",
        [good(T0), {"model": 7, "task_id": T1, "response": "B"}],
        "line 2",
        r"field 'model' must be text, got \w+$",
    ),
    (
        "task_id_is_float",
        [good(T0), {"model": "m-test", "task_id": 1.5, "response": "B"}],
        "line 2",
        r"field 'task_id' must be text or an integer, got double$",
    ),
    (
        "sample_is_float",
        [good(T0), good(T1, sample=1.5)],
        "line 2",
        r"field 'sample' must be a non-negative integer, got double$",
    ),
    (
        "sample_is_text",
        [good(T0), good(T1, sample="1")],
        "line 2",
        r"field 'sample' must be a non-negative integer, got varchar$",
    ),
    (
        "sample_is_bool",
        [good(T0), good(T1, sample=True)],
        "line 2",
        r"field 'sample' must be a non-negative integer, got boolean$",
    ),
    (
        "sample_negative",
        [good(T0), good(T1), good(T2, sample=-1)],
        "line 3",
        r"'sample' must be a non-negative integer, got -1$",
    ),
    (
        "attempt_negative",
        [good(T0), good(T1, attempt=-2)],
        "line 2",
        r"'attempt' must be a non-negative integer, got -2$",
    ),
    (
        "attempt_is_float",
        [good(T0), good(T1, attempt=0.5)],
        "line 2",
        r"field 'attempt' must be a non-negative integer, got double$",
    ),
    (
        "response_is_number",
        [good(T0), {"model": "m-test", "task_id": T1, "response": 3}],
        "line 2",
        r"field 'response' must be text, got \w+$",
    ),
    (
        "choice_is_list",
        [good(T0), {"model": "m-test", "task_id": T1, "choice": ["B"]}],
        "line 2",
        r"field 'choice' must be text, got array$",
    ),
    ("unknown_task_id", [good(T0), good(T1), good("no-such-task")], "line 3", r"unknown task_id 'no-such-task'$"),
    (
        "unknown_integer_task_id",
        [good(T0), {"model": "m-test", "task_id": 17, "choice": "B"}],
        "line 2",
        r"unknown task_id '17'$",
    ),
    (
        "choice_not_a_candidate",
        [good(T0), {"model": "m-test", "task_id": T1, "choice": "Z"}],
        "line 2",
        r"choice 'Z' is not a candidate of family 'F01'$",
    ),
    (
        "choice_empty_text",
        [good(T0), {"model": "m-test", "task_id": T1, "choice": ""}],
        "line 2",
        r"choice '' is not a candidate of family 'F01'$",
    ),
    (
        "duplicate_key_in_file",
        [good(T0), good(T1), good(T2), good(T1, response="C")],
        "line 2",
        r"duplicate \(model, task_id, sample, attempt\) = \('m-test', 'F01-dipole_norm-source', 0, 0\), also at line 4$",
    ),
    (
        "duplicate_key_default_vs_explicit",
        [good(T0), good(T1, sample=2), good(T0, sample=0, attempt=0)],
        "line 1",
        r"duplicate \(model, task_id, sample, attempt\) = \('m-test', 'F01-p0', 0, 0\), also at line 3$",
    ),
]


@pytest.mark.parametrize("lines, where, problem", [c[1:] for c in JSONL_CASES], ids=[c[0] for c in JSONL_CASES])
def test_bad_jsonl_response_file(con, tmp_path, lines, where, problem):
    path = write_jsonl(tmp_path / "bad.jsonl", *lines)
    refused(con, msg(path, where, problem), responses=[path])


def test_jsonl_non_utf8_names_the_line(con, tmp_path):
    path = tmp_path / "latin1.jsonl"
    body = (json.dumps(good(T0)) + "\n" + json.dumps(good(T1)) + "\n").encode()
    body += b'{"model": "m-test", "task_id": "F01-dipole_norm-shuffled", "response": "caf\xe9"}\n'
    path.write_bytes(body)
    refused(con, msg(path, "line 3", r"not valid UTF-8 \(byte 0xe9 at offset \d+\)$"), responses=[path])


def test_jsonl_first_problem_in_file_order_is_reported(con, tmp_path):
    """Two different problems: the message names one of their lines and says what is wrong there."""
    path = write_jsonl(tmp_path / "two.jsonl", good(T0), good("no-such-task"), {"model": "m-test", "task_id": T2})
    err = refused(con, "^" + re.escape(str(path)) + r": line [23]: ", responses=[path])
    assert (err.where, err.message) in {
        ("line 2", "unknown task_id 'no-such-task'"),
        ("line 3", "needs a 'response' or a 'choice' (both are missing)"),
    }


def test_jsonl_crlf_and_blank_lines_are_accepted(con, tmp_path):
    """Good input: CRLF line ends and blank lines; the stored line numbers are the file's."""
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(("\r\n".join([json.dumps(good(T0)), "", json.dumps(good(T1))]) + "\r\n").encode())
    summary = load(con, responses=[path])
    assert summary.files[0].rows == 2
    assert con.execute("SELECT task_id, line FROM responses WHERE model = 'm-test' ORDER BY line").fetchall() == [
        (T0, 1),
        (T1, 3),
    ]


def test_jsonl_unicode_line_separator_inside_a_response(con, tmp_path):
    """Good input: U+2028 inside a JSON string is not a line break (JSONL lines end at \\n)."""
    path = tmp_path / "u2028.jsonl"
    lines = [json.dumps(good(T0, response="Answer:\u2028B"), ensure_ascii=False), json.dumps(good(T1))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert load(con, responses=[path]).files[0].rows == 2
    assert con.execute("SELECT line FROM responses WHERE model = 'm-test' ORDER BY line").fetchall() == [(1,), (2,)]


def test_jsonl_tab_only_line_is_blank(con, tmp_path):
    path = write_jsonl(tmp_path / "tab.jsonl", good(T0), "\t", good(T1))
    assert load(con, responses=[path]).files[0].rows == 2


def test_jsonl_nul_byte_names_the_line(con, tmp_path):
    path = tmp_path / "nul.jsonl"
    nul_line = '{"model": "m-test", "task_id": "F01-dipole_norm-source", "response": "a\x00b"}'
    path.write_bytes((json.dumps(good(T0)) + "\n" + nul_line + "\n").encode())
    refused(con, msg(path, "line 2", r"(malformed JSON|.*NUL|.*control)"), responses=[path])


def test_jsonl_sample_too_large_for_int32(con, tmp_path):
    """The database stores sample as INTEGER: a larger value is refused up front, not at INSERT."""
    path = write_jsonl(tmp_path / "big.jsonl", good(T0), good(T1, sample=3_000_000_000))
    refused(con, msg(path, "line 2", r"'sample' is too large"), responses=[path])


def test_jsonl_attempt_beyond_int64(con, tmp_path):
    """2**64-1 is a valid JSON integer but no BIGINT: refused, not read as attempt 0."""
    path = write_jsonl(tmp_path / "huge.jsonl", good(T0), good(T1, attempt=2**64 - 1))
    refused(con, msg(path, "line 2", r"'attempt' is too large"), responses=[path])


# -------------------------------------------------------- CSV response files

CSV_HEADER = "model,task_id,sample,attempt,response,choice"
CSV_CASES = [
    # id, header, rows, where, problem regex
    ("missing_model_column", "task_id,response", [f"{T0},B", f"{T1},C"], None, r"missing required column 'model'$"),
    ("missing_task_id_column", "model,response", ["m-test,B"], None, r"missing required column 'task_id'$"),
    (
        "no_response_or_choice_column",
        "model,task_id,sample",
        [f"m-test,{T0},0"],
        None,
        r"needs a 'response' or a 'choice' column$",
    ),
    (
        "empty_model_cell",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f",{T1},0,0,B,"],
        "row 2",
        r"missing required field 'model'$",
    ),
    (
        "empty_task_id_cell",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,0,B,", "m-test,,0,0,B,"],
        "row 3",
        r"missing required field 'task_id'$",
    ),
    (
        "neither_response_nor_choice",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,0,,"],
        "row 2",
        r"needs a 'response' or a 'choice'",
    ),
    (
        "sample_x",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},x,0,B,"],
        "row 2",
        r"column 'sample' must be a non-negative integer, got 'x'$",
    ),
    (
        "sample_negative",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,0,B,", f"m-test,{T2},-1,0,B,"],
        "row 3",
        r"column 'sample' must be a non-negative integer, got '-1'$",
    ),
    (
        "sample_float",
        CSV_HEADER,
        [f"m-test,{T0},1.5,0,B,"],
        "row 1",
        r"column 'sample' must be a non-negative integer, got '1.5'$",
    ),
    (
        "attempt_x",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,one,B,"],
        "row 2",
        r"column 'attempt' must be a non-negative integer, got 'one'$",
    ),
    ("unknown_task_id", CSV_HEADER, [f"m-test,{T0},0,0,B,", "m-test,nope,0,0,B,"], "row 2", r"unknown task_id 'nope'$"),
    (
        "choice_not_a_candidate",
        CSV_HEADER,
        [f"m-test,{T0},0,0,,Q"],
        "row 1",
        r"choice 'Q' is not a candidate of family 'F01'$",
    ),
    (
        "duplicate_key_in_file",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,0,B,", f"m-test,{T0},,,,C"],
        "row 1",
        r"duplicate \(model, task_id, sample, attempt\) = \('m-test', 'F01-p0', 0, 0\), also at row 3$",
    ),
    ("header_only", CSV_HEADER, [], None, r"file has no rows$"),
    (
        "ragged_row",
        CSV_HEADER,
        [f"m-test,{T0},0,0,B,", f"m-test,{T1},0,0,B,,extra,more"],
        None,
        r"not a readable CSV file",
    ),
]


@pytest.mark.parametrize("header, rows, where, problem", [c[1:] for c in CSV_CASES], ids=[c[0] for c in CSV_CASES])
def test_bad_csv_response_file(con, tmp_path, header, rows, where, problem):
    path = write_csv(tmp_path / "bad.csv", header, *rows)
    refused(con, msg(path, where, problem), responses=[path])


def test_csv_non_utf8_names_the_line(con, tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(f"{CSV_HEADER}\nm-test,{T0},0,0,B,\nm-test,{T1},0,0,caf\xe9,\n".encode("latin-1"))
    # Physical line 3 is data row 2; either way of naming it is acceptable.
    refused(con, "^" + re.escape(f"{path}: ") + r"(line 3|row 2): not valid UTF-8 \(byte 0xe9", responses=[path])


def test_csv_with_old_mac_line_endings_names_the_header(con, tmp_path):
    """Lines ended by a lone carriage return (found by the byte fuzzer as b"\\r\\x01"): the header
    is one line holding a line break, refused with line 1 named, not a raw csv.Error."""
    path = tmp_path / "mac.csv"
    path.write_bytes(f"{CSV_HEADER}\rm-test,{T0},0,0,B,\r".encode())
    refused(
        con,
        msg(
            path,
            "line 1",
            r"the header is not a CSV line \(a carriage return inside it: lines must end in \\n or \\r\\n\)$",
        ),
        responses=[path],
    )


def test_csv_sample_too_large_for_int32(con, tmp_path):
    path = write_csv(tmp_path / "big.csv", CSV_HEADER, f"m-test,{T0},0,0,B,", f"m-test,{T1},3000000000,0,B,")
    refused(con, msg(path, "row 2", r"'sample' is too large \(at most 2147483647\), got 3000000000$"), responses=[path])


def test_csv_sample_beyond_int64(con, tmp_path):
    """Twenty digits pass a digit check but are no Int64: refused, not crashed on."""
    path = write_csv(tmp_path / "huge.csv", CSV_HEADER, f"m-test,{T0},0,0,B,", f"m-test,{T1},99999999999999999999,0,B,")
    refused(con, msg(path, "row 2", r"column 'sample' is too large, got '99999999999999999999'$"), responses=[path])


def test_csv_sample_non_ascii_digit(con, tmp_path):
    path = write_csv(tmp_path / "arabic.csv", CSV_HEADER, f"m-test,{T0},0,0,B,", f"m-test,{T1},\u0663,0,B,")
    refused(con, msg(path, "row 2", r"column 'sample' must be a non-negative integer, got '\u0663'$"), responses=[path])


def test_csv_duplicate_column_name(con, tmp_path):
    path = write_csv(tmp_path / "twice.csv", "model,task_id,choice,choice", f"m-test,{T0},B,C")
    refused(con, msg(path, None, r".*'choice'"), responses=[path])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_utf8_bom_is_accepted(con, tmp_path, suffix):
    """Good input: a UTF-8 byte-order mark (as written by some editors) does not hide the first column or line."""
    path = tmp_path / f"bom{suffix}"
    text = json.dumps(good(T0)) + "\n" if suffix == ".jsonl" else f"model,task_id,choice\nm-test,{T0},B\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load(con, responses=[path]).files[0].rows == 1
    assert con.execute("SELECT model, task_id, choice FROM responses WHERE model = 'm-test'").fetchall() == [
        ("m-test", T0, "B")
    ]


# ---------------------------------------------------- Parquet response files


def write_parquet(path: Path, **columns) -> Path:
    pl.DataFrame(columns).write_parquet(path)
    return path


def test_parquet_float_sample_column(con, tmp_path):
    path = write_parquet(
        tmp_path / "float.parquet", model=["m-test", "m-test"], task_id=[T0, T1], sample=[0.0, 1.5], choice=["B", "C"]
    )
    refused(con, msg(path, None, r"column 'sample' must hold integers, has type Float64$"), responses=[path])


def test_parquet_missing_model_column(con, tmp_path):
    path = write_parquet(tmp_path / "nomodel.parquet", task_id=[T0], choice=["B"])
    refused(con, msg(path, None, r"missing required column 'model'$"), responses=[path])


def test_parquet_null_model_names_the_row(con, tmp_path):
    path = write_parquet(
        tmp_path / "nullmodel.parquet", model=["m-test", None, "m-test"], task_id=[T0, T1, T2], choice=["B", "C", "D"]
    )
    refused(con, msg(path, "row 2", r"missing required field 'model'$"), responses=[path])


def test_parquet_numeric_model_column(con, tmp_path):
    path = write_parquet(tmp_path / "intmodel.parquet", model=[1, 2], task_id=[T0, T1], choice=["B", "C"])
    refused(con, msg(path, None, r"column 'model' must hold text, has type Int64$"), responses=[path])


def test_parquet_negative_sample_names_the_row(con, tmp_path):
    path = write_parquet(
        tmp_path / "neg.parquet", model=["m-test"] * 3, task_id=[T0, T1, T2], sample=[0, 1, -1], choice=["B", "C", "D"]
    )
    refused(con, msg(path, "row 3", r"'sample' must be a non-negative integer, got -1$"), responses=[path])


def test_parquet_unknown_task_names_the_row(con, tmp_path):
    path = write_parquet(tmp_path / "unknown.parquet", model=["m-test"] * 2, task_id=[T0, "nope"], choice=["B", "C"])
    refused(con, msg(path, "row 2", r"unknown task_id 'nope'$"), responses=[path])


def test_parquet_without_rows(con, tmp_path):
    path = tmp_path / "norows.parquet"
    pl.DataFrame(
        {"model": [], "task_id": [], "choice": []},
        schema={"model": pl.String, "task_id": pl.String, "choice": pl.String},
    ).write_parquet(path)
    refused(con, msg(path, None, r"file has no rows$"), responses=[path])


# A Parquet file streams through the loader a batch at a time; with batches of 2 rows,
# a 7-row file is four batches, and every check must still see the whole file.


@pytest.fixture
def two_row_batches(monkeypatch):
    from molp2s_stats.ingest import files

    monkeypatch.setattr(files, "PARQUET_BATCH_ROWS", 2)


TASKS7 = [T0, T1, T2, T3, "F01-dipole_norm-cf-B", "F01-dipole_norm-cf-C", "F02-p0"]


def test_parquet_in_batches_loads_what_one_batch_loads(db_path, tmp_path, monkeypatch):
    from molp2s_stats.ingest import files

    path = write_parquet(
        tmp_path / "seven.parquet",
        model=["m-test"] * 7,
        task_id=TASKS7,
        response=["Answer: B", "Answer: B", "no idea", "Answer: C", "Answer: B", "D", "Answer: A"],
        note=[str(i) for i in range(7)],
    )
    loaded = []
    for batch_rows in (2, 1_000_000):
        monkeypatch.setattr(files, "PARQUET_BATCH_ROWS", batch_rows)
        copy = tmp_path / f"copy-{batch_rows}.duckdb"
        shutil.copyfile(db_path, copy)
        con = duckdb.connect(str(copy))
        (summary,) = load(con, responses=[path]).files
        loaded.append(
            (
                summary.rows,
                summary.parsed,
                summary.invalid,
                con.execute(
                    "SELECT * EXCLUDE (file_id) FROM responses WHERE model = 'm-test' ORDER BY line"
                ).fetchall(),
            )
        )
        con.close()
    assert loaded[0] == loaded[1]
    assert loaded[0][0] == 7 and [row[-1] for row in loaded[0][3]] == list(range(1, 8))


def test_parquet_duplicate_across_batches_names_both_rows(con, tmp_path, two_row_batches):
    tasks = TASKS7[:5] + [T1, TASKS7[6]]  # row 6 repeats row 2, in another batch
    path = write_parquet(tmp_path / "dup.parquet", model=["m-test"] * 7, task_id=tasks, choice=["B"] * 7)
    refused(
        con,
        msg(
            path,
            "row 2",
            r"duplicate \(model, task_id, sample, attempt\) = "
            r"\('m-test', 'F01-dipole_norm-source', 0, 0\), also at row 6$",
        ),
        responses=[path],
    )


def test_parquet_error_in_a_later_batch_leaves_the_database_as_it_was(con, tmp_path, two_row_batches):
    tasks = TASKS7[:6] + ["nope"]
    path = write_parquet(tmp_path / "late.parquet", model=["m-test"] * 7, task_id=tasks, choice=["B"] * 7)
    refused(con, msg(path, "row 7", r"unknown task_id 'nope'$"), responses=[path])


def test_parquet_rows_already_loaded_from_another_file(con, tmp_path, two_row_batches):
    first = write_parquet(tmp_path / "first.parquet", model=["m-test"] * 3, task_id=TASKS7[4:7], choice=["B"] * 3)
    load(con, responses=[first])
    again = write_parquet(tmp_path / "again.parquet", model=["m-test"] * 5, task_id=TASKS7[:5], choice=["C"] * 5)
    refused(
        con,
        msg(
            again,
            "row 5",
            r"\(model, task_id, sample, attempt\) = \('m-test', 'F01-dipole_norm-cf-B', 0, 0\) "
            rf"was already loaded from {re.escape(str(first))} \(line/row 1\)$",
        ),
        responses=[again],
    )


def test_parquet_uint64_sample_beyond_int64(con, tmp_path):
    path = write_parquet(
        tmp_path / "u64.parquet",
        model=["m-test", "m-test"],
        task_id=[T0, T1],
        sample=pl.Series([0, 2**64 - 1], dtype=pl.UInt64),
        choice=["B", "C"],
    )
    refused(con, msg(path, "row 2", r".*'sample'"), responses=[path])


def test_parquet_uint32_sample_too_large(con, tmp_path):
    path = write_parquet(
        tmp_path / "u32.parquet",
        model=["m-test", "m-test"],
        task_id=[T0, T1],
        sample=pl.Series([0, 2**32 - 1], dtype=pl.UInt32),
        choice=["B", "C"],
    )
    refused(con, msg(path, "row 2", r"'sample' is too large \(at most 2147483647\), got 4294967295$"), responses=[path])


def test_parquet_binary_metadata_column(con, tmp_path):
    path = write_parquet(tmp_path / "blob.parquet", model=["m-test"], task_id=[T0], choice=["B"], blob=[b"\x00\x01"])
    try:
        refused(con, msg(path, None, r".*'blob'"), responses=[path])
    except BaseException as exc:  # PanicException is no Exception: turn it into an ordinary failure
        if isinstance(exc, Exception):
            raise
        raise AssertionError(f"{type(exc).__name__}: {exc}") from None


def test_truncated_parquet(con, tmp_path):
    path = tmp_path / "cut.parquet"
    data = GAMMA.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    refused(con, msg(path, None, r"not a readable Parquet file"), responses=[path])


# -------------------------------------------------- files that cannot be read


@pytest.mark.parametrize(
    "name, content",
    [
        ("empty.jsonl", b""),
        ("empty.csv", b""),
        ("empty.parquet", b""),
        ("blank.jsonl", b"  \n\n\t\n"),
        ("blank.csv", b"\n \n"),
    ],
    ids=["0_bytes_jsonl", "0_bytes_csv", "0_bytes_parquet", "whitespace_jsonl", "whitespace_csv"],
)
def test_empty_file(con, tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    refused(con, msg(path, None, r"file is empty$"), responses=[path])


def test_a_line_over_the_limit_is_refused_by_its_number(con, tmp_path, monkeypatch):
    # The limit (64 MiB) is lowered to 1 MiB so that the test writes 16 MiB, not the 1 GiB a file
    # would need to cross the real one; the scan that finds the line is the same.
    from molp2s_stats.ingest import files

    monkeypatch.setattr(files, "MAX_LINE_BYTES", 2**20)
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write((json.dumps(good(T0)) + "\n").encode())
        handle.write(b'{"model": "m", "task_id": "' + b"x" * 2**24 + b'"}\n')  # 16 MiB on line 2
    refused(
        con, msg(path, "line 2", r"line is 16,777,2\d\d bytes long; at most 1,048,576 are accepted"), responses=[path]
    )


def test_json_that_is_not_an_inspect_log(con, tmp_path):
    # .json is Inspect AI's log format; a JSONL line in a .json file is not such a log
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(good(T0)) + "\n", encoding="utf-8")
    refused(con, msg(path, None, r"not a readable Inspect AI log"), responses=[path])


@pytest.mark.parametrize("name", ["answers.txt", "answers"])
def test_unknown_file_extension(con, tmp_path, name):
    path = tmp_path / name
    path.write_text(json.dumps(good(T0)) + "\n", encoding="utf-8")
    suffix = Path(name).suffix
    expected = f"unknown file type {suffix!r}; expected .parquet, .jsonl, .csv, .eval or .json (Inspect AI logs)"
    refused(con, msg(path, None, re.escape(expected)), responses=[path])


def test_unknown_extension_with_bytes_of_a_loaded_file(con, tmp_path):
    path = tmp_path / "sim-alpha.txt"
    shutil.copyfile(ALPHA, path)
    refused(con, msg(path, None, r"unknown file type '.txt'"), responses=[path])


def test_file_does_not_exist(con, tmp_path):
    path = tmp_path / "missing.jsonl"
    refused(con, msg(path, None, r"cannot read file \(No such file or directory\)$"), responses=[path])


def test_folder_given_as_response_file(con, tmp_path):
    path = tmp_path / "folder.jsonl"
    path.mkdir()
    refused(con, msg(path, None, r"cannot read file \("), responses=[path])


# ----------------------------------------- duplicates across files, idempotency


def test_duplicate_of_already_loaded_file_names_earlier_file(con, tmp_path):
    alpha_line5 = ALPHA.read_text(encoding="utf-8").splitlines()[4]
    path = write_jsonl(tmp_path / "again.jsonl", good(T0), good(T1), alpha_line5)
    key = json.loads(alpha_line5)
    problem = (
        re.escape(
            f"(model, task_id, sample, attempt) = ('sim-alpha', {key['task_id']!r}, 0, 0) "
            f"was already loaded from {ALPHA} (line/row 5)"
        )
        + "$"
    )
    refused(con, msg(path, "line 3", problem), responses=[path])


def test_duplicate_across_two_new_files_in_one_call(con, tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", good(T0), good(T1))
    second = write_csv(tmp_path / "second.csv", "model,task_id,response", f"m-test,{T2},B", f"m-test,{T1},B")
    problem = re.escape(f"was already loaded from {first} (line/row 2)") + "$"
    refused(con, msg(second, "row 2", r".*" + problem), responses=[first, second])


def test_good_then_bad_file_in_one_call_loads_neither(con, tmp_path):
    good_file = write_jsonl(tmp_path / "good.jsonl", good(T0), good(T1))
    bad_file = write_jsonl(tmp_path / "bad.jsonl", good(T2), good("nope"))
    refused(con, msg(bad_file, "line 2", r"unknown task_id 'nope'$"), responses=[good_file, bad_file])
    assert con.execute("SELECT count(*) FROM responses WHERE model = 'm-test'").fetchone()[0] == 0
    assert str(good_file) not in {r[0] for r in con.execute("SELECT path FROM response_files").fetchall()}
    # The good file alone still loads afterwards: nothing of it was left behind.
    assert load(con, responses=[good_file]).files[0].rows == 2


def test_bad_then_good_file_in_one_call_loads_neither(con, tmp_path):
    bad_file = write_jsonl(tmp_path / "bad.jsonl", "{oops")
    refused(con, msg(bad_file, "line 1", r"malformed JSON"), responses=[bad_file, BETA])


def test_good_benchmark_and_bad_responses_in_one_call_load_nothing(fresh, tmp_path):
    bad_file = write_jsonl(tmp_path / "bad.jsonl", good(T0), good(T1, choice="Z"))
    refused(
        fresh, msg(bad_file, "line 2", r"choice 'Z' is not a candidate"), benchmark=DEFAULT, responses=[ALPHA, bad_file]
    )
    assert count(fresh, "benchmark") == 0 and count(fresh, "families") == 0


def test_responses_without_a_benchmark(fresh, tmp_path):
    refused(fresh, msg(ALPHA, None, r"no benchmark in the database yet"), responses=[ALPHA])


def test_loading_same_file_twice_adds_nothing(con, tmp_path):
    before = snapshot(con)
    summary = load(con, responses=[ALPHA])
    assert summary.files[0].already_loaded and summary.files[0].rows == 0
    assert snapshot(con) == before
    # Same bytes under another name are the same file.
    renamed = tmp_path / "renamed.jsonl"
    shutil.copyfile(ALPHA, renamed)
    assert load(con, responses=[renamed]).files[0].already_loaded
    assert snapshot(con) == before


def test_same_new_file_twice_in_one_call(con, tmp_path):
    path = write_jsonl(tmp_path / "new.jsonl", good(T0), good(T1))
    first, second = load(con, responses=[path, path]).files
    assert (first.already_loaded, first.rows) == (False, 2)
    assert (second.already_loaded, second.rows) == (True, 0)
    assert count(con, "responses") == ALPHA_ROWS + 2


def test_second_good_file_appends(con):
    summary = load(con, responses=[BETA])
    assert summary.files[0].rows == BETA_ROWS and not summary.files[0].already_loaded
    assert count(con, "responses") == ALPHA_ROWS + BETA_ROWS
    assert count(con, "response_files") == 2
    summary = load(con, responses=[GAMMA])
    assert summary.files[0].rows == GAMMA_ROWS
    assert count(con, "responses") == ALPHA_ROWS + BETA_ROWS + GAMMA_ROWS
    assert con.execute("SELECT file_id, format, rows FROM response_files ORDER BY file_id").fetchall() == [
        (1, "jsonl", ALPHA_ROWS),
        (2, "csv", BETA_ROWS),
        (3, "parquet", GAMMA_ROWS),
    ]


def test_failed_load_leaves_the_file_unchanged_on_disk(db_path, tmp_path):
    """Reopen the database file after a refused load: same contents as before."""
    before = snapshot_file(db_path)
    bad = write_jsonl(tmp_path / "bad.jsonl", good(T0), good("nope"))
    con = store.connect(db_path)
    with pytest.raises(InputError, match="unknown task_id"):
        load(con, responses=[bad])
    con.close()
    del con
    gc.collect()  # release the database instance so that a read-only open reads the file afresh
    assert snapshot_file(db_path) == before


# ------------------------------------------------------- benchmark folders


def edit_text(path: Path, old: str, new: str) -> None:
    """Replace the first occurrence of ``old`` (which must occur) in a text file."""
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def break_missing_table(folder: Path):
    (folder / "tasks.parquet").unlink()
    return folder, None, r"no tasks table \(tasks.parquet, tasks.jsonl or tasks.csv\)$"


def break_table_twice(folder: Path):
    pl.read_csv(folder / "families.csv").write_ndjson(folder / "families.jsonl")
    return folder, None, r"table 'families' is given twice: families.jsonl, families.csv$"


def break_duplicate_family(folder: Path):
    with open(folder / "families.csv", "a", encoding="utf-8") as f:
        f.write("F01,c1ccncc1[*],A\n")
    return folder / "families.csv", "row 1", r"duplicate row for family_id='F01'$"


def break_invalid_smiles(folder: Path):
    edit_text(folder / "candidates.csv", "F01,C,[*]Cl,", "F01,C,[*]C(,")
    return folder / "candidates.csv", "row 3", re.escape("column 'fragment' is not a valid SMILES: '[*]C('") + "$"


def break_target_not_candidate(folder: Path):
    tasks = pl.read_parquet(folder / "tasks.parquet")
    assert tasks.row(3, named=True)["task_id"] == T3
    tasks.with_columns(
        pl.when(pl.col("task_id") == T3).then(pl.lit("Z")).otherwise(pl.col("target")).alias("target")
    ).write_parquet(folder / "tasks.parquet")
    return folder / "tasks.parquet", "row 4", r"target is not a candidate of the family: family_id='F01', label='Z'$"


def break_ir_shape(folder: Path):
    path = folder / "properties.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[4])
    assert row["channel"] == "ir"
    value = json.loads(row["value"])
    del value["intensities"]
    row["value"] = json.dumps(value)
    lines[4] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, "line 5", r"channel 'ir' value: .*intensities"


def break_property_json(folder: Path):
    path = folder / "properties.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["value"] = "{" + row["value"]  # the JSON text loses its balance
    lines[0] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "properties.jsonl", "line 1", r"column 'value' is not valid JSON"


def break_unknown_channel(folder: Path):
    edit_text(folder / "properties.jsonl", '"channel":"gap"', '"channel":"gapp"')
    return folder / "properties.jsonl", "line 3", r"unknown or bundle channel: channel='gapp'$"


def break_properties_malformed_line(folder: Path):
    path = folder / "properties.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[6] = lines[6][:-5]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, "line 7", r"malformed JSON"


BENCH_BREAKS = [
    break_missing_table,
    break_table_twice,
    break_duplicate_family,
    break_invalid_smiles,
    break_target_not_candidate,
    break_ir_shape,
    break_property_json,
    break_unknown_channel,
    break_properties_malformed_line,
]


@pytest.mark.parametrize("breaker", BENCH_BREAKS, ids=lambda f: f.__name__.removeprefix("break_"))
def test_bad_benchmark_into_empty_database(fresh, bench, breaker):
    path, where, problem = breaker(bench)
    refused(fresh, msg(path, where, problem), benchmark=bench)
    assert count(fresh, "benchmark") == 0 and count(fresh, "families") == 0 and count(fresh, "pair_distances") == 0


@pytest.mark.parametrize(
    "breaker",
    [break_duplicate_family, break_invalid_smiles, break_target_not_candidate],
    ids=lambda f: f.__name__.removeprefix("break_"),
)
def test_bad_benchmark_into_loaded_database(con, bench, breaker):
    path, where, problem = breaker(bench)
    refused(con, msg(path, where, problem), benchmark=bench, responses=[BETA])


def test_benchmark_folder_missing(fresh, tmp_path):
    refused(fresh, msg(tmp_path / "nope", None, r"not a folder$"), benchmark=tmp_path / "nope")


def test_different_benchmark_into_database_with_one(con, bench):
    # one candidate's dipole moves by 0.001 D: a different benchmark
    path = bench / "properties.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    assert row["channel"] == "dipole_norm"
    row["value"] = json.dumps(float(row["value"]) + 0.001)
    lines[0] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(
        con,
        msg(
            bench,
            None,
            r"the database already holds a different benchmark \(loaded from "
            + re.escape(str(DEFAULT))
            + r"\); use another database$",
        ),
        benchmark=bench,
    )


def test_same_benchmark_from_another_folder_is_already_loaded(con, bench):
    before = snapshot(con)
    summary = load(con, benchmark=bench)
    assert summary.benchmark.already_loaded
    assert snapshot(con) == before


def _as_made_before_the_labels(con, names: dict[str, str], **changes) -> None:
    """Turn a database into one an earlier version wrote: the channel table of that time (other
    names, no subgroup or label) and the fingerprint it computed from it; ``changes`` alter a
    column of every channel as well (a different benchmark, then)."""
    from molp2s_stats.ingest.benchmark import _CHANNEL_COLUMNS_BEFORE_LABELS, fingerprint, read_benchmark

    for channel, name in names.items():
        con.execute(
            "UPDATE channels SET name = ?, subgroup = NULL, column_label = NULL WHERE channel = ?", [name, channel]
        )
    for column, value in changes.items():
        con.execute(f"UPDATE channels SET {column} = ? WHERE {column} IS NOT NULL", [value])
    old_channels = con.sql("SELECT * FROM channels ORDER BY position").pl().select(_CHANNEL_COLUMNS_BEFORE_LABELS)
    digest = fingerprint({**read_benchmark(DEFAULT), "channels": old_channels})
    con.execute("UPDATE benchmark SET fingerprint = ?", [digest])


def test_a_database_from_before_the_channel_labels_takes_the_new_names(con):
    # the same benchmark, its channels named as they were ("1H peaks"): loading it again
    # renames them and keeps every row; a response file then loads as into any database
    _as_made_before_the_labels(con, {"h1_peaks": "1H peaks", "c13_peaks_deg": "13C + Deg."})
    summary = load(con, benchmark=DEFAULT, responses=[BETA])
    assert summary.benchmark.already_loaded
    rows = dict(con.execute("SELECT channel, name FROM channels").fetchall())
    assert rows["h1_peaks"] == "¹H peaks" and rows["c13_peaks_deg"] == "¹³C + Deg."
    assert con.execute("SELECT subgroup, column_label FROM stg_channels WHERE channel = 'h1_peaks'").fetchall() == [
        ("¹H NMR", "Peaks")
    ]
    assert count(con, "responses") == ALPHA_ROWS + BETA_ROWS
    assert load(con, benchmark=DEFAULT).benchmark.already_loaded  # the stored fingerprint is the new one


def test_loading_the_benchmark_again_applies_the_channel_order(con):
    # display order is not part of the fingerprint: a reload puts the channel table's order back
    con.execute("UPDATE channels SET position = 100 - position")
    assert load(con, benchmark=DEFAULT).benchmark.already_loaded
    order = [c for (c,) in con.execute("SELECT channel FROM stg_channels ORDER BY position").fetchall()]
    assert order[:3] == ["dipole_norm", "dipole_vector", "gap"] and order[-1] == "all"


def test_a_database_whose_channels_computed_otherwise_is_another_benchmark(con):
    _as_made_before_the_labels(con, {"h1_peaks": "1H peaks"}, cutoff=0.5)
    before = snapshot(con)
    refused(con, msg(DEFAULT, None, r"the database already holds a different benchmark.*"), benchmark=DEFAULT)
    assert snapshot(con) == before


def test_a_database_from_an_earlier_version_is_refused_read_only_with_the_way_to_update_it(db_path):
    # an earlier version's database: no column_label, no family_candidates view; reports and
    # `molp2s sql` open it read-only, which cannot add them
    con = store.connect(db_path)
    con.execute("DROP VIEW benchmark_tasks")
    con.execute("DROP VIEW family_candidates")
    con.execute("ALTER TABLE channels DROP COLUMN column_label")
    con.close()
    with pytest.raises(
        store.StoreError,
        match=r"written by an earlier version of molp2s-stats \(it lacks "
        r"family_candidates, benchmark_tasks, channels\.column_label\); update it with "
        r"`molp2s load --db .* --benchmark .*toy`$",
    ):
        store.connect(db_path, read_only=True)
    store.connect(db_path).close()  # what `molp2s load` does first: the views and columns are made again
    con = store.connect(db_path, read_only=True)
    assert con.execute("SELECT count(*) FROM family_candidates").fetchone()[0] == 12
    con.close()


def test_benchmark_family_with_seven_candidates(fresh, bench):
    with open(bench / "candidates.csv", "a", encoding="utf-8") as f:
        f.write("F01,E,[*]Br,Brc1ccccc1\nF01,F,[*]I,Ic1ccccc1\nF01,G,[*]F,Fc1ccccc1\n")
    refused(fresh, msg(bench / "candidates.csv", None, r".*F01"), benchmark=bench)


def test_benchmark_fragment_without_attachment_point(fresh, bench):
    edit_text(bench / "candidates.csv", "F01,C,[*]Cl,", "F01,C,Cl,")
    refused(fresh, msg(bench / "candidates.csv", "row 3", r".*'fragment'"), benchmark=bench)


def test_benchmark_scaffold_without_attachment_point(fresh, bench):
    edit_text(bench / "families.csv", "F01,c1ccc(cc1)[*],D", "F01,c1ccccc1,D")
    refused(fresh, msg(bench / "families.csv", "row 1", r".*'scaffold'"), benchmark=bench)


def test_benchmark_jsonl_with_unicode_line_separator_in_a_string(fresh, bench):
    path = bench / "properties.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["note"] = "first\u2028second"
    lines[0] = json.dumps(row, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not load(fresh, benchmark=bench).benchmark.already_loaded


# -------------------------------------------------------------------- CLI

runner = CliRunner()


def test_cli_load_bad_file_fails_with_message(db_path, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", good(T0), good(T1), "{oops")
    before = snapshot_file(db_path)
    result = runner.invoke(app, ["load", "--responses", str(bad), "--db", str(db_path)])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"{bad}: line 3: malformed JSON" in result.stderr
    assert "database is unchanged" in result.stderr
    del result  # its traceback holds the CLI's open connection
    gc.collect()
    assert snapshot_file(db_path) == before


def test_cli_load_good_then_again(db_path):
    result = runner.invoke(app, ["load", "--responses", str(BETA), "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert f"{BETA_ROWS} rows" in result.stdout
    result = runner.invoke(app, ["load", "--responses", str(BETA), "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    assert "already loaded" in result.stdout


def test_cli_sql_refuses_writes(db_path):
    result = runner.invoke(app, ["sql", "INSERT INTO families VALUES ('x','C[*]','A')", "--db", str(db_path)])
    assert result.exit_code != 0
    assert "read-only" in result.output
    del result
    gc.collect()
    assert snapshot_file(db_path)["families"][0] == 12


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE families SET source = 'B'",
        "DROP TABLE families",
        "DELETE FROM responses",
        "CREATE TABLE x AS SELECT 1",
        "COPY families TO '{tmp}/out.csv'",
        "ATTACH '{tmp}/other.duckdb' AS other",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
    ],
)
def test_cli_sql_refuses_every_kind_of_write(db_path, tmp_path, statement):
    target = tmp_path / "writes"
    target.mkdir()
    result = runner.invoke(app, ["sql", statement.format(tmp=target), "--db", str(db_path)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:")
    del result
    gc.collect()
    assert snapshot_file(db_path)["families"][0] == 12
    assert list(target.iterdir()) == []  # no file written


def test_cli_sql_stops_a_runaway_query(db_path):
    result = runner.invoke(
        app, ["sql", "SELECT count(*) FROM range(100000000000) a", "--db", str(db_path), "--timeout", "0.5"]
    )
    assert result.exit_code == 2
    assert "--timeout 0.5" in result.output


def test_cli_sql_select_works(db_path):
    result = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM families", "--db", str(db_path), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["n", "12"]
