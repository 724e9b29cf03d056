"""Report tables: great-tables for the page, CSV and LaTeX beside it for papers.

The pages call ``show``: it displays the table and writes ``<name>.csv`` and
``<name>.tex`` into the site's ``tables/`` folder. A leaderboard keeps the paper's
layout (models as rows, channels as columns, ``estimate [low, high]``), marks the
best and second best model per column in gold and silver, and closes with the
random-baseline row, which is never ranked.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import polars as pl
from great_tables import GT, loc, style

from ..output import leaderboard

GOLD, SILVER = "#f4d35e", "#d9d9d9"
BASELINE = "random baseline"
TABLES_ENV = "MOLP2S_REPORT_TABLES"


def tables_folder() -> Path:
    """Where tables are written: ``$MOLP2S_REPORT_TABLES``, else ``tables/`` in the working folder.

    Under ``quarto render`` the working folder is reports/, and ``_quarto.yml`` lists
    ``tables/`` as a resource, so Quarto copies the files into the site after rendering.
    """
    folder = Path(os.environ.get(TABLES_ENV, "tables"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def leaderboard_table(metrics: pl.DataFrame, metric: str, *, title: str, subtitle: str | None = None,
                      higher_is_better: bool = True,
                      interval_note: str = "Intervals: 95% family bootstrap.") -> tuple[GT, pl.DataFrame]:
    """The leaderboard of one metric as a great-table, and the wide frame behind it."""
    wide = leaderboard(metrics, metric)
    channels = [c for c in wide.columns if c != "model"]
    estimates = (metrics.filter(pl.col("metric") == metric)
                 .pivot(on="channel", index="model", values="estimate"))
    table = GT(wide, rowname_col="model").tab_header(title=title, subtitle=subtitle)
    for channel in channels:
        values = dict(zip(estimates["model"], estimates[channel])) if channel in estimates.columns else {}
        marks = podium([None if m == BASELINE else values.get(m) for m in wide["model"]], higher_is_better)
        for row, colour in enumerate(marks):
            if colour:
                table = table.tab_style(style=style.fill(color=colour), locations=loc.body(columns=channel, rows=[row]))
    if BASELINE in wide["model"].to_list():
        baseline_row = wide["model"].to_list().index(BASELINE)
        table = table.tab_style(style=style.text(style="italic", color="#555555"),
                                locations=loc.body(rows=[baseline_row]))
    return table.tab_source_note(f"Gold: best per column; silver: second. {interval_note}"), wide


def podium(values: list[float | None], higher_is_better: bool = True) -> list[str | None]:
    """Gold for the best value, silver for the second best distinct value, per position; ties share.

    >>> podium([50.0, 70.0, None, 60.0])
    [None, '#f4d35e', None, '#d9d9d9']
    >>> podium([70.0, 70.0, 60.0])
    ['#f4d35e', '#f4d35e', '#d9d9d9']
    """
    distinct = sorted({v for v in values if v is not None}, reverse=higher_is_better)
    colours = dict(zip(distinct[:2], (GOLD, SILVER)))
    return [colours.get(v) if v is not None else None for v in values]


def plain_table(frame: pl.DataFrame, *, title: str, subtitle: str | None = None, decimals: int = 1) -> GT:
    """Any tidy frame as a great-table, floats rounded for reading."""
    table = GT(frame).tab_header(title=title, subtitle=subtitle)
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    return table.fmt_number(columns=floats, decimals=decimals) if floats else table


def save(frame: pl.DataFrame, table: GT, name: str) -> None:
    """CSV of the frame and LaTeX of the table, beside the page."""
    folder = tables_folder()
    frame.write_csv(folder / f"{name}.csv")
    with warnings.catch_warnings():
        # great-tables' LaTeX carries the values, not the gold/silver fills: known, and fine for a paper draft
        warnings.filterwarnings("ignore", message="Styles are not yet supported in LaTeX output")
        (folder / f"{name}.tex").write_text(table.as_latex())


def show(frame: pl.DataFrame, table: GT, name: str):
    """Write the table's CSV and LaTeX, and return HTML for the notebook to display."""
    from IPython.display import HTML

    save(frame, table, name)
    return HTML(table.as_raw_html())
