"""Issue 7: the file readers never crash. Whatever bytes or JSON values a response file
holds, ``stage_file`` returns a frame or raises the documented InputError naming the
file; nothing else escapes (no polars, DuckDB or Unicode exception)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from molp2s_stats.ingest import InputError, stage_file

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
records = st.dictionaries(
    st.sampled_from(["model", "task_id", "sample", "attempt", "response", "choice", "extra", "doc_id", "resps"]),
    json_values,
    max_size=7,
)


def _staged_or_refused(path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        frame = stage_file(path)
    except InputError as exc:
        assert str(exc).startswith(str(path))
        return
    assert frame.height >= 1 and {"model", "task_id", "sample", "attempt"} <= set(frame.columns)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_as_jsonl(tmp_path, data):
    _staged_or_refused(tmp_path / "fuzz.jsonl", data)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_as_csv(tmp_path, data):
    _staged_or_refused(tmp_path / "fuzz.csv", data)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_as_parquet(tmp_path, data):
    _staged_or_refused(tmp_path / "fuzz.parquet", data)


@SETTINGS
@given(lines=st.lists(records, min_size=1, max_size=5))
def test_arbitrary_json_records_as_jsonl(tmp_path, lines):
    _staged_or_refused(tmp_path / "fuzz.jsonl", "".join(json.dumps(r) + "\n" for r in lines).encode())


@SETTINGS
@given(lines=st.lists(records, min_size=1, max_size=5))
def test_arbitrary_lm_eval_like_records(tmp_path, lines):
    # a first line with doc_id and resps makes the file read as lm-eval samples
    first = {"doc_id": 0, "resps": [["A"]]}
    _staged_or_refused(tmp_path / "fuzz.jsonl", "".join(json.dumps(r) + "\n" for r in [first, *lines]).encode())
