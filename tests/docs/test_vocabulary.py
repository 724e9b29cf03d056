"""One definition per metric, from the glossary; no user-facing text cites the internal contract."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from molp2s_stats.cli import app
from molp2s_stats.glossary import METRIC_DEFINITIONS, METRICS
from tests.support import ROOT

runner = CliRunner()
COMMANDS = sorted(command.name for command in app.registered_commands)


def test_the_docs_state_each_metric_as_the_glossary_does():
    page = (ROOT / "docs" / "metrics.qmd").read_text()
    for metric, text in METRIC_DEFINITIONS.items():
        assert f"- **{metric}**: {text}." in page, metric


def test_metrics_help_lists_every_definition():
    result = runner.invoke(app, ["metrics", "--help"], terminal_width=400)
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for metric in METRICS:
        assert f"{metric}:" in flat
    assert "property-grounded recovery (pgr): per family with a cf task" in flat.lower()


def test_the_leaderboard_takes_its_definition_from_the_glossary():
    page = (ROOT / "reports" / "leaderboard.qmd").read_text()
    assert "definition('pgr')" in page
    assert "gets wrong without properties" not in page  # the old, wrong definition


_SPEC = re.compile(r"\bSPEC\b")


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_text_cites_the_spec(command):
    result = runner.invoke(app, [command, "--help"], terminal_width=400)
    assert result.exit_code == 0, result.output
    assert not _SPEC.search(result.output), command


def test_no_page_readme_or_view_cites_the_spec():
    files = [
        *ROOT.glob("reports/*.qmd"),
        *ROOT.glob("docs/*.qmd"),
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "data" / "README.md",
        *ROOT.glob("sql/**/*.sql"),
        *ROOT.glob("molp2s_stats/**/*.py"),
    ]
    cited = [str(f.relative_to(ROOT)) for f in files if _SPEC.search(f.read_text())]
    assert not cited


# a rate times 100 (or over 100), as a number literal beside * or /
_PERCENT_SCALING = re.compile(r"(\b100(\.0*)?\s*\*|\*\s*100(\.0*)?\b|/\s*100(\.0*)?\b)")


def test_rates_become_percent_only_at_the_edge():
    # Proportions inside; the conversion to % lives in molp2s_stats.units. The prompt's
    # relative peak intensities (0–100) are a display scale of the spectrum, not a rate.
    allowed = {"molp2s_stats/units.py", "molp2s_stats/prompts.py", "molp2s_stats/ingest/distances.py"}
    found = []
    for path in [*(ROOT / "molp2s_stats").rglob("*.py"), *(ROOT / "reports").glob("*.qmd")]:
        name = path.relative_to(ROOT).as_posix()
        if name in allowed:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _PERCENT_SCALING.search(code) and ">>>" not in line:
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
    sql = [p.relative_to(ROOT).as_posix() for p in (ROOT / "sql").rglob("*.sql") if "100.0 *" in p.read_text()]
    assert sql == ["sql/marts/separability.sql"]  # Table 6 itself, in % as the paper prints it


def test_no_report_page_names_an_interval_method_in_its_prose():
    """Method identifiers belong to the method column of the exported tables: a page says the method in
    words (its prose, the strings its code writes, and INTERVAL_HELP, which pages and help print)."""
    from molp2s_stats.defaults import INTERVAL_HELP
    from molp2s_stats.stats.intervals import METHODS

    texts = {path.name: path.read_text() for path in ROOT.glob("reports/*.qmd")}
    texts["INTERVAL_HELP"] = INTERVAL_HELP
    found = [(name, method) for name, text in texts.items() for method in METHODS if method in text]
    assert found == []
