"""The report site (issue 6): the .qmd reader, the leaderboard marking, and a real render
of all seven pages on a small simulated database without Quarto (the Jupyter route),
then the leaderboard opened in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import polars as pl
import pytest
from typer.testing import CliRunner

from molp2s_stats.bayes import provenance
from molp2s_stats.cli import app
from molp2s_stats.defaults import REPORTS
from molp2s_stats.report import render, tables
from tests.support.html import element_ids
from tests.support.warm_cli import warm_jupyter_path

PAGES = (
    "posterior",
    "reliance",
    "stability",
    "leaderboard",
    "comparisons",
    "index",
    "health",
    "data",
)  # render order, slowest first


def test_read_qmd_splits_front_matter_prose_and_cells(tmp_path):
    page = tmp_path / "page.qmd"
    page.write_text(
        '---\ntitle: "A page"\n---\n\nSome prose.\n\n```{python}\n#| label: one\n#| echo: true\nx = 1\n```\n\n'
        "Between.\n\n```{python}\ny = 2\n```\n"
    )
    notebook = render.read_qmd(page, execute={"echo": False})
    kinds = [(c.cell_type, c.source) for c in notebook.cells]
    # the #| lines leave the source, as Quarto leaves them out of the page
    assert kinds == [
        ("markdown", "# A page"),
        ("markdown", "Some prose."),
        ("code", "x = 1"),
        ("markdown", "Between."),
        ("code", "y = 2"),
    ]
    assert "tags" not in notebook.cells[2].metadata  # echo: true on the cell wins over the project's false
    assert notebook.cells[2].metadata["molp2s"] == {"label": "one", "eval": True, "warning": True}
    assert notebook.cells[4].metadata["tags"] == ["remove_input"]
    assert notebook.metadata["quarto"] == {"title": "A page"}


def test_a_project_renders_into_its_folder_with_links_to_pages_as_html(tmp_path):
    """The docs site's route (python -m molp2s_stats.report.render PROJECT OUT): a link to another
    page's .qmd points at its .html, as under Quarto, and a second render replaces the first."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "_quarto.yml").write_text(
        "project:\n  type: website\n  render:\n    - a.qmd\n    - b.qmd\n"
        "website:\n  title: Tiny\n  navbar:\n    left:\n      - href: a.qmd\n"
        "      - href: b.qmd\n"
    )
    (project / "a.qmd").write_text(
        '---\ntitle: "A"\n---\n\nSee [the other page](b.qmd#second), or [the web](https://quarto.org/a.qmd).\n'
    )
    (project / "b.qmd").write_text('---\ntitle: "B"\n---\n\n## Second\n\n```{python}\nprint(6 * 7)\n```\n')
    out = tmp_path / "site"
    out.mkdir()
    (out / "stale.html").write_text("from an earlier render")
    assert render.main([str(project), str(out)]) == 0
    page_a = (out / "a.html").read_text()
    assert 'href="b.html#second"' in page_a and 'href="https://quarto.org/a.qmd"' in page_a
    page_b = (out / "b.html").read_text()
    assert 'id="second"' in page_b and "42" in page_b
    assert sorted(p.name for p in out.iterdir()) == ["a.html", "b.html"]  # replaced, not merged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["project", "site"]


def test_project_lists_the_eight_pages():
    config, pages = render.read_project(REPORTS)
    assert [p.source for p in pages] == [f"{name}.qmd" for name in PAGES]
    assert [p.source for p in pages] == config["project"]["render"]  # the render list, not the navbar
    assert config["project"]["type"] == "website"
    # Quarto renders these pages in one-shot kernels; the fallback reuses one kernel a worker, its namespace
    # reset before each page (render.py), so a page still cannot read what another left
    assert config["execute"]["daemon"] is False


