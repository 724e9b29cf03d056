"""The molp2s commands end to end on the tiny benchmark."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats.cli import app
from tests.support.tiny_benchmark import write_benchmark, write_responses

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    bench = write_benchmark(root / "bench")
    files = write_responses(root / "responses")
    path = root / "cli.duckdb"
    args = ["load", "--benchmark", str(bench), "--db", str(path)]
    for f in files:
        args += ["--responses", str(f)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "m1.jsonl: 22 rows (2 parsed from text, 1 invalid)" in result.output
    again = runner.invoke(app, args)
    assert "already loaded, nothing added" in again.output
    return path


def test_metrics_csv_and_json(db, tmp_path):
    result = runner.invoke(app, ["metrics", "--db", str(db), "--metric", "pgr", "--bootstrap", "50", "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.columns == [
        "model",
        "channel",
        "metric",
        "estimate",
        "conf_low",
        "conf_high",
        "conf_level",
        "n",
        "method",
        "draws",
        "draws_undefined",
        "seed",
        "invalid",
        "baseline",
    ]
    assert frame["estimate"].to_list() == pytest.approx([50.0, 200 / 3])
    out = tmp_path / "m.json"
    result = runner.invoke(app, ["metrics", "--db", str(db), "--bootstrap", "0", "--format", "json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())) == 2 * 10


def test_metrics_parquet_needs_out_file(db, tmp_path):
    out = tmp_path / "m.parquet"
    assert (
        runner.invoke(
            app, ["metrics", "--db", str(db), "--bootstrap", "0", "--format", "parquet", "--out", str(out)]
        ).exit_code
        == 0
    )
    assert pl.read_parquet(out).height == 20


def test_env_var_names_the_database(db, monkeypatch):
    monkeypatch.setenv("MOLP2S_DB", str(db))
    result = runner.invoke(app, ["cohort", "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "dipole_norm,5,4,4,3" in result.stdout


def test_cohort_dropped_lists_reasons(db):
    result = runner.invoke(app, ["cohort", "--db", str(db), "--dropped", "--format", "csv"])
    frame = pl.read_csv(result.stdout.encode())
    assert frame["family_id"].to_list() == ["F3", "F5"]
    assert frame["drop_reason"][1].startswith("incomplete coverage")


def test_compare_inputs_and_transitions(db):
    result = runner.invoke(
        app,
        [
            "compare-inputs",
            "--db",
            str(db),
            "--from",
            "dipole_norm",
            "--to",
            "dipole_norm",
            "--model",
            "m2",
            "--bootstrap",
            "100",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    row = pl.read_csv(result.stdout.encode()).row(0, named=True)
    assert (row["model"], row["n"], row["delta"]) == ("m2", 3, 0.0)
    result = runner.invoke(
        app,
        [
            "transitions",
            "--db",
            str(db),
            "--channel",
            "dipole_norm",
            "--condition",
            "cf",
            "--bootstrap",
            "0",
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    row = pl.read_csv(result.stdout.encode()).row(0, named=True)
    assert (row["a_only"], row["b_only"], row["net"]) == (40.0, 60.0, 20.0)


@pytest.mark.parametrize(
    "rule, method", [("percentile", "family_bootstrap_percentile"), ("score", "family_mover_wilson")]
)
def test_the_interval_rule_reaches_every_command_that_prints_an_interval(db, rule, method):
    """--interval on transitions and ranks --pairs (the differences), metrics (PGR on three families: auto
    would choose the score interval there) and compare-inputs."""
    commands = [
        ["transitions", "--channel", "dipole_norm"],
        ["ranks", "--pairs", "--channel", "dipole_norm"],
    ]
    for command in commands:
        result = runner.invoke(
            app, [*command, "--db", str(db), "--bootstrap", "50", "--interval", rule, "--format", "csv"]
        )
        assert result.exit_code == 0, result.output
        assert set(pl.read_csv(result.stdout.encode())["method"].drop_nulls()) == {method}, command
    result = runner.invoke(app, ["metrics", "--db", str(db), "--metric", "pgr", "--interval", rule, "--format", "csv"])
    assert result.exit_code == 0, result.output
    expected = {"family_score_wilson" if rule == "score" else method}
    assert set(pl.read_csv(result.stdout.encode())["method"].drop_nulls()) == expected
    # the one channel compared with itself: a point by design, whatever the rule
    result = runner.invoke(
        app,
        [
            "compare-inputs",
            "--db",
            str(db),
            "--from",
            "dipole_norm",
            "--to",
            "dipole_norm",
            "--interval",
            rule,
            "--format",
            "csv",
        ],
    )
    assert set(pl.read_csv(result.stdout.encode())["method"]) == {"fixed_by_design"}, result.output
    result = runner.invoke(app, ["metrics", "--db", str(db), "--interval", "wald"])
    assert result.exit_code == 2 and "unknown interval 'wald'" in result.output


def test_unknown_channel_is_a_clear_error(db):
    result = runner.invoke(app, ["compare-inputs", "--db", str(db), "--from", "ir", "--to", "dipole_norm"])
    assert result.exit_code == 2
    assert "unknown channel 'ir'" in result.output


def test_missing_database_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["metrics", "--db", str(tmp_path / "nope.duckdb")])
    assert result.exit_code == 2
    assert "no such database" in result.output


def test_table_output_shows_intervals(db):
    result = runner.invoke(app, ["metrics", "--db", str(db), "--metric", "acc_source", "--bootstrap", "100"])
    assert result.exit_code == 0
    assert "acc_source" in result.output and "66.67" in result.output


@pytest.mark.parametrize(
    "command",
    [
        "load",
        "metrics",
        "compare-inputs",
        "transitions",
        "cohort",
        "sql",
        "demo",
        "separability",
        "simulate",
        "stability",
        "ranks",
        "power",
        "frequentist",
    ],
)
def test_every_command_has_help_with_an_example(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Example: molp2s" in result.output


def test_demo_prints_the_pgr_leaderboard(tmp_path):
    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "demo.duckdb"), "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert "PGR leaderboard" in result.output
    assert "sim-generalist" in result.output and "random baseline" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["metrics", "--bootstrap", "20"],
        ["cohort"],
        ["cohort", "--dropped"],
        ["separability"],
        ["compare-inputs", "--from", "dipole_norm", "--to", "dipole_norm", "--bootstrap", "20"],
        ["transitions", "--channel", "dipole_norm", "--bootstrap", "20"],
        ["stability", "--sizes", "2,3", "--draws", "50"],
        ["stability", "--score", "cfr", "--macro", "--sizes", "2", "--draws", "50"],
        ["ranks", "--bootstrap", "50"],
        ["ranks", "--bootstrap", "50", "--distribution"],
        ["power"],
        ["power", "--difference", "10", "--families", "136"],
        ["frequentist"],
        ["explanations", "--bootstrap", "20"],
        ["explanations", "--bootstrap", "0", "--per-response"],
        ["sql", "SELECT * FROM benchmark_summary"],
        ["sql", "SELECT * FROM invalid_rates"],
        ["sql", "SELECT * FROM binomial_cells"],
    ],
)
def test_every_output_column_is_in_the_glossary(db, args):
    from molp2s_stats.glossary import check_columns

    result = runner.invoke(app, [*args, "--db", str(db), "--format", "csv"])
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.stdout.encode())
    assert frame.height > 0
    check_columns(frame.columns)


def test_transitions_report_mcnemar_with_holm(db):
    result = runner.invoke(
        app,
        [
            "transitions",
            "--db",
            str(db),
            "--channel",
            "dipole_norm",
            "--condition",
            "cf",
            "--bootstrap",
            "0",
            "--format",
            "csv",
        ],
    )
    row = pl.read_csv(result.stdout.encode()).row(0, named=True)
    # cf tasks: m1 only right on 2, m2 only on 3 → binomial test of 2 of 5: p = 1.0; one pair, Holm = raw
    assert (row["p_value"], row["p_adjusted"], row["adjustment"]) == (1.0, 1.0, "holm")


def test_bad_option_values_are_one_line_errors(db):
    for args in (
        ["metrics", "--conf-level", "95"],
        ["metrics", "--format", "parquet"],
        ["stability", "--score", "accuracy"],
        ["ranks", "--channel", "ir"],
    ):
        result = runner.invoke(app, [*args, "--db", str(db)])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error: "), result.output


def test_out_suffix_chooses_the_format(db, tmp_path):
    for suffix, read in ((".csv", pl.read_csv), (".json", pl.read_json), (".parquet", pl.read_parquet)):
        out = tmp_path / f"m{suffix}"
        result = runner.invoke(
            app, ["metrics", "--db", str(db), "--metric", "pgr", "--bootstrap", "0", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert read(out)["metric"].to_list() == ["pgr", "pgr"], suffix
    # an explicit --format wins over the suffix; an unknown suffix is a terminal table
    out = tmp_path / "m.csv"
    runner.invoke(
        app, ["metrics", "--db", str(db), "--metric", "pgr", "--bootstrap", "0", "--format", "json", "--out", str(out)]
    )
    assert json.loads(out.read_text())[0]["metric"] == "pgr"
    out = tmp_path / "m.txt"
    runner.invoke(app, ["metrics", "--db", str(db), "--metric", "pgr", "--bootstrap", "0", "--out", str(out)])
    assert "Metrics" in out.read_text()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            ["stability", "--score", "cfr", "--sizes", "2", "--draws", "30"],
            ["stability", "--metric", "cfr", "--sizes", "2", "--subsets", "30"],
        ),
        (["ranks", "--score", "cfr", "--bootstrap", "30"], ["ranks", "--metric", "cfr", "--bootstrap", "30"]),
        (
            ["metrics", "--channels", "dipole_norm", "--bootstrap", "0"],
            ["metrics", "--channel", "dipole_norm", "--bootstrap", "0"],
        ),
    ],
)
def test_renamed_flags_keep_their_old_names(db, old, new):
    """One word per idea (--metric, --channel, --subsets); scripts written with the old flags still run."""
    frames = []
    for args in (old, new):
        result = runner.invoke(app, [*args, "--db", str(db), "--format", "csv"])
        assert result.exit_code == 0, result.output
        frames.append(pl.read_csv(result.stdout.encode()))
    assert frames[0].equals(frames[1])


def test_a_bug_keeps_its_traceback_while_a_user_error_is_one_line(db, monkeypatch):
    """Only errors a user can fix become `error: …` lines; a ValueError from a bug is not hidden."""
    from molp2s_stats.errors import UsageError
    from molp2s_stats.stats import metrics

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")  # what a bug looks like

    monkeypatch.setattr(metrics, "compute_metrics", broken)
    result = runner.invoke(app, ["metrics", "--db", str(db), "--bootstrap", "0"])
    assert isinstance(result.exception, ValueError) and not isinstance(result.exception, UsageError)
    assert not result.output.startswith("error: ")

    def refused(*args, **kwargs):
        raise UsageError("unknown metric(s) ['pgrr']")

    monkeypatch.setattr(metrics, "compute_metrics", refused)
    result = runner.invoke(app, ["metrics", "--db", str(db), "--bootstrap", "0"])
    assert result.exit_code == 2 and result.output.startswith("error: unknown metric(s)")


@pytest.mark.parametrize(
    "args",
    [
        ["metrics", "--bootstrap", "20"],
        ["frequentist"],
        ["separability"],
        ["power"],
        ["transitions", "--channel", "dipole_norm", "--bootstrap", "20"],
        ["compare-inputs", "--from", "dipole_norm", "--to", "dipole_norm", "--bootstrap", "20"],
        ["stability", "--sizes", "2,3", "--draws", "50"],
        ["ranks", "--bootstrap", "50"],
    ],
)
def test_exported_parquet_is_tidy_numbers(db, tmp_path, args):
    """Numbers leave as numbers: every estimate, interval, share and count of an exported
    Parquet file is numeric, and no text column holds a formatted figure ("61.2 [48.0, 73.1]")."""
    out = tmp_path / "out.parquet"
    result = runner.invoke(app, [*args, "--db", str(db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(out)
    assert frame.height > 0
    for column, dtype in frame.schema.items():
        if dtype == pl.String:
            assert not frame[column].drop_nulls().str.contains(r"^-?[\d.,]+( \[|%)").any(), column
    numeric = {
        "estimate",
        "conf_low",
        "conf_high",
        "n",
        "tasks",
        "net",
        "delta",
        "mde",
        "separated",
        "exact",
        "mad",
        "spearman_rho",
        "rank",
        "rank_low",
        "rank_high",
        "p_value",
        "both_correct",
    }
    for column in numeric & set(frame.columns):
        assert frame.schema[column].is_numeric(), column


def test_audit_refuses_an_unknown_metric_before_running_the_audit(db, monkeypatch):
    from molp2s_stats.stats import audit

    def never(*args, **kwargs):
        raise AssertionError("the audit ran before --metric was checked")

    monkeypatch.setattr(audit, "audit", never)
    result = runner.invoke(app, ["audit", "--db", str(db), "--metric", "pgrr"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: unknown metric 'pgrr'; did you mean --metric pgr?"), result.output


@pytest.mark.parametrize(
    "args",
    [
        ["compare-inputs", "--from", "dipole_norm", "--to", "dipole_norm"],
        ["transitions", "--channel", "dipole_norm"],
        ["prompts", "--out", "never.jsonl"],
    ],
)
def test_one_check_for_condition(db, args):
    result = runner.invoke(app, [*args, "--db", str(db), "--condition", "sauce"])
    assert result.exit_code == 2, result.output
    assert result.output == "error: --condition must be one of none, source, shuffled, cf, got 'sauce'\n"


def test_the_example_study_loads_with_one_flag(tiny_database, tmp_path, monkeypatch):
    """`molp2s load --example` loads the shipped benchmark and simulated answers (here the tiny ones put
    in their place), and says so; with --benchmark it is refused before anything is opened."""
    from molp2s_stats.cli import load as load_cli
    from molp2s_stats.ingest import default_data

    folder = tiny_database.parent
    monkeypatch.setattr(load_cli, "DEFAULT_BENCHMARK", folder / "bench")
    monkeypatch.setattr(default_data, "DEFAULT_RESPONSES", folder / "responses")
    db = tmp_path / "example.duckdb"
    result = runner.invoke(app, ["load", "--example", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "benchmark" in result.output and db.exists()
    result = runner.invoke(app, ["metrics", "--db", str(db), "--metric", "pgr", "--bootstrap", "0", "--format", "csv"])
    assert result.exit_code == 0 and pl.read_csv(result.stdout.encode()).height > 0
    refused = runner.invoke(app, ["load", "--example", "--benchmark", str(folder / "bench"), "--db", str(db)])
    assert refused.exit_code != 0 and "give --example or --benchmark, not both" in refused.output


def test_hints_outside_a_checkout_say_example_not_a_site_packages_path(tmp_path, monkeypatch):
    """From a folder that is not the checkout's root, the package's data would be typed as a long path:
    the hints say `molp2s load --example` instead; from the root they keep the short paths."""
    from molp2s_stats import defaults

    monkeypatch.chdir(tmp_path)
    assert defaults.default_data_options() == "--example"
    result = runner.invoke(app, ["metrics", "--db", str(tmp_path / "none.duckdb")])
    assert "molp2s load --example" in result.output
    result = runner.invoke(app, ["load"])
    assert "--example for the example study" in result.output
    monkeypatch.chdir(defaults.DATA.parent)
    assert defaults.default_data_options() == "--benchmark data/benchmark --responses data/responses"
