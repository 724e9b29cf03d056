"""Batch APIs end to end: export the requests, answer them (a results file with known answers and
one failed request), load the results, and get the metrics of the same answers given as choices."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from molp2s_stats import metrics, store
from molp2s_stats.cli import app

from tiny_benchmark import M1, task_id, write_benchmark

runner = CliRunner()
FAILED = task_id("F2", "cf-A")  # m1 answered A (right); its request fails here, so it becomes invalid


@pytest.fixture()
def bench(tmp_path):
    return write_benchmark(tmp_path / "bench")


def _db(tmp_path, bench, name):
    path = tmp_path / f"{name}.duckdb"
    assert runner.invoke(app, ["load", "--benchmark", str(bench), "--db", str(path)]).exit_code == 0
    return path


def _export(tmp_path, bench, fmt):
    out = tmp_path / f"requests.{fmt}.jsonl"
    result = runner.invoke(app, ["prompts", "--benchmark", str(bench), "--format", fmt, "--model", "m1-api",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def _answer(choice):
    return "I cannot tell." if choice is None else f"The dipole fits best.\nAnswer: {choice}"


def _openai_results(requests, answers):
    lines = []
    for i, request in enumerate(requests):
        custom_id = request["custom_id"]
        if custom_id == FAILED:
            lines.append({"id": f"batch_req_{i}", "custom_id": custom_id, "response": None,
                          "error": {"code": "server_error", "message": "The server had an error"}})
            continue
        body = {"id": f"chatcmpl-{i}", "object": "chat.completion", "model": "m1-api-2026-01-01",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answers[custom_id]},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}}
        lines.append({"id": f"batch_req_{i}", "custom_id": custom_id,
                      "response": {"status_code": 200, "request_id": f"req_{i}", "body": body}, "error": None})
    return lines


def _anthropic_results(requests, answers):
    lines = []
    for i, request in enumerate(requests):
        custom_id = request["custom_id"]
        if custom_id == FAILED:
            lines.append({"custom_id": custom_id, "result": {"type": "errored", "error": {
                "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}})
            continue
        message = {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "m1-api-2026-01-01",
                   "content": [{"type": "text", "text": answers[custom_id]}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 120, "output_tokens": 12}}
        lines.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": message}})
    return lines


@pytest.mark.parametrize(("fmt", "make_results"), [("openai-batch", _openai_results),
                                                   ("anthropic-batch", _anthropic_results)])
def test_batch_round_trip_matches_the_same_answers_given_as_choices(tmp_path, bench, fmt, make_results):
    requests = _export(tmp_path, bench, fmt)
    answers = {task_id(f, k): _answer(c) for (f, k), c in M1.items()}
    assert {r["custom_id"] for r in requests} == set(answers)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in make_results(requests, answers)))

    batch_db = _db(tmp_path, bench, "batch")
    result = runner.invoke(app, ["load", "--responses", str(results), "--db", str(batch_db)])  # format from fields
    assert result.exit_code == 0, result.output
    assert "22 rows" in result.output and "2 invalid" in result.output  # the failed request kept

    # the same answers as parsed choices, the failed request as an invalid answer
    choices = tmp_path / "choices.jsonl"
    choices.write_text("".join(
        json.dumps({"model": "m1-api-2026-01-01", "task_id": task_id(f, k),
                    **({"choice": c} if c is not None and task_id(f, k) != FAILED else {"response": "no answer"})})
        + "\n" for (f, k), c in M1.items()))
    choice_db = _db(tmp_path, bench, "choices")
    assert runner.invoke(app, ["load", "--responses", str(choices), "--db", str(choice_db)]).exit_code == 0

    def table(path):
        con = store.connect(path, read_only=True)
        try:
            return metrics.metrics_from_db(con, draws=0).select("model", "channel", "metric", "estimate", "n")
        finally:
            con.close()

    assert table(batch_db).equals(table(choice_db))
    con = store.connect(batch_db, read_only=True)
    model, choice, reason, metadata = con.execute(
        "SELECT model, choice, invalid_reason, metadata FROM responses WHERE task_id = ?", [FAILED]).fetchone()
    ok_meta = json.loads(con.execute("SELECT metadata FROM responses WHERE task_id = 'F1-p0'").fetchone()[0])
    con.close()
    assert (model, choice, reason) == ("m1-api-2026-01-01", None, "request_failed")  # the file's one model
    assert json.loads(metadata)["error"]
    assert ok_meta["usage"] and ok_meta["api_model"] == "m1-api-2026-01-01"


def test_model_option_renames_and_a_failed_line_without_a_model_needs_it(tmp_path, bench):
    failed = {"custom_id": task_id("F1", "source"), "result": {"type": "expired"}}
    results = tmp_path / "expired.jsonl"
    results.write_text(json.dumps(failed) + "\n")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(results), "--db", str(db)])
    assert result.exit_code == 2
    assert "line 1" in result.output and "give --model" in result.output and "unchanged" in result.output
    result = runner.invoke(app, ["load", "--responses", str(results), "--model", "my-model", "--db", str(db)])
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    assert con.sql("SELECT model, invalid_reason FROM responses").fetchall() == [("my-model", "request_failed")]
    con.close()


def test_openai_refusal_and_non_200_status(tmp_path, bench):
    lines = [
        {"custom_id": task_id("F1", "source"), "error": None, "response": {"status_code": 200, "body": {
            "model": "gpt", "choices": [{"message": {"content": None, "refusal": "I can't help with that."},
                                         "finish_reason": "stop"}]}}},
        {"custom_id": task_id("F1", "shuffled"), "error": None, "response": {"status_code": 429, "body": {
            "error": {"message": "Rate limit"}}}},
    ]
    results = tmp_path / "out.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = _db(tmp_path, bench, "runs")
    assert runner.invoke(app, ["load", "--responses", str(results), "--db", str(db)]).exit_code == 0
    con = store.connect(db, read_only=True)
    rows = con.sql("SELECT task_id, model, invalid_reason FROM responses ORDER BY task_id").fetchall()
    con.close()
    assert rows == [(task_id("F1", "shuffled"), "gpt", "request_failed"), (task_id("F1", "source"), "gpt", "refusal")]


def test_a_request_file_is_refused_as_results(tmp_path, bench):
    _export(tmp_path, bench, "openai-batch")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(tmp_path / "requests.openai-batch.jsonl"),
                                 "--db", str(db)])
    assert result.exit_code == 2 and "batch request file" in result.output


def test_an_unknown_custom_id_is_named(tmp_path, bench):
    results = tmp_path / "out.jsonl"
    results.write_text(json.dumps({"custom_id": "nope", "result": {"type": "succeeded", "message": {
        "model": "claude", "content": [{"type": "text", "text": "Answer: A"}]}}}) + "\n")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(results), "--db", str(db)])
    assert result.exit_code == 2 and "unknown task_id 'nope'" in result.output and "line 1" in result.output
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM responses").fetchone() == (0,)
    con.close()


def test_given_format_is_honoured(tmp_path, bench):
    results = tmp_path / "out.jsonl"
    results.write_text(json.dumps({"custom_id": task_id("F1", "p0"), "result": {"type": "canceled"}}) + "\n")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(results), "--format", "anthropic-batch",
                                 "--model", "claude", "--db", str(db)])
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT invalid_reason FROM responses").fetchall() == [("request_failed",)]
    con.close()


@pytest.mark.parametrize(("fmt", "line"), [
    ("anthropic-batch", {"custom_id": "F1-p0", "response": {"status_code": 200, "body": {"model": "gpt"}},
                         "error": None}),
    ("openai-batch", {"custom_id": "F1-p0", "result": {"type": "succeeded", "message": {"model": "claude"}}}),
])
def test_a_wrong_batch_format_is_refused_not_read_as_failures(tmp_path, bench, fmt, line):
    results = tmp_path / "out.jsonl"
    results.write_text(json.dumps(line) + "\n")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(results), "--format", fmt, "--model", "m",
                                 "--db", str(db)])
    assert result.exit_code == 2 and f"read as {fmt}" in result.output and "line 1" in result.output
