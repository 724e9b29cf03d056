"""The report's tables and charts as a reader checks them: each metric's own random baseline,
channels in the channel table's order on every page, a heading on every column."""

from __future__ import annotations

import re

import polars as pl
import pytest

from molp2s_stats.glossary import COLUMNS, column_label
from molp2s_stats.report import charts, tables
from molp2s_stats.stats import metrics

CHANNELS = list(tables.column_layout())  # the package's channel table, in display order


def _four_candidate_outcomes() -> pl.DataFrame:
    """Two models, three families with K = 4 and three cf tasks each, on two channels."""
    rows = []
    for channel in ("ir", "gap"):
        for model, right in (("m1", 1.0), ("m2", 0.0)):
            for f in range(3):
                rows.append(
                    {
                        "model": model,
                        "channel": channel,
                        "family_id": f"F{f}",
                        "y_p0": right,
                        "y_source": 1.0,
                        "y_shuffled": right,
                        "cf_tasks": 3,
                        "cf_correct": 2.0,
                        "cf_flip": 2 / 3,
                        "cf_persist": 1 / 3,
                        "cf_other": 0.0,
                        "n_candidates": 4,
                    }
                )
    return pl.DataFrame(rows)


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        # a uniform guess among 4: right 1 in 4; RM is the difference of two such rates; after a
        # right source, a cf answer names the counterfactual 1 in 4, the source 1 in 4, another 2 in 4
        ("acc_source", 25.0),
        ("reliance_margin", 0.0),
        ("cf_accuracy", 25.0),
        ("pgr", 25.0),
        ("cfr", 25.0),
        ("persist", 25.0),
        ("other", 50.0),
    ],
)
def test_each_leaderboard_closes_with_its_own_metrics_random_baseline(metric, expected):
    result = metrics.compute_metrics(_four_candidate_outcomes(), draws=0)
    table, tidy = tables.leaderboard_table(result, metric, title=metric)
    baseline = tidy.filter(pl.col("model") == metrics.BASELINE)
    assert baseline["estimate"].to_list() == [expected, expected]
    body = table.as_raw_html()
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body[body.index("<tbody") : body.index("</tbody>")], flags=re.S)
    assert "random baseline" in rows[-1] and rows[-1].count(f">{expected:.1f}<") == 2


def test_reliance_margin_baseline_is_zero_not_the_accuracy_baseline():
    """The reliance page once closed its RM table with 25.0 (the accuracy of a guess) in every channel."""
    result = metrics.compute_metrics(_four_candidate_outcomes(), draws=0)
    _, tidy = tables.leaderboard_table(result, "reliance_margin", title="RM")
    assert 25.0 not in tidy.filter(pl.col("model") == metrics.BASELINE)["estimate"].to_list()


def _alphabetical(frame_of) -> pl.DataFrame:
    """A posterior-like frame whose channels come alphabetically by id, as a fit stores them."""
    return pl.concat([frame_of(c) for c in sorted(CHANNELS)])


def _quantity(channel: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "model": ["a", "b"],
            "channel": [channel] * 2,
            "metric": ["reliance"] * 2,
            "estimate": [1.0, 2.0],
            "conf_low": [0.0, 1.0],
            "conf_high": [2.0, 3.0],
        }
    )


def test_posterior_tables_follow_the_channel_table_so_spanners_do_not_repeat():
    table, tidy = tables.leaderboard_table(_alphabetical(_quantity), "reliance", title="Posterior reliance")
    assert tidy["channel"].unique(maintain_order=True).to_list() == CHANNELS
    head = table.as_raw_html()
    head = head[head.index("<thead") : head.index("</thead>")]
    spanners = re.findall(r'class="gt_column_spanner"[^>]*>([^<]+)<', head)
    for group in ("Electronic", "Vibrational", "Magnetic resonance", "Bundles", "¹H NMR", "¹³C NMR"):
        assert spanners.count(group) == 1, (group, spanners)


