"""Batch APIs end to end: export the requests, answer them (a results file with known answers and
one failed request), load the results, and get the metrics of the same answers given as choices."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from molp2s_stats.stats import metrics
from tests.support.tiny_benchmark import M1, task_id, write_benchmark

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
    result = runner.invoke(
        app, ["prompts", "--benchmark", str(bench), "--format", fmt, "--model", "m1-api", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def _answer(choice):
    return "I cannot tell." if choice is None else f"The dipole fits best.\nAnswer: {choice}"


def _openai_results(requests, answers):
    lines = []
    for i, request in enumerate(requests):
        custom_id = request["custom_id"]
        if custom_id == FAILED:
            lines.append(
                {
                    "id": f"batch_req_{i}",
                    "custom_id": custom_id,
                    "response": None,
                    "error": {"code": "server_error", "message": "The server had an error"},
                }
            )
            continue
        body = {
            "id": f"chatcmpl-{i}",
            "object": "chat.completion",
            "model": "m1-api-2026-01-01",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answers[custom_id]}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
        }
        lines.append(
            {
                "id": f"batch_req_{i}",
                "custom_id": custom_id,
                "response": {"status_code": 200, "request_id": f"req_{i}", "body": body},
                "error": None,
            }
        )
    return lines


def _anthropic_results(requests, answers):
    lines = []
    for i, request in enumerate(requests):
        custom_id = request["custom_id"]
        if custom_id == FAILED:
            lines.append(
                {
                    "custom_id": custom_id,
                    "result": {
                        "type": "errored",
                        "error": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                    },
                }
            )
            continue
        message = {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "model": "m1-api-2026-01-01",
            "content": [{"type": "text", "text": answers[custom_id]}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 120, "output_tokens": 12},
        }
        lines.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": message}})
    return lines


@pytest.mark.parametrize(
    ("fmt", "make_results"), [("openai-batch", _openai_results), ("anthropic-batch", _anthropic_results)]
)
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
    choices.write_text(
        "".join(
            json.dumps(
                {
                    "model": "m1-api-2026-01-01",
                    "task_id": task_id(f, k),
                    **({"choice": c} if c is not None and task_id(f, k) != FAILED else {"response": "no answer"}),
                }
            )
            + "\n"
            for (f, k), c in M1.items()
        )
    )
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
        "SELECT model, choice, invalid_reason, metadata FROM responses WHERE task_id = ?", [FAILED]
    ).fetchone()
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
        {
            "custom_id": task_id("F1", "source"),
            "error": None,
            "response": {
                "status_code": 200,
                "body": {
                    "model": "gpt",
                    "choices": [
                        {"message": {"content": None, "refusal": "I can't help with that."}, "finish_reason": "stop"}
                    ],
                },
            },
        },
        {
            "custom_id": task_id("F1", "shuffled"),
            "error": None,
            "response": {"status_code": 429, "body": {"error": {"message": "Rate limit"}}},
        },
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
    result = runner.invoke(app, ["load", "--responses", str(tmp_path / "requests.openai-batch.jsonl"), "--db", str(db)])
    assert result.exit_code == 2 and "batch request file" in result.output


def test_an_unknown_custom_id_is_named(tmp_path, bench):
    results = tmp_path / "out.jsonl"
    results.write_text(
        json.dumps(
            {
                "custom_id": "nope",
                "result": {
                    "type": "succeeded",
                    "message": {"model": "claude", "content": [{"type": "text", "text": "Answer: A"}]},
                },
            }
        )
        + "\n"
    )
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
    result = runner.invoke(
        app, ["load", "--responses", str(results), "--format", "anthropic-batch", "--model", "claude", "--db", str(db)]
    )
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT invalid_reason FROM responses").fetchall() == [("request_failed",)]
    con.close()


@pytest.mark.parametrize(
    ("fmt", "line"),
    [
        (
            "anthropic-batch",
            {"custom_id": "F1-p0", "response": {"status_code": 200, "body": {"model": "gpt"}}, "error": None},
        ),
        ("openai-batch", {"custom_id": "F1-p0", "result": {"type": "succeeded", "message": {"model": "claude"}}}),
    ],
)
def test_a_wrong_batch_format_is_refused_not_read_as_failures(tmp_path, bench, fmt, line):
    results = tmp_path / "out.jsonl"
    results.write_text(json.dumps(line) + "\n")
    db = _db(tmp_path, bench, "runs")
    result = runner.invoke(app, ["load", "--responses", str(results), "--format", fmt, "--model", "m", "--db", str(db)])
    assert result.exit_code == 2 and f"read as {fmt}" in result.output and "line 1" in result.output


# ------------------------------------------------------------ reasoning models: truncated answers, thinking

SOURCE, SHUFFLED, P0, CF_B = (task_id("F1", k) for k in ("source", "shuffled", "p0", "cf-B"))


def _openai_line(custom_id, *, content, finish_reason="stop", **message_extra):
    """One Batch API output line around a response built by the openai SDK's own ChatCompletion."""
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion(
        id=f"chatcmpl-{custom_id}",
        object="chat.completion",
        created=1_790_000_000,
        model="o3-2026-01-01",
        choices=[
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, **message_extra},
            }
        ],
        usage={
            "prompt_tokens": 120,
            "completion_tokens": 2048,
            "total_tokens": 2168,
            "completion_tokens_details": {"reasoning_tokens": 2048 if not content else 1900},
        },
    )
    return {
        "id": f"batch_req_{custom_id}",
        "custom_id": custom_id,
        "error": None,
        "response": {"status_code": 200, "request_id": f"req_{custom_id}", "body": completion.model_dump()},
    }


