"""The report's pages on the default data (eight models, fifteen channels): no table a reader must
scroll through. A table of every model on every channel (120 rows) goes in a folded section with a
sentence above it that says what it holds; outside the folds, no table passes 40 rows.

The Posterior page needs a fit of the default data (minutes); its tables are checked on the small
fit's site (tests/report/test_report.py) and by the same rule where `make report` renders it."""

from __future__ import annotations

import re

import pytest

from molp2s_stats.defaults import REPORTS
from molp2s_stats.report import render

PAGES = ["index", "leaderboard", "reliance", "comparisons", "stability", "health", "data"]
MAX_ROWS = 40


def rows_outside_folds(page: str) -> list[tuple[str, int]]:
    """(table id, body rows) of each table of a page's HTML that is not inside a <details>."""
    outside = re.sub(r"<details.*?</details>", "", page, flags=re.S)
    found = []
    for table in re.findall(r"<table.*?</table>", outside, flags=re.S):
        body = re.search(r"<tbody.*?</tbody>", table, flags=re.S)
        ident = re.search(r'id="([^"]+)"', table)
        found.append((ident.group(1) if ident else "?", (body.group(0) if body else table).count("<tr")))
    return found


def test_rows_are_counted_outside_the_folds_only():
    table = "<table id='x'><tbody>" + "<tr><td>1</td></tr>" * 50 + "</tbody></table>"
    assert rows_outside_folds(f"<p>a</p>{table}") == [("?", 50)]
    assert rows_outside_folds(f"<details class='collapsed'><summary>s</summary>{table}</details>") == []


@pytest.fixture(scope="module")
def default_site(default_database, tmp_path_factory):
    out = tmp_path_factory.mktemp("default-site")
    env = {"MOLP2S_DB": str(default_database), "MOLP2S_BOOTSTRAP": "20", "MOLP2S_SEED": "1"}
    render.render_with_jupyter(REPORTS, out, env, pages=[f"{name}.qmd" for name in PAGES], log=lambda line: None)
    return out


@pytest.mark.parametrize("name", PAGES)
def test_no_table_outside_a_fold_passes_40_rows(default_site, name):
    long = [
        (ident, rows)
        for ident, rows in rows_outside_folds((default_site / f"{name}.html").read_text())
        if rows > MAX_ROWS
    ]
    assert not long, f"{name}: fold these, with a sentence that says what they hold: {long}"