def test_leaderboard_marks_gold_and_silver_and_keeps_the_baseline_unranked():
    metrics = pl.DataFrame(
        {
            "model": ["a", "b", "c", "a", "b", "c"],
            "channel": ["ir", "ir", "ir", "gap", "gap", "gap"],
            "metric": ["pgr"] * 6,
            "estimate": [10.0, 30.0, 20.0, 5.0, 5.0, 1.0],
            "conf_low": [1.0, 2.0, 3.0, 1.0, 1.0, 0.0],
            "conf_high": [20.0, 40.0, 30.0, 9.0, 9.0, 2.0],
            "baseline": [25.0, 25.0, 25.0, 20.0, 20.0, 20.0],
        }
    )
    table, tidy = tables.leaderboard_table(metrics, "pgr", title="t")
    # the frame that is exported: numbers, one row per model × channel, the channels in the channel
    # table's order (gap before ir), each closed by its baseline
    assert tidy["model"].to_list() == ["a", "b", "c", "random baseline"] * 2
    assert tidy["channel"].to_list() == ["gap"] * 4 + ["ir"] * 4
    assert tidy.schema["estimate"] == pl.Float64 and tidy.schema["conf_low"] == pl.Float64
    html = table.as_raw_html()
    # great-tables formats the cells: one decimal, the interval merged in; no interval for the baseline
    assert "30.0 [2.0, 40.0]" in html and ">25.0<" in html
    assert html.index(">c<") < html.index(">random baseline<")
    # ir: b gold, c silver; gap: a and b tie for gold, c silver; the baseline (25) is never marked
    assert tables.podium([10.0, 30.0, 20.0, None]) == [None, tables.GOLD, tables.SILVER, None]
    assert html.count(tables.GOLD) == 3 and html.count(tables.SILVER) == 2


def _header(html: str) -> list[list[tuple[str, int]]]:
    """The table's header rows, top first: each cell's text and how many columns it spans."""
    head = html[html.index("<thead") : html.index("</thead>")]
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", head, flags=re.S):
        cells = []
        for attributes, text in re.findall(r"<th([^>]*)>(.*?)</th>", row, flags=re.S):
            span = re.search(r'colspan="(\d+)"', attributes)
            cells.append((re.sub(r"<[^>]+>|&nbsp;?", "", text).strip(), int(span.group(1)) if span else 1))
        if cells:
            rows.append(cells)
    return rows


def test_leaderboard_header_is_laid_out_as_the_paper_prints_it():
    """Snapshot of the header of Tables 2 and 9 over the twelve channels and three bundles: the groups
    on top, ¹H and ¹³C NMR below Magnetic resonance, every other column label spanning both lower rows."""
    channels = list(tables.column_layout())  # the package's channel table
    metrics = pl.DataFrame(
        {
            "model": ["m"] * len(channels),
            "channel": channels,
            "metric": ["pgr"] * len(channels),
            "estimate": [1.0] * len(channels),
            "conf_low": [0.5] * len(channels),
            "conf_high": [1.5] * len(channels),
        }
    )
    table, _ = tables.leaderboard_table(metrics, "pgr", title="PGR")
    assert _header(table.as_raw_html()) == [
        [("", 1), ("Electronic", 4), ("Vibrational", 2), ("Magnetic resonance", 6), ("Bundles", 3)],
        [
            ("", 1),
            ("Dipole", 1),
            ("Dipole vector", 1),
            ("Gap", 1),
            ("UV–Vis", 1),
            ("IR", 1),
            ("Raman", 1),
            ("¹H NMR", 3),
            ("¹³C NMR", 3),
            ("Vibrational", 1),
            ("NMR", 1),
            ("All", 1),
        ],
        [("Peaks", 1), ("+Int.", 1), ("Atomwise", 1), ("Peaks", 1), ("+Deg.", 1), ("Atomwise", 1)],
    ]


