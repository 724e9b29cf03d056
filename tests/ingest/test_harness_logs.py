"""Issue 7: evaluation-harness logs load as they are. A real Inspect AI log written by
inspect_ai's mock model provider (no network), and lm-evaluation-harness samples files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from molp2s_stats import store
from molp2s_stats.cli import app
from tests.support.tiny_benchmark import FAMILIES, SCAFFOLD, complete, task_id, write_benchmark

runner = CliRunner()


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "runs.duckdb"
    result = runner.invoke(app, ["load", "--benchmark", str(write_benchmark(tmp_path / "bench")), "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


def _rows(db, sql):
    con = store.connect(db, read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


def _checksum(db):
    return _rows(db, "SELECT count(*), coalesce(sum(hash(model, task_id, sample, attempt, choice)), 0) FROM responses")


# ---------------------------------------------------------------- Inspect AI


def _inspect_log(folder, answers: list[tuple[str, str]], *, epochs: int = 1):
    """Run a real Inspect eval on the mock model: one sample per (task_id, completion)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match

    dataset = [
        Sample(input=f"Pick the missing fragment for {tid}.", target="A", id=f"s{i}", metadata={"task_id": tid})
        for i, (tid, _) in enumerate(answers)
    ]
    # usage given: otherwise the mock counts tokens with tiktoken, which downloads its encoding
    outputs = [
        ModelOutput.from_content(model="mockllm/model", content=text).model_copy(
            update={"usage": ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)}
        )
        for _ in range(epochs)
        for _, text in answers
    ]
    model = get_model("mockllm/model", custom_outputs=outputs)
    logs = eval(
        Task(dataset=dataset, scorer=match()),
        model=model,
        epochs=epochs,
        log_dir=str(folder),
        display="none",
        max_samples=1,
    )
    assert logs[0].status == "success"
    return folder / logs[0].location.rsplit("/", 1)[-1] if "://" in logs[0].location else logs[0].location


