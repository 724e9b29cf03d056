"""The installed Inspect AI task: samples carry the rendered prompts, the scorer is the project's parser,
and a log of it loads with `molp2s load` and gives the metrics of the same answers given as choices."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from molp2s_stats import prompts, store
from molp2s_stats.cli import app
from molp2s_stats.ingest import read_benchmark
from molp2s_stats.inspect_task import molp2s, samples
from molp2s_stats.stats import metrics
from tests.support.tiny_benchmark import M1, task_id, write_benchmark

runner = CliRunner()


def test_samples_carry_the_rendered_messages(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    chosen = samples(str(bench), channel="dipole_norm", condition="source,cf")
    tables = read_benchmark(bench)
    rendered = prompts.render_prompts(tables, channels=["dipole_norm"], conditions=["source", "cf"])
    assert [s.id for s in chosen] == rendered["task_id"].to_list()
    first, row = chosen[0], rendered.row(0, named=True)
    assert [m.role for m in first.input] == ["system", "user"]
    assert first.input[0].content == row["system"] and first.input[1].content == row["prompt"]
    assert first.target == row["target"] and first.metadata["template"] == prompts.TEMPLATE
    family = tables["candidates"].filter(tables["candidates"]["family_id"] == row["family_id"])
    assert set(first.metadata["candidates"]) == set(family["label"])


def test_inspect_round_trip_on_the_mock_model(tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    bench = write_benchmark(tmp_path / "bench")
    task = molp2s(benchmark=str(bench))
    texts = {
        task_id(f, k): ("I cannot tell." if c is None else f"B looks plausible, but the dipole fits {c}.\nAnswer: {c}")
        for (f, k), c in M1.items()
    }
    order = [s.id for s in task.dataset]
    # usage given: otherwise the mock counts tokens with tiktoken, which downloads its encoding
    outputs = [
        ModelOutput.from_content(model="mockllm/model", content=texts[t]).model_copy(
            update={"usage": ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)}
        )
        for t in order
    ]
    logs = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
    log = logs[0]
    assert log.status == "success"
    location = log.location.removeprefix("file://")

    db = tmp_path / "inspect.duckdb"
    result = runner.invoke(app, ["load", "--benchmark", str(bench), "--responses", location, "--db", str(db)])
    assert result.exit_code == 0, result.output
    choices = tmp_path / "choices.jsonl"
    choices.write_text(
        "".join(
            json.dumps(
                {
                    "model": "mockllm/model",
                    "task_id": task_id(f, k),
                    **({"choice": c} if c else {"response": "no answer"}),
                }
            )
            + "\n"
            for (f, k), c in M1.items()
        )
    )
    db2 = tmp_path / "choices.duckdb"
    assert (
        runner.invoke(app, ["load", "--benchmark", str(bench), "--responses", str(choices), "--db", str(db2)]).exit_code
        == 0
    )

    def read(path):
        con = store.connect(path, read_only=True)
        try:
            table = metrics.metrics_from_db(con, draws=0).select("model", "channel", "metric", "estimate", "n")
            right = con.execute("SELECT avg(y) FROM task_outcomes").fetchone()[0]
            template = con.execute("SELECT DISTINCT metadata ->> '$.template' FROM responses").fetchall()
            return table, right, template
        finally:
            con.close()

    from_log, right, template = read(db)
    from_choices, _, _ = read(db2)
    assert from_log.equals(from_choices)
    # Inspect's accuracy counts exactly the answers the project's parser counts right
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert accuracy == pytest.approx(right)
    assert template == [(prompts.TEMPLATE,)]


@pytest.mark.skipif(
    shutil.which("inspect", path=os.path.dirname(sys.executable)) is None,
    reason="the inspect command is not installed beside this Python",
)
def test_inspect_cli_finds_the_installed_task_from_any_folder(tmp_path):
    bench = write_benchmark(tmp_path / "bench")
    inspect = Path(sys.executable).parent / "inspect"
    run = subprocess.run(
        [
            str(inspect),
            "eval",
            "molp2s_stats/molp2s",
            "--model",
            "mockllm/model",
            "--limit",
            "3",
            "-T",
            f"benchmark={bench}",
            "--log-dir",
            str(tmp_path / "logs"),
            "--display",
            "none",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = sorted((tmp_path / "logs").glob("*.eval"))
    assert found, run.stdout + run.stderr
    db = tmp_path / "cli.duckdb"
    result = runner.invoke(app, ["load", "--benchmark", str(bench), "--responses", str(found[0]), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "3 rows" in result.output


def test_the_scorer_counts_an_answer_cut_at_the_token_limit_as_wrong(tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    bench = write_benchmark(tmp_path / "bench")
    task = molp2s(benchmark=str(bench), channel="dipole_norm", condition="source")
    targets = {s.id: s.target for s in task.dataset}
    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    # every answer names its target; the first was cut at the limit on the way there
    outputs = [
        ModelOutput.from_content(
            model="mockllm/model", content=f"Answer: {targets[s.id]}", stop_reason="max_tokens" if i == 0 else "stop"
        ).model_copy(update={"usage": usage})
        for i, s in enumerate(task.dataset)
    ]
    log = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=outputs),
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )[0]
    scores = [s.scores["molp2s_answer"] for s in log.samples]
    assert [(s.value, s.explanation) for s in scores[:1]] == [("I", "truncated")]
    assert all(s.value == "C" for s in scores[1:])
    # the loader counts it as the scorer does
    db = tmp_path / "inspect.duckdb"
    result = runner.invoke(
        app, ["load", "--benchmark", str(bench), "--responses", log.location.removeprefix("file://"), "--db", str(db)]
    )
    assert result.exit_code == 0, result.output
    con = store.connect(db, read_only=True)
    assert con.execute(
        "SELECT count(*) FILTER (invalid_reason = 'truncated'), count(*) FILTER (choice IS NOT NULL) FROM responses"
    ).fetchone() == (1, len(scores) - 1)
    con.close()
