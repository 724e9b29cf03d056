"""Showing result frames: terminal tables, CSV, JSON, Parquet. Formatting lives only here, at the edge."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

from ..errors import UsageError
from ..lazy import lazy_import
from ..output import replacing

pl = lazy_import("polars")


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


def _cell(value: object) -> str:
    """Terminal text of one value: 2 decimals from 1 up, 3 significant digits below."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        return f"{value:,.2f}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"
    return str(value)


def rich_table(frame: pl.DataFrame, title: str | None = None):
    from rich.table import Table

    if frame.height == 1 and frame.width > 6:
        # one wide row (fit diagnostics, say) reads as a list of name and value, not cut columns
        table = Table(title=title, show_lines=False)
        table.add_column("column")
        table.add_column("value", justify="right")
        for name, value in frame.row(0, named=True).items():
            table.add_row(name, _cell(value))
        return table
    table = Table(title=title, show_lines=False)
    for position, (name, dtype) in enumerate(frame.schema.items()):
        # the first text column names the row (a model, a channel): never cut it
        table.add_column(
            name, justify="right" if dtype.is_numeric() else "left", no_wrap=position == 0 and not dtype.is_numeric()
        )
    for row in frame.iter_rows():
        table.add_row(*(_cell(v) for v in row))
    return table


SUFFIX_FORMATS = {".csv": Format.csv, ".json": Format.json, ".parquet": Format.parquet}


def resolve_format(fmt: Format | None, out: Path | None) -> Format:
    """The format asked for; else the one the suffix of ``out`` names; else a terminal table."""
    if fmt is not None:
        return fmt
    return SUFFIX_FORMATS.get(Path(out).suffix.lower(), Format.table) if out is not None else Format.table


def emit(frame: pl.DataFrame, fmt: Format | None, out: Path | None, *, title: str | None = None) -> None:
    """Print or write ``frame``; Parquet needs a file. A file is written whole or not at all (``replacing``)."""
    fmt = resolve_format(fmt, out)
    if fmt is Format.parquet:
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        with replacing(out) as partial:
            frame.write_parquet(partial)
        return
    if fmt is Format.table:
        from rich.console import Console

        if out is None:
            Console(file=sys.stdout, width=max(Console().width, 160)).print(rich_table(frame, title))
            return
        with replacing(out) as partial, open(partial, "w", encoding="utf-8") as handle:
            Console(file=handle, width=max(Console().width, 160)).print(rich_table(frame, title))
        return
    text = frame.write_csv() if fmt is Format.csv else frame.write_json()
    text += "" if text.endswith("\n") else "\n"
    if out is not None:
        with replacing(out) as partial:
            partial.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def with_interval(frame: pl.DataFrame, value: str = "estimate") -> pl.Expr:
    """'61.2 [48.0, 73.1]' from a value column and conf_low/conf_high (terminal only)."""

    def fmt(col: str) -> pl.Expr:
        return pl.col(col).round(1).cast(pl.String).fill_null("—")

    return (
        pl.when(pl.col("conf_low").is_null())
        .then(fmt(value))
        .otherwise(pl.format("{} [{}, {}]", fmt(value), fmt("conf_low"), fmt("conf_high")))
    )


def leaderboard(metrics: pl.DataFrame, metric: str) -> pl.DataFrame:
    """The paper's leaderboard layout: one row per model, one column per channel
    ('estimate [low, high]'), and a closing random-baseline row."""
    from ..stats.metrics import with_random_baseline

    rows = with_random_baseline(metrics, metric)
    channels = rows["channel"].unique(maintain_order=True).to_list()
    return (
        rows.with_columns(with_interval(rows).alias("cell"))
        .pivot(on="channel", index="model", values="cell", maintain_order=True)
        .select("model", *channels)
    )