def test_table7_has_a_row_per_property_input_p0_first_and_a_column_per_model():
    """The paper's Table 7: rows P0 then each channel by name, columns the models by display name
    under their group, the best model of each row in gold."""
    source = pl.DataFrame(
        {
            "model": ["a", "b"] * 2,
            "channel": ["ir", "ir", "h1_peaks", "h1_peaks"],
            "metric": ["acc_source"] * 4,
            "estimate": [60.0, 70.0, 55.0, 50.0],
            "conf_low": [50.0, 60.0, 45.0, 40.0],
            "conf_high": [70.0, 80.0, 65.0, 60.0],
        }
    )
    p0 = pl.DataFrame(
        {
            "model": ["a", "b"],
            "channel": ["none"] * 2,
            "metric": ["acc_p0"] * 2,
            "estimate": [40.0, 45.0],
            "conf_low": [30.0, 35.0],
            "conf_high": [50.0, 55.0],
        }
    )
    names = pl.DataFrame(
        {"model": ["b", "a"], "display_name": ["Model B", "Model A"], "group": ["Closed-weight", "Open-weight"]}
    )
    table, tidy = tables.input_table(source, p0, title="t", models=names)
    html = table.as_raw_html()
    assert tidy["channel"].to_list() == ["none", "none", "ir", "ir", "h1_peaks", "h1_peaks"]
    assert _header(html)[-2:] == [[("", 1), ("Closed-weight", 1), ("Open-weight", 1)], [("Model B", 1), ("Model A", 1)]]
    rows = [
        re.sub(r"<[^>]+>", "", r).strip()
        for r in re.findall(r'<th [^>]*class="gt_row gt_left gt_stub"[^>]*>(.*?)</th>', html, flags=re.S)
    ]
    assert rows == ["No properties (P0)", "IR", "¹H peaks"]
    assert "45.0 [35.0, 55.0]" in html and html.count(tables.GOLD) == 3


