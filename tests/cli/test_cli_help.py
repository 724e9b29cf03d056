"""Help that teaches: every command's --help ends with one example that runs on the package's
default data, the examples run (in a fresh folder, as a user at the checkout's root would run
them, after `molp2s load`; each a process forked from a warm interpreter,
tests/support/warm_cli.py), and the common mistakes get one line that says what to type instead.

An example that a page of the docs types as it stands (the fit and the posterior on the Model page,
the report in the README) runs there, in the same kind of folder after the same load, and is not
run a second time here (about 40 s of the suite): the docs test fails if it does not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from molp2s_stats.cli import app
from tests.support import DATA
from tests.support.docs_blocks import documents_run, read_blocks, typed_commands
from tests.support.warm_cli import warm_jupyter_path

MOLP2S = Path(sys.executable).parent / "molp2s"
COMMANDS = typer.main.get_command(app).commands

# Every command, in the order its example can run: load first; a command after the one whose
# output it reads (posterior and report read fit's fit.nc, estimate reads plan's plan). estimate
# runs last: the partial model it loads would otherwise be in every later example's database.
ORDER = [
    "load",
    "prompts",
    "metrics",
    "plan",
    "explanations",
    "compare-inputs",
    "transitions",
    "cohort",
    "stability",
    "ranks",
    "power",
    "variance",
    "design",
    "frequentist",
    "separability",
    "audit",
    "check",
    "simulate",
    "sql",
    "demo",
    "fit",
    "posterior",
    "report",
    "estimate",
]
NEEDS = {"posterior": ["fit"], "report": ["fit"], "estimate": ["plan"]}
runner = CliRunner()


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in (text or "").split("\n\n") if p.strip()]


def example(name: str) -> str:
    """The command line of ``name``'s example (its help's last paragraph)."""
    return " ".join(_paragraphs(COMMANDS[name].help)[-1].removeprefix("Example:").split())


def test_every_command_is_in_the_examples_order():
    assert sorted(ORDER) == sorted(COMMANDS), "a new command: give its example a place in ORDER"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_ends_with_one_example_of_the_command(name):
    text = COMMANDS[name].help
    assert text.count("Example:") == 1, text
    last = _paragraphs(text)[-1]
    assert last == f"Example: molp2s {name}" or last.startswith(f"Example: molp2s {name} "), last
    assert "\n" not in last, f"one command line: {last!r}"
    assert "runs.duckdb" not in last and "*" not in last  # a default path; no pattern the shell must expand


def _environment() -> dict[str, str]:
    """This environment without the variables that would point the examples away from their defaults."""
    return {k: v for k, v in os.environ.items() if k not in ("MOLP2S_DB", "MOLP2S_FIT", "MOLP2S_DEBUG")}


class Folder:
    """A fresh folder with ``data`` linking to the repository's data/, where examples run once each."""

    def __init__(self, path: Path, molp2s: Path):
        self.path = path
        self.molp2s = molp2s
        (path / "data").symlink_to(DATA, target_is_directory=True)
        self.done: dict[str, subprocess.CompletedProcess] = {}

    def run(self, line: str) -> subprocess.CompletedProcess:
        args = shlex.split(line)
        assert args[0] == "molp2s"
        result = subprocess.run(
            [str(self.molp2s), *args[1:]],
            cwd=self.path,
            env={**_environment(), "JUPYTER_PATH": warm_jupyter_path(self.molp2s.parent)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, f"{line}\nexit {result.returncode}\n{result.stderr[-4000:]}"
        return result

    def example(self, name: str) -> subprocess.CompletedProcess:
        """Run ``name``'s example after the ones it needs (each once)."""
        for before in ["load", *NEEDS.get(name, [])]:
            if before != name and before not in self.done:
                self.example(before)
        if name not in self.done:
            if name == "estimate":  # its help says how to make a partial model of the default data first
                for line in _recipe("estimate"):
                    self.run(line)
            self.done[name] = self.run(example(name))
        return self.done[name]


def _recipe(name: str) -> list[str]:
    """The commands quoted in the help's "To try it on the default data" paragraph, but the plan,
    which its own example has made."""
    paragraph = next(p for p in _paragraphs(COMMANDS[name].help) if p.startswith("To try it on the default data"))
    lines = [" ".join(quoted.split()) for quoted in re.findall(r"`([^`]+)`", paragraph)]
    return [line for line in lines if line.startswith("molp2s ") and not line.startswith("molp2s plan ")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, warm_commands):
    assert MOLP2S.exists(), f"the console script is not installed beside {sys.executable}"
    return Folder(tmp_path_factory.mktemp("examples"), warm_commands / "molp2s")


def run_by_the_docs() -> dict[str, str]:
    """{command: where a document the docs test runs types its example, word for word}."""
    typed = {}
    for document in documents_run():
        for block in read_blocks(document):
            if block.language == "bash" and not block.skipped:
                typed.update({tuple(words): block.where for words in typed_commands(block)})
    return {name: typed[words] for name in ORDER if (words := tuple(shlex.split(example(name)))) in typed}


# the examples run here: the load as well, which every other one reads
RUN_HERE = [name for name in ORDER if name == "load" or name not in run_by_the_docs()]


def test_the_examples_the_docs_run_are_the_slow_ones():
    """The fit and the report (20 s and 25–80 s on two busy cores) and the posterior after the fit
    run in the docs test. Where an edit to an example or to the page that types it makes the two
    differ, the example runs here again, and this test asks for a look (they are this file's minute)."""
    assert {"fit", "posterior", "report"} <= set(run_by_the_docs()), run_by_the_docs()


@pytest.mark.parametrize("name", RUN_HERE)
def test_the_example_runs(folder, name):
    result = folder.example(name)
    assert result.returncode == 0


def test_the_examples_write_what_the_next_ones_read(folder):
    folder.example("plan")
    folder.example("prompts")
    assert (folder.path / "molp2s.duckdb").exists()
    assert (folder.path / "plan.csv").exists() and (folder.path / "requests.jsonl").exists()


# --- common mistakes: one line, what to type instead ------------------------------------------


def _one_error_line(result) -> str:
    assert result.exit_code != 0, result.output
    text = result.output.strip()
    assert "Traceback" not in text and "\n" not in text, text
    assert text.startswith("error: "), text
    return text


@pytest.fixture
def here(folder, monkeypatch):
    """The examples' folder as the current one, its database loaded."""
    folder.example("load")
    monkeypatch.chdir(folder.path)
    monkeypatch.delenv("MOLP2S_DB", raising=False)
    return folder.path


def test_a_database_that_is_not_there_says_how_to_build_it(here):
    line = _one_error_line(runner.invoke(app, ["metrics", "--db", "runs.duckdb"]))
    assert line == (
        "error: runs.duckdb: no such database; build it from the default data with `molp2s load "
        "--benchmark data/benchmark --responses data/responses --db runs.duckdb`, or leave out --db to use "
        "the default molp2s.duckdb"
    )
    # a command that writes (plan records its plan) does not create it either
    line = _one_error_line(runner.invoke(app, ["plan", "--db", "runs.duckdb", "--fraction", "0.1", "--out", "p.csv"]))
    assert "runs.duckdb: no such database" in line
    assert not (here / "runs.duckdb").exists()
    line = _one_error_line(runner.invoke(app, ["check", "--db", "runs.duckdb"]))
    assert "`molp2s load --benchmark data/benchmark --responses data/responses --db runs.duckdb`" in line


def test_the_default_database_not_built_yet_says_the_load_to_type(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MOLP2S_DB", raising=False)
    (tmp_path / "data").symlink_to(DATA, target_is_directory=True)
    line = _one_error_line(runner.invoke(app, ["cohort"]))
    assert line == (
        "error: molp2s.duckdb: no such database; build it from the default data with "
        "`molp2s load --benchmark data/benchmark --responses data/responses`"
    )


def test_a_wrong_benchmark_or_response_path_names_the_one_meant(here):
    line = _one_error_line(runner.invoke(app, ["load", "--benchmark", "data/benchmrk", "--db", "new.duckdb"]))
    assert line == "error: data/benchmrk: no such folder; did you mean --benchmark data/benchmark? nothing was loaded"
    line = _one_error_line(
        runner.invoke(
            app,
            [
                "load",
                "--benchmark",
                "data/benchmark",
                "--responses",
                "data/responses/sim-weak.jsonl",
                "--db",
                "new.duckdb",
            ],
        )
    )
    assert line.startswith(
        "error: data/responses/sim-weak.jsonl: no such file or folder; did you mean "
        "--responses data/responses/sim-weak.parquet"
    )
    assert line.endswith("nothing was loaded")
    line = _one_error_line(runner.invoke(app, ["load", "--responses", "elsewhere/answers.jsonl"]))
    assert line == (
        "error: elsewhere/answers.jsonl: no such file or folder; the package's default data is "
        "--responses data/responses; nothing was loaded"
    )
    assert not (here / "new.duckdb").exists()


def test_a_database_without_responses_says_the_load_to_type(here):
    result = runner.invoke(app, ["load", "--benchmark", "data/benchmark", "--db", "bare.duckdb"])
    assert result.exit_code == 0, result.output
    for command in (["metrics"], ["ranks"], ["power"], ["transitions", "--channel", "ir"]):
        line = _one_error_line(runner.invoke(app, [*command, "--db", "bare.duckdb"]))
        assert line == (
            "error: bare.duckdb: a benchmark but no responses loaded; load them with "
            "`molp2s load --responses data/responses --db bare.duckdb`"
        ), command


@pytest.mark.parametrize(
    "args, option",
    [
        (["metrics", "--channel", "dipol"], "--channel"),
        (["ranks", "--channel", "dipol"], "--channel"),
        (["transitions", "--channel", "dipol"], "--channel"),
        (["fit", "--channel", "dipol"], "--channel"),
        (["prompts", "--channel", "dipol", "--out", "x.jsonl"], "--channel"),
        (["compare-inputs", "--from", "dipol", "--to", "all"], "--from"),
    ],
)
def test_an_unknown_channel_names_the_closest(here, args, option):
    line = _one_error_line(runner.invoke(app, args))
    assert line.startswith(
        f"error: unknown channel 'dipol'; did you mean {option} dipole_norm or {option} dipole_vector? known: "
    ), line
    assert "ir, raman" in line


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["transitions", "--channel", "ir", "--model-a", "sim-generalst", "--model-b", "sim-weak"],
            "unknown model 'sim-generalst'; did you mean --model-a sim-generalist? known: ",
        ),
        (
            ["compare-inputs", "--from", "ir", "--to", "all", "--model", "sim-nosy"],
            "unknown model 'sim-nosy'; did you mean --model sim-noisy",
        ),
        (["estimate", "--model", "sim-weak-model"], "unknown model 'sim-weak-model'; did you mean --model sim-weak"),
    ],
)
def test_an_unknown_model_names_the_closest(here, args, expected):
    line = _one_error_line(runner.invoke(app, args))
    assert line.startswith(f"error: {expected}"), line
    assert "sim-generalist, " in line


def test_a_bad_response_file_in_a_fresh_process_is_one_line_and_leaves_no_database(tmp_path):
    """In the console script (the lazily imported ingest package not yet loaded), as a user meets it."""
    from tests.support.tiny_benchmark import write_benchmark

    bench = write_benchmark(tmp_path / "bench")
    (tmp_path / "bad.jsonl").write_text('{"model": "m", "task_id": "nope"}\n')
    result = subprocess.run(
        [str(MOLP2S), "load", "--benchmark", str(bench), "--responses", "bad.jsonl", "--db", "new.duckdb"],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith("error: bad.jsonl: line 1: ") and "\n" not in result.stderr.strip()
    assert result.stderr.strip().endswith("; nothing was loaded, the database is unchanged")
    assert not (tmp_path / "new.duckdb").exists()