def test_inspect_log_loads_with_epochs_as_samples(db, tmp_path):
    answers = [
        (task_id("F1", "source"), "Answer: A"),
        (task_id("F2", "source"), "The answer is (C)."),
        (task_id("F3", "source"), "I cannot tell."),
    ]
    log = _inspect_log(tmp_path / "logs", answers, epochs=2)
    result = runner.invoke(app, ["load", "--responses", str(log), "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = _rows(
        db,
        "SELECT model, task_id, sample, choice, invalid_reason IS NOT NULL, metadata "
        "FROM responses ORDER BY task_id, sample",
    )
    assert len(rows) == 6  # 3 samples × 2 epochs
    assert {r[0] for r in rows} == {"mockllm/model"}
    assert [(r[1], r[2], r[3]) for r in rows[:2]] == [
        (task_id("F1", "source"), 0, "A"),
        (task_id("F1", "source"), 1, "A"),
    ]
    assert [r[3] for r in rows if r[1] == task_id("F2", "source")] == ["C", "C"]
    assert all(r[4] for r in rows if r[1] == task_id("F3", "source"))  # invalid, kept, not dropped
    meta = json.loads(rows[0][5])
    assert meta["epoch"] == 1 and meta["inspect_sample_id"] == "s0" and "match" in meta["scores"]
    # the same log again adds nothing
    again = runner.invoke(app, ["load", "--responses", str(log), "--db", str(db)])
    assert again.exit_code == 0 and "already loaded" in again.output


def test_inspect_log_with_an_unknown_task_is_refused_and_nothing_changes(db, tmp_path):
    log = _inspect_log(tmp_path / "logs", [(task_id("F1", "source"), "A"), ("no-such-task", "B")])
    before = _checksum(db)
    result = runner.invoke(app, ["load", "--responses", str(log), "--db", str(db)])
    assert result.exit_code == 2
    assert (
        str(log) in result.output and "sample 2" in result.output and "unknown task_id 'no-such-task'" in result.output
    )
    assert _checksum(db) == before


def test_a_broken_inspect_log_names_the_file(db, tmp_path):
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    result = runner.invoke(app, ["load", "--responses", str(bad), "--db", str(db)])
    assert result.exit_code == 2 and "not a readable Inspect AI log" in result.output and str(bad) in result.output


def _parse_aside(text, family):
    """What the loader keeps of a cut answer: the parser's label, or its reason for none."""
    from molp2s_stats.ingest.answers import CandidateIndex, parse_answer

    parsed = parse_answer(
        text,
        CandidateIndex(
            {label: (fragment, complete(SCAFFOLD, fragment)) for label, (fragment, _) in FAMILIES[family][1].items()}
        ),
    )
    return {"choice": parsed.choice} if parsed.choice else {"reason": parsed.reason}


def _inspect_outputs_log(folder, outputs, **task_options):
    """A real Inspect eval on the mock model with the given ModelOutputs, one sample per (task_id, output)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelUsage, get_model
    from inspect_ai.scorer import match

    dataset = [
        Sample(input=f"Pick the missing fragment for {tid}.", target="A", id=f"s{i}", metadata={"task_id": tid})
        for i, (tid, _) in enumerate(outputs)
    ]
    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # so the mock needs no tokenizer
    model = get_model("mockllm/model", custom_outputs=[o.model_copy(update={"usage": usage}) for _, o in outputs])
    logs = eval(
        Task(dataset=dataset, scorer=match(), **task_options),
        model=model,
        log_dir=str(folder),
        display="none",
        max_samples=1,
    )
    return logs[0].location.removeprefix("file://")


def test_inspect_answers_cut_at_the_token_limit_are_truncated_and_reasoning_is_never_the_answer(db, tmp_path):
    from inspect_ai.model import ContentReasoning, ContentText, ModelOutput

    def output(content, stop_reason="stop"):
        return ModelOutput.from_content(model="mockllm/model", content=content, stop_reason=stop_reason)

    log = _inspect_outputs_log(
        tmp_path / "logs",
        [
            # max_tokens: cut mid-sentence, after naming B; model_length: the context window ran out
            (task_id("F1", "source"), output("B has the larger dipole, so Answer: B, unless", "max_tokens")),
            (task_id("F2", "source"), output("", "model_length")),
            # the reasoning part names A; the answer B
            (
                task_id("F3", "source"),
                output([ContentReasoning(reasoning="Answer: A? No."), ContentText(text="Answer: B")]),
            ),
        ],
    )
    result = runner.invoke(app, ["load", "--responses", str(log), "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = {
        t: (r, c, why, json.loads(m))
        for t, r, c, why, m in _rows(db, "SELECT task_id, response, choice, invalid_reason, metadata FROM responses")
    }
    assert rows[task_id("F1", "source")][1:3] == (None, "truncated")
    assert rows[task_id("F1", "source")][3]["stop_reason"] == "max_tokens"
    assert rows[task_id("F1", "source")][3]["truncated_parse"] == _parse_aside(rows[task_id("F1", "source")][0], "F1")
    assert rows[task_id("F2", "source")][1:3] == (None, "truncated")
    response, choice, reason, meta = rows[task_id("F3", "source")]
    assert (response, choice, reason) == ("Answer: B", "B", None)
    assert (meta["reasoning_parts"], meta["reasoning_chars"]) == (1, len("Answer: A? No."))
    assert "mockllm/model: 2 of 3 answers truncated at the token limit" in result.output
    assert "inspect eval --max-tokens" in result.output


def test_an_inspect_sample_stopped_by_its_token_limit_is_truncated(db, tmp_path):
    from inspect_ai.model import ModelOutput

    # the mock reports 15 tokens a call; a sample limit of 10 stops the sample after the first
    log = _inspect_outputs_log(
        tmp_path / "logs",
        [(task_id("F1", "source"), ModelOutput.from_content(model="mockllm/model", content="Answer: A"))],
        token_limit=10,
    )
    result = runner.invoke(app, ["load", "--responses", str(log), "--db", str(db)])
    assert result.exit_code == 0, result.output
    [(choice, reason, metadata)] = _rows(db, "SELECT choice, invalid_reason, metadata FROM responses")
    assert (choice, reason) == (None, "truncated")
    assert json.loads(metadata)["limit"] == {"type": "token", "limit": 10.0}


# ---------------------------------------------------------------- lm-evaluation-harness


def _lm_eval_file(folder, records):
    folder.mkdir(parents=True)
    path = folder / "samples_molp2s_2026-11-29T10-00-00.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_lm_eval_samples_load_from_a_folder_with_the_model_named_by_it(db, tmp_path):
    records = [
        {
            "doc_id": 0,
            "doc": {"task_id": task_id("F1", "source")},
            "target": "A",
            "resps": [["Answer: B"]],
            "filtered_resps": ["B"],
            "acc": 0.0,
        },
        {
            "doc_id": 1,
            "doc": {"task_id": task_id("F2", "source")},
            "target": "B",
            "resps": [["**B**"]],
            "filtered_resps": ["**B**"],
            "acc": 1.0,
        },
    ]
    folder = tmp_path / "runs" / "org__model-7b"
    _lm_eval_file(folder, records)
    # lm-eval's aggregate results file sits beside the samples: a folder load passes it over
    (folder / "results_2026-11-29T10-00-00.json").write_text(json.dumps({"results": {"molp2s": {"acc": 0.5}}}))
    result = runner.invoke(app, ["load", "--responses", str(folder), "--db", str(db)])
    assert result.exit_code == 0, result.output
    rows = _rows(db, "SELECT model, task_id, choice, response, metadata FROM responses ORDER BY task_id")
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("org__model-7b", task_id("F1", "source"), "B", "B"),
        ("org__model-7b", task_id("F2", "source"), "B", "**B**"),
    ]
    assert json.loads(rows[0][4])["doc_id"] == 0
    named = runner.invoke(
        app,
        [
            "load",
            "--responses",
            str(
                _lm_eval_file(
                    tmp_path / "other", [{"doc_id": 0, "doc": {"task_id": task_id("F3", "source")}, "resps": [["A"]]}]
                )
            ),
            "--model",
            "named",
            "--db",
            str(db),
        ],
    )
    assert named.exit_code == 0, named.output
    assert _rows(db, "SELECT model FROM responses WHERE task_id = 'F3-dipole_norm-source'") == [("named",)]


def test_lm_eval_repeats_are_samples(db, tmp_path):
    path = _lm_eval_file(
        tmp_path / "m", [{"doc_id": 0, "doc": {"task_id": task_id("F1", "source")}, "resps": [["A"], ["B"], ["C"]]}]
    )
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert _rows(db, "SELECT sample, choice FROM responses ORDER BY sample") == [(0, "A"), (1, "B"), (2, "C")]


def test_lm_eval_record_without_text_names_its_line(db, tmp_path):
    path = _lm_eval_file(
        tmp_path / "m",
        [{"doc_id": 0, "doc": {"task_id": task_id("F1", "source")}, "resps": [["A"]]}, {"doc_id": 1, "resps": [[]]}],
    )
    before = _checksum(db)
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db), "--format", "lm-eval"])
    assert result.exit_code == 2 and "line 2" in result.output and "no text" in result.output
    assert _checksum(db) == before


def test_unknown_format_and_empty_folder_are_clear_errors(db, tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["load", "--responses", str(tmp_path / "empty"), "--db", str(db)])
    assert result.exit_code == 2 and "folder holds no response files" in result.output
    path = _lm_eval_file(tmp_path / "m", [{"doc_id": 0, "resps": [["A"]]}])
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db), "--format", "xml"])
    assert result.exit_code == 2 and "unknown format 'xml'" in result.output


def test_a_quoted_glob_loads_every_match(db, tmp_path):
    for i, family in enumerate(("F1", "F2")):
        (tmp_path / f"run{i}.jsonl").write_text(
            json.dumps({"model": f"m{i}", "task_id": task_id(family, "source"), "choice": "A"}) + "\n"
        )
    result = runner.invoke(app, ["load", "--responses", str(tmp_path / "run*.jsonl"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert _rows(db, "SELECT model FROM responses ORDER BY model") == [("m0",), ("m1",)]
    none = runner.invoke(app, ["load", "--responses", str(tmp_path / "nothing*.jsonl"), "--db", str(db)])
    assert none.exit_code == 2 and "no file matches this pattern" in none.output


def test_lm_eval_does_not_record_truncation_but_a_finish_reason_it_carries_counts(db, tmp_path):
    # lm-eval's samples say nothing of why generation stopped: a cut answer is read as text;
    # a record that does carry a finish_reason (a later version, a post-processed file) is honoured
    path = _lm_eval_file(
        tmp_path / "m",
        [
            {"doc_id": 0, "doc": {"task_id": task_id("F1", "source")}, "resps": [["Answer: A"]]},
            {
                "doc_id": 1,
                "doc": {"task_id": task_id("F2", "source")},
                "resps": [["Answer: B"]],
                "finish_reason": "length",
            },
        ],
    )
    result = runner.invoke(app, ["load", "--responses", str(path), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert _rows(db, "SELECT task_id, choice, invalid_reason FROM responses ORDER BY task_id") == [
        (task_id("F1", "source"), "A", None),
        (task_id("F2", "source"), None, "truncated"),
    ]