def test_cf_split_table_has_a_spanner_per_channel():
    metrics = pl.DataFrame(
        {
            "model": ["a"] * 6,
            "channel": ["ir"] * 3 + ["all"] * 3,
            "metric": ["cfr", "persist", "other"] * 2,
            "estimate": [50.0, 30.0, 20.0, 40.0, 40.0, 20.0],
        }
    )
    table, tidy = tables.split_table(metrics, title="t")
    assert tidy.height == 6
    assert _header(table.as_raw_html())[-2:] == [
        [("", 1), ("IR", 3), ("All", 3)],
        [("CFR", 1), ("Persist", 1), ("Other", 1), ("CFR", 1), ("Persist", 1), ("Other", 1)],
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory, small_fit, warm_commands):
    """All seven pages rendered on the suite's small fit (40 families × 2 channels, 3 models; a short,
    failing fit), their kernels started by the warm server."""
    db, fit_file = small_fit
    out = tmp_path_factory.mktemp("report") / "site"
    result = CliRunner().invoke(
        app,
        ["report", "--db", str(db), "--fit", str(fit_file), "--out", str(out), "--engine", "jupyter"]
        + ["--bootstrap", "200", "--seed", "3"],
        env={"JUPYTER_PATH": warm_jupyter_path(warm_commands)},
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("name", PAGES)
def test_every_page_renders_with_its_tables_and_no_fetch(site, name):
    page = (site / f"{name}.html").read_text()
    assert "<table" in page
    assert "Traceback" not in page
    # self-contained: nothing is fetched at view time
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "the page fetches something"
    assert "<script" not in page


@pytest.mark.parametrize("name", PAGES)
def test_no_heading_or_cell_id_appears_twice_on_a_page(site, name):
    """Cells carry their labels as ids and headings pandoc's identifiers, as under Quarto: each of
    those ids is on the page once, clashing neither with another nor with an id inside a table;
    and every table's own ids (great-tables' title, column ids) are under its own name."""
    page = (site / f"{name}.html").read_text()
    ids = element_ids(page)
    text = (REPORTS / f"{name}.qmd").read_text()
    labels = {
        str(render.cell_options(cell)["label"])
        for cell in render._CELL.findall(text)
        if "label" in render.cell_options(cell)
    }
    headings = set(re.findall(r'<h[1-6] id="([^"]+)"', page))
    assert labels and labels <= set(ids)
    repeated = sorted(i for i in labels | headings if ids.count(i) > 1)
    assert repeated == []
    tables_ids = [i for i in ids if i.startswith("table-")]
    assert sorted({i for i in tables_ids if tables_ids.count(i) > 1}) == []
    assert "title" not in ids  # great-tables' bare id, once per table before


def test_pages_hold_what_they_promise(site):
    leaderboard = (site / "leaderboard.html").read_text()
    assert "PGR per channel" in leaderboard and tables.GOLD in leaderboard and "random baseline" in leaderboard
    assert "<svg" in leaderboard
    overview = (site / "index.html").read_text()
    assert "masked scaffold" in overview and overview.count("<svg") >= 3  # scaffold + candidates
    # Figure 1: a single channel's task, its rendered prompt with the property shown, each answer's text
    assert "The prompt, as the model received it" in overview and "(no value)" not in overview
    assert re.search(r"channel (Dipole norm|IR) \(<code>(dipole_norm|ir)</code>\)", overview)
    assert "its text" in overview
    posterior = (site / "posterior.html").read_text()
    # 2 × 100 draws cannot pass the gate: the page must say so, not hide it
    assert "gate-failed" in posterior and "HEALTH GATE" in posterior
    assert not re.search(r"class=.fit-mismatch", posterior)  # the fit was made on this database
    assert posterior.count("<svg") >= 3  # forest plots, heatmap, rank bars
    for name in (
        "table2_pgr",
        "table3_reliance_margin",
        "table12_paired_inputs",
        "table10_stability",
        "posterior_reliance",
        "table6_separability",
        "design_pgr",
    ):
        assert (site / "tables" / f"{name}.csv").stat().st_size > 0
        assert "\\begin" in (site / "tables" / f"{name}.tex").read_text()


def test_the_stability_page_splits_the_variance_and_plans_the_next_study(site):
    page = (site / "stability.html").read_text()
    assert "Where one family's PGR variance lies, per channel" in page
    assert "Most of a PGR score's variance lies between families" in page
    design = pl.read_csv(site / "tables" / "design_pgr.csv")
    assert design["cheapest"].all() and (design["half_width_planned"] <= 3.0).all()


def test_a_fit_of_other_data_is_flagged_at_the_top_of_the_posterior_page(site, small_fit, tmp_path, warm_kernels):
    """The site's fit, its record changed to a database without the last model: rendered alone,
    the Posterior page opens with the mismatch, naming the model the fit has not seen."""
    import arviz as az

    db, fit_file = small_fit
    env = {"MOLP2S_DB": str(db), "MOLP2S_FIT": str(fit_file), "MOLP2S_BOOTSTRAP": "200", "MOLP2S_SEED": "3"}
    idata = az.from_netcdf(env["MOLP2S_FIT"])
    record = provenance.recorded(idata)
    idata.posterior.attrs[provenance.ATTRIBUTE] = json.dumps({**record, "models": record["models"][:-1]})
    stale = tmp_path / "stale.nc"
    idata.to_netcdf(str(stale))
    render.render_with_jupyter(
        REPORTS, tmp_path / "out", {**env, "MOLP2S_FIT": str(stale)}, pages=["posterior.qmd"], log=lambda line: None
    )
    page = (tmp_path / "out" / "posterior.html").read_text()
    mismatch = re.search(r"class=.fit-mismatch", page).start()
    assert mismatch < re.search(r"class=.gate-failed", page).start() and mismatch < page.index("<h2")
    assert f"This fit may not describe this database: models loaded since: {record['models'][-1]}." in page


def test_exported_tables_are_numbers_not_formatted_text(site):
    """Every CSV beside the pages holds tidy numbers: no '61.2 [48.0, 73.1]' strings, estimates numeric."""
    files = sorted((site / "tables").glob("*.csv"))
    assert len(files) >= 10
    for path in files:
        frame = pl.read_csv(path, infer_schema_length=None)
        for column, dtype in frame.schema.items():
            if dtype == pl.String:
                assert not frame[column].str.contains(r"\d \[").any(), (path.name, column)
        for column in ("estimate", "conf_low", "conf_high"):
            if column in frame.columns:
                assert frame.schema[column].is_numeric() or frame[column].null_count() == frame.height, (
                    path.name,
                    column,
                )


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (make test installs Debian's chromium)")
def test_leaderboard_charts_draw_in_headless_chromium(site, tmp_path):
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        (site / "leaderboard.html").as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "<svg" in dom and "PGR per channel" in dom
    # the chart's marks survived the browser's parse: Vega's SVG draws points as paths
    assert re.search(r"<path[^>]+d=\"M", dom)


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (make test installs Debian's chromium)")
@pytest.mark.parametrize("name", PAGES)
def test_page_body_does_not_overflow_at_1280_px_and_its_answer_is_on_the_first_screen(site, tmp_path, name):
    """Opened at 1280 × 900 px, the page is no wider than the window (wide tables scroll inside their box),
    and the page's answer ends within the first 900 px, as the browser lays it out: a reader sees a result
    without scrolling. (A 1400 px window wraps the text less, so its first screen holds at least as much.)"""
    probe = tmp_path / f"{name}.html"
    # a copy with a probe script (the pages themselves carry no script): it writes the widths and the
    # answer's bottom edge, in CSS pixels from the top of the page, into the DOM
    probe.write_text(
        (site / f"{name}.html")
        .read_text()
        .replace(
            "</body>",
            "<script>document.body.setAttribute('data-widths', "
            "document.documentElement.scrollWidth + ' ' + window.innerWidth);"
            "const answer = document.querySelector('p.answer');"
            "document.body.setAttribute('data-answer-bottom', answer ? "
            "Math.round(answer.getBoundingClientRect().bottom + window.scrollY) : -1)</script></body>",
        )
    )
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        probe.as_uri(),
    ]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    scroll_width, window_width = map(int, re.search(r'data-widths="(\d+) (\d+)"', dom).groups())
    assert window_width == 1280 and scroll_width <= window_width, (scroll_width, window_width)
    bottom = int(re.search(r'data-answer-bottom="(-?\d+)"', dom).group(1))
    assert 0 < bottom <= 900, f"{name}: the answer ends {bottom} px down the page"


def test_stability_tables_have_rm_and_cfr_spanners_over_rho_exact_mad():
    rows = [(metric, "macro", size, 0.9, 50.0, 1.5) for metric in ("reliance_margin", "cfr") for size in (25, 50)]
    frame = pl.DataFrame(rows, schema=["metric", "channel", "size", "spearman_rho", "exact", "mad"], orient="row")
    table, tidy = tables.stability_table(frame, by="size", title="t")
    assert tidy.equals(frame)
    html = table.as_raw_html()
    assert _header(html)[-2:] == [
        [("", 1), ("RM", 3), ("CFR", 3)],
        [("ρ", 1), ("Exact", 1), ("MAD", 1), ("ρ", 1), ("Exact", 1), ("MAD", 1)],
    ]
    assert ">0.900<" in html and ">50.0<" in html and ">1.50<" in html  # ρ 3 decimals, Exact 1, MAD 2


def test_plain_tables_write_counts_with_separators_and_rates_with_one_decimal():
    frame = pl.DataFrame({"channel": ["ir"], "tasks": [12108], "seed": [20261201], "separated": [61.24]})
    html = tables.plain_table(frame, title="t").as_raw_html()
    assert ">12,108<" in html and ">61.2<" in html
    assert ">20261201<" in html  # a seed is not a count


def test_chart_panels_follow_the_paper_order_and_the_channels_names():
    from molp2s_stats.report import charts

    frame = pl.DataFrame(
        {
            "model": ["a"] * 3,
            "channel": ["ir", "h1_peaks", "all"],
            "estimate": [1.0, 2.0, 3.0],
            "conf_low": [0.5] * 3,
            "conf_high": [1.5] * 3,
        }
    )
    facet = charts.forest(frame, title="t", x_title="x").to_dict()["facet"]
    assert facet["field"] == "panel" and facet["sort"] == ["IR", "¹H peaks", "All channels"]
    own = pl.DataFrame(
        {
            "channel": ["my_channel"],
            "group": ["mine"],
            "subgroup": [None],
            "column_label": ["Mine"],
            "name": ["My channel"],
        }
    )
    mine = frame.with_columns(pl.lit("my_channel").alias("channel")).head(1)
    assert charts.forest(mine, title="t", x_title="x", channel_table=own).to_dict()["facet"]["sort"] == ["My channel"]
    assert charts.forest(mine, title="t", x_title="x").to_dict()["facet"]["sort"] == [
        "my_channel"
    ]  # not in the table: its id
    contrasts = pl.DataFrame(
        {"channel": ["ir", "all"], "model_a": ["a", "a"], "model_b": ["b", "b"], "probability": [0.5, 0.6]}
    )
    assert charts.heatmap(contrasts, title="t").to_dict()["facet"]["sort"] == ["IR", "All channels"]


def test_every_sentence_about_a_pair_on_the_comparisons_page_is_its_verdict(site):
    """The page's sentences about two models or two inputs, read back from the rendered HTML, are exactly
    the verdicts of the exported tables: one a pair, and none the tables do not hold."""
    import html as html_module

    from molp2s_stats.report import tables
    from molp2s_stats.stats import compare

    page = html_module.unescape(re.sub(r"<[^>]+>", "", (site / "comparisons.html").read_text()))
    said = set(
        re.findall(
            r"^.*(?:is ahead of|is behind|are equivalent within|undecided \(neither|no verdict).*$", page, re.MULTILINE
        )
    )
    transitions = pl.read_csv(site / "tables" / "figure2_transitions.csv")
    paired = pl.read_csv(site / "tables" / "table12_paired_inputs.csv")
    expected = {
        tables.verdict_sentence(r["model_b"], r["model_a"], r["verdict"], r["margin"]) + "."
        for r in transitions.iter_rows(named=True)
    }
    expected |= {
        tables.verdict_sentence(
            f"{r['model']} with {r['to']}", f"{r['model']} with {r['from']}", r["verdict"], r["margin"]
        )
        + "."
        for r in paired.iter_rows(named=True)
    }
    assert transitions["verdict"].is_not_null().all() and set(transitions["verdict"]) <= set(compare.VERDICTS)
    assert {line.strip() for line in said} == expected


def test_every_sentence_about_a_pair_on_the_leaderboard_is_its_verdict(site, small_fit):
    """The Leaderboard's lines about each channel's leader, read back from the rendered HTML: every
    sentence is the verdict of a row of the exported pair table, about the channel's leader, and a
    channel says as many as its top tie group has other models, plus one where a second group exists."""
    import html as html_module

    from molp2s_stats import store
    from molp2s_stats.report import tables
    from molp2s_stats.stats import metrics

    con = store.connect(small_fit[0], read_only=True)
    names = metrics.channel_names(metrics.read_channel_table(con))
    con.close()
    page = html_module.unescape(re.sub(r"<[^>]+>", "", (site / "leaderboard.html").read_text()))
    pairs = pl.read_csv(site / "tables" / "pgr_pair_verdicts.csv")
    ranges = pl.read_csv(site / "tables" / "pgr_rank_ranges.csv").filter(pl.col("tier").is_not_null())
    for channel in ranges["channel"].unique(maintain_order=True):
        board = ranges.filter(pl.col("channel") == channel).sort("rank")
        leader = board["model"][0]
        rows = pairs.filter((pl.col("channel") == channel) & (pl.col("model_a") == leader))
        verdicts = {
            tables.verdict_sentence(r["model_b"], leader, r["verdict"], r["margin"]) for r in rows.iter_rows(named=True)
        }
        (line,) = [ln.strip() for ln in page.splitlines() if ln.strip().startswith(f"{names[channel]}: ")]
        said = line.split(": ", 1)[1].removesuffix(".").split("; ")
        expected = board.filter(pl.col("tier") == 1).height - 1 + int((board["tier"] == 2).any())
        assert len(said) == expected and set(said) <= verdicts, (channel, said)


def test_the_posterior_page_opens_with_its_answer_and_folds_the_diagnostics(site):
    """The answer (which model leads where, and how surely) comes before any table; the fit's
    diagnostics and attempts are on the page, inside a folded section after the results."""
    page = (site / "posterior.html").read_text()
    answer = page.index("Highest posterior mean:")
    folded = page.index('<details class="collapsed">')
    assert answer < page.index("table-posterior_reliance") < folded
    assert folded < page.index("table-posterior_diagnostics") and folded < page.index("table-posterior_attempts")
    assert page.index("table-posterior_attempts") < page.index("</details>", folded)


@pytest.mark.parametrize("name", PAGES)
def test_every_page_opens_with_its_answer(site, name):
    """An answer written from the data (class ``answer``) before the page's first heading, table or chart,
    and not the method notes: a reader sees the result before the detail."""
    page = (site / f"{name}.html").read_text()
    body = page[page.index("<main") if "<main" in page else page.index("<body") :]
    first = min(i for i in (body.find(tag) for tag in ("<h2", "<table", "<svg", "<details")) if i >= 0)
    match = re.search(r"""<p class=["']answer["']>(.*?)</p>""", body, re.S)
    assert match, f"{name}: no answer paragraph"
    assert match.start() < first, f"{name}: the answer comes after the first heading, table or chart"
    text = re.sub(r"<[^>]+>", "", match.group(1))
    assert re.search(r"\d", text) and len(text) > 40, text  # a result with numbers, not a placeholder


@pytest.mark.parametrize("name", PAGES)
def test_every_chart_has_a_caption(site, name):
    """Each Vega chart (an SVG of class ``marks``; the molecule drawings are not charts) sits in a figure
    whose caption says what to look at."""
    page = (site / f"{name}.html").read_text()
    figures = re.findall(r"<figure class=.chart.>(.*?)</figure>", page, re.S)
    assert len(figures) == page.count('class="marks"'), f"{name}: a chart outside its captioned figure"
    for figure in figures:
        caption = re.search(r"<figcaption>(.*?)</figcaption>", figure, re.S)
        assert caption and len(caption.group(1).split()) >= 8, f"{name}: a chart without a caption"


def test_the_leaderboard_orders_rows_by_score_and_shades_the_leaders_it_is_given():
    """Rows by the mean over channels (b 17.5, a 7.5, c 10.5 → b, c, a), the baseline last; with the rank
    ranges' tie groups the top group is shaded (ir: b and c; gap: a and b), without them gold and silver."""
    metrics = pl.DataFrame(
        {
            "model": ["a", "b", "c", "a", "b", "c"],
            "channel": ["ir", "ir", "ir", "gap", "gap", "gap"],
            "metric": ["pgr"] * 6,
            "estimate": [10.0, 30.0, 20.0, 5.0, 5.0, 1.0],
            "conf_low": [1.0, 2.0, 3.0, 1.0, 1.0, 0.0],
            "conf_high": [20.0, 40.0, 30.0, 9.0, 9.0, 2.0],
            "baseline": [25.0, 25.0, 25.0, 20.0, 20.0, 20.0],
        }
    )
    leaders = pl.DataFrame(
        {"model": ["b", "c", "a", "a", "b", "c"], "channel": ["ir"] * 3 + ["gap"] * 3, "tier": [1, 1, 2, 1, 1, 2]}
    )
    html = tables.leaderboard_table(metrics, "pgr", title="t", leaders=leaders)[0].as_raw_html()
    assert html.index(">b<") < html.index(">c<") < html.index(">a<") < html.index(">random baseline<")
    assert html.count(tables.LEADER) == 4 and tables.GOLD not in html
    assert "Shaded: each channel&#x27;s leaders" in html and "Rows: by the mean over the channels" in html
    plain = tables.leaderboard_table(metrics, "pgr", title="t")[0].as_raw_html()
    assert tables.LEADER not in plain and "the paper&#x27;s marks" in plain
    matrix = tables.rank_range_table(
        leaders.with_columns(
            pl.Series("estimate", [30.0, 20.0, 10.0, 5.0, 5.0, 1.0]),
            pl.Series("rank_low", [1.0, 1.0, 3.0, 1.0, 1.0, 3.0]),
            pl.Series("rank_high", [2.0, 2.0, 3.0, 2.0, 2.0, 3.0]),
        ),
        title="r",
    ).as_raw_html()
    assert matrix.count("1–2") == 4 and matrix.count(">3<") == 2 and matrix.count(tables.LEADER) == 4


def test_the_posterior_answer_names_each_channels_leader_in_the_channel_tables_order():
    # dipole_norm: a leads (3 against 1), P(a > b) 0.5; ir: b leads (2 against 1), P(b > a) 0.99: one sure of two
    quantities = pl.DataFrame(
        {
            "model": ["a", "b", "a", "b"],
            "channel": ["ir", "ir", "dipole_norm", "dipole_norm"],
            "estimate": [1.0, 2.0, 3.0, 1.0],
        }
    )
    contrasts = pl.DataFrame(
        {"channel": ["ir", "dipole_norm"], "model_a": ["b", "a"], "model_b": ["a", "b"], "probability": [0.99, 0.5]}
    )
    assert tables.posterior_leaders(quantities, contrasts) == (
        "Highest posterior mean: a on Dipole norm; b on IR. On 1 of 2 channels the posterior puts the leader "
        "above the runner-up with probability 0.95 or more."
    )