def _anthropic_line(custom_id, *, blocks, stop_reason="end_turn"):
    """One Message Batches result line around a message built by the anthropic SDK's own Message."""
    from anthropic.types import Message
    from anthropic.types.messages import MessageBatchIndividualResponse

    message = Message(
        id=f"msg_{custom_id}",
        type="message",
        role="assistant",
        model="claude-x-2026",
        content=blocks,
        stop_reason=stop_reason,
        stop_sequence=None,
        usage={"input_tokens": 120, "output_tokens": 9024},
    )
    line = MessageBatchIndividualResponse(custom_id=custom_id, result={"type": "succeeded", "message": message})
    return line.model_dump(mode="json")


def _parse_aside(text, family):
    """What the loader keeps of a cut answer: the parser's label, or its reason for none."""
    from molp2s_stats.ingest.answers import CandidateIndex, parse_answer
    from tests.support.tiny_benchmark import FAMILIES, SCAFFOLD, complete

    parsed = parse_answer(
        text,
        CandidateIndex(
            {label: (fragment, complete(SCAFFOLD, fragment)) for label, (fragment, _) in FAMILIES[family][1].items()}
        ),
    )
    return {"choice": parsed.choice} if parsed.choice else {"reason": parsed.reason}


def _load(tmp_path, bench, lines, name="results.jsonl"):
    results = tmp_path / name
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = _db(tmp_path, bench, name.split(".")[0])
    result = runner.invoke(app, ["load", "--responses", str(results), "--db", str(db)])
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    rows = {
        task: (response, choice, reason, json.loads(meta))
        for task, response, choice, reason, meta in con.execute(
            "SELECT task_id, response, choice, invalid_reason, metadata FROM responses"
        ).fetchall()
    }
    con.close()
    return result.output, rows


def test_openai_answers_cut_at_the_limit_are_truncated_and_reasoning_is_never_the_answer(tmp_path, bench):
    lines = [
        # all of max_completion_tokens went on hidden reasoning: no text at all
        _openai_line(SOURCE, content=None, finish_reason="length"),
        # cut after naming a letter: still truncated (the answer line comes last), the letter kept aside
        _openai_line(
            SHUFFLED, content="Candidate B has the larger dipole, so the answer is B, unless", finish_reason="length"
        ),
        # an OpenAI-compatible server's reasoning_content names A; the answer names C
        _openai_line(
            P0,
            content="The dipole fits C best.\nAnswer: C",
            reasoning_content="Maybe A? Answer: A. No, let me think again.",
        ),
        # an answer line, then cut while second-guessing it: truncated all the same
        _openai_line(CF_B, content="Answer: B\n\nThough the dipole of C, at 3.0 D, might", finish_reason="length"),
    ]
    output, rows = _load(tmp_path, bench, lines)
    assert rows[CF_B][1:3] == (None, "truncated") and rows[CF_B][3]["truncated_parse"] == {"choice": "B"}
    assert rows[SOURCE][1:3] == (None, "truncated")
    assert rows[SHUFFLED][1:3] == (None, "truncated")
    # what the parser reads in the cut text is kept aside (its rules are the parser's own)
    assert rows[SHUFFLED][3]["truncated_parse"] == _parse_aside(rows[SHUFFLED][0], "F1")
    assert rows[SOURCE][3]["truncated_parse"] == {"reason": "no_answer"}  # no text at all
    assert rows[SOURCE][3]["finish_reason"] == "length"
    assert rows[SOURCE][3]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 2048
    response, choice, reason, meta = rows[P0]
    assert (choice, reason) == ("C", None)
    assert "Maybe A" not in response and meta["reasoning_chars"] == len("Maybe A? Answer: A. No, let me think again.")
    assert "Maybe A" not in json.dumps(meta)  # its size is kept, not its text
    assert "o3-2026-01-01: 3 of 4 answers truncated at the token limit" in output
    assert "--max-tokens" in output and "--reasoning-effort" in output