@pytest.mark.parametrize("draw", ["forest", "heatmap", "rank_bars"])
def test_posterior_chart_panels_follow_the_channel_table(draw):
    names = metrics.channel_names()
    if draw == "forest":
        chart = charts.forest(_alphabetical(_quantity), title="t", x_title="x")
    elif draw == "heatmap":
        chart = charts.heatmap(
            _alphabetical(
                lambda c: pl.DataFrame(
                    {"channel": [c], "metric": ["reliance"], "model_a": ["a"], "model_b": ["b"], "probability": [0.7]}
                )
            ),
            title="t",
        )
    else:
        chart = charts.rank_bars(
            _alphabetical(
                lambda c: pl.DataFrame(
                    {"model": ["a"], "channel": [c], "metric": ["reliance"], "rank": [1.0], "probability": [1.0]}
                )
            ),
            title="t",
        )
    assert chart.to_dict()["facet"]["sort"] == [names[c] for c in CHANNELS]


def test_predictive_check_panels_follow_the_channel_table():
    checks = _alphabetical(
        lambda c: pl.DataFrame(
            {
                "model": ["a"],
                "channel": [c],
                "condition": ["source"],
                "statistic": ["accuracy"],
                "observed": [50.0],
                "conf_low": [40.0],
                "conf_high": [60.0],
                "predicted": [50.0],
                "p_value": [0.5],
                "outside": [False],
            }
        )
    )
    chart = charts.predictive_checks(checks).to_dict()
    names = metrics.channel_names()
    assert chart["vconcat"][0]["facet"]["sort"] == [f"{names[c]} · source" for c in CHANNELS]


def test_plain_tables_list_rows_in_the_channel_table_order():
    frame = _alphabetical(lambda c: pl.DataFrame({"channel": [c], "cohort": [1]}))
    html = tables.plain_table(frame, title="t").as_raw_html()
    names = metrics.channel_names()
    positions = [html.index(f">{names[c]}<") for c in CHANNELS]
    assert positions == sorted(positions)


def _headings(html: str) -> list[str]:
    head = html[html.index("<thead") : html.index("</thead>")] if "<thead" in html else ""
    return [
        re.sub(r"<[^>]+>", "", t).strip()
        for t in re.findall(r'<th class="gt_col_heading[^>]*>(.*?)</th>', head, flags=re.S)
    ]


def test_overview_tables_show_headings_not_column_ids():
    cohort = pl.DataFrame(
        {"channel": ["ir"], "families_total": [10], "input_validated": [8], "complete_coverage": [9], "cohort": [7]}
    )
    invalid = pl.DataFrame({"model": ["m1", "m2"], "answers": [100, 100], "invalid_pct": [1.5, 0.0]})
    assert _headings(tables.plain_table(cohort, title="t").as_raw_html()) == [
        "Channel",
        "Families",
        "Input-validated",
        "Complete coverage",
        "Cohort",
    ]
    assert _headings(tables.plain_table(invalid, title="t").as_raw_html()) == ["Model", "Answers", "Invalid (%)"]


def test_every_glossary_column_has_a_heading_without_underscores():
    for column in COLUMNS:
        assert "_" not in column_label(column), column


def test_a_single_wide_row_reads_as_one_line_per_field():
    """The fit diagnostics are one row of 18 columns: shown as field and value, they fit the page."""
    gate = pl.DataFrame(
        {
            "r_hat_max": [1.004],
            "ess_bulk_min": [812.4],
            "ess_bulk_min_parameter": ["family_sd"],
            "ess_tail_min": [905.0],
            "divergences": [0],
            "bfmi_min": [0.9],
            "passed": [True],
            "seed": [2024],
            "chains": [4],
        }
    )
    html = tables.plain_table(gate, title="Fit diagnostics", decimals=3).as_raw_html()
    body = html[html.index("<tbody") :]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)
    assert len(rows) == gate.width
    cells = [
        [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S)] for r in rows
    ]
    assert cells[0] == ["Max R-hat", "1.004"] and cells[1] == ["Min bulk ESS", "812.4"]  # no third decimal above 100
    assert ["Passed", "yes"] in cells and ["Seed", "2024"] in cells and ["Divergences", "0"] in cells
    assert not any("_" in c[0] for c in cells)