def test_anthropic_thinking_is_left_out_and_max_tokens_is_truncated(tmp_path, bench):
    from anthropic.types import RedactedThinkingBlock, TextBlock, ThinkingBlock

    thought = "Candidate A is tempting. Answer: A? But the dipole says otherwise."
    lines = [
        _anthropic_line(
            SOURCE,
            blocks=[
                ThinkingBlock(type="thinking", thinking=thought, signature="sig"),
                TextBlock(type="text", text="The dipole fits B.\nAnswer: B"),
            ],
        ),
        # the budget ran into max_tokens: thinking only, no text
        _anthropic_line(
            SHUFFLED,
            blocks=[ThinkingBlock(type="thinking", thinking=thought, signature="sig")],
            stop_reason="max_tokens",
        ),
        _anthropic_line(
            P0,
            blocks=[
                RedactedThinkingBlock(type="redacted_thinking", data="opaque"),
                TextBlock(type="text", text="Answer: C"),
            ],
        ),
    ]
    output, rows = _load(tmp_path, bench, lines)
    response, choice, reason, meta = rows[SOURCE]
    assert (response, choice, reason) == ("The dipole fits B.\nAnswer: B", "B", None)
    assert (meta["thinking_blocks"], meta["redacted_thinking_blocks"], meta["thinking_chars"]) == (1, 0, len(thought))
    assert thought not in json.dumps(meta)
    assert rows[SHUFFLED][:3] == ("", None, "truncated") and rows[SHUFFLED][3]["stop_reason"] == "max_tokens"
    assert rows[P0][1] == "C" and rows[P0][3]["redacted_thinking_blocks"] == 1
    assert "claude-x-2026: 1 of 3 answers truncated at the token limit" in output
    assert "--max-tokens" in output and "--thinking-budget" in output


def test_a_refusal_cut_at_the_limit_stays_a_refusal_and_a_failed_request_stays_failed(tmp_path, bench):
    lines = [
        _openai_line(SOURCE, content=None, finish_reason="length", refusal="I can't help with that."),
        {"custom_id": SHUFFLED, "response": None, "error": {"code": "server_error", "message": "boom"}},
    ]
    output, rows = _load(tmp_path, bench, lines)
    assert rows[SOURCE][2] == "refusal" and rows[SHUFFLED][2] == "request_failed"
    assert "truncated" not in output


@pytest.mark.parametrize(
    ("suffix", "write"),
    [
        ("jsonl", lambda path, rows: path.write_text("".join(json.dumps(r) + "\n" for r in rows))),
        ("csv", lambda path, rows: pl.DataFrame(rows).write_csv(path)),
        ("parquet", lambda path, rows: pl.DataFrame(rows).write_parquet(path)),
    ],
)
def test_a_raw_file_whose_metadata_says_the_limit_cut_it_is_truncated(tmp_path, bench, suffix, write):
    rows = [
        {
            "model": "m",
            "task_id": SOURCE,
            "response": "A fits, so Answer: A",
            "finish_reason": "length",
            "stop_reason": None,
        },
        {
            "model": "m",
            "task_id": SHUFFLED,
            "response": "Thinking about C",
            "finish_reason": None,
            "stop_reason": "max_tokens",
        },
        {"model": "m", "task_id": P0, "response": "Answer: B", "finish_reason": "stop", "stop_reason": None},
    ]
    path = tmp_path / f"raw.{suffix}"
    write(path, rows)
    if suffix == "jsonl":  # extras nested under "metadata" say it as well
        nested = {
            "model": "m",
            "task_id": task_id("F2", "source"),
            "response": "Answer: B",
            "metadata": {"finish_reason": "length", "latency_s": 3.2},
        }
        path.write_text(path.read_text() + json.dumps(nested) + "\n")
    db = _db(tmp_path, bench, "raw")
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    got = dict(con.execute("SELECT task_id, coalesce(choice, invalid_reason) FROM responses").fetchall())
    con.close()
    nested = {task_id("F2", "source"): "truncated"} if suffix == "jsonl" else {}
    assert got == {SOURCE: "truncated", SHUFFLED: "truncated", P0: "B", **nested}
    assert f"m: {2 + len(nested)} of {3 + len(nested)} answers truncated at the token limit" in result.output
    assert "--max-tokens" in result.output


def test_a_given_choice_is_kept_even_when_the_limit_cut_the_text(tmp_path, bench):
    # the user's own parse is theirs to make; the metadata still says what happened
    path = tmp_path / "given.jsonl"
    path.write_text(json.dumps({"model": "m", "task_id": SOURCE, "choice": "A", "finish_reason": "length"}) + "\n")
    db = _db(tmp_path, bench, "given")
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT choice, invalid_reason, metadata ->> '$.finish_reason' FROM responses").fetchall() == [
        ("A", None, "length")
    ]
    con.close()
