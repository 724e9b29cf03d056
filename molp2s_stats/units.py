"""Proportions inside, percent at the edge.

Every computation works with rates as proportions (0–1) and with differences of rates
as differences of proportions. The frames handed to users (commands, pages, exported
tables, the simulator's truth file) show rates in % and differences in percentage
points (pp); the conversion happens here, when a function assembles the frame it
returns. The one view that is itself a table users read, ``separability`` (the paper's
Table 6), gives its rate in % in SQL.

>>> import polars as pl
>>> percent_columns(pl.DataFrame({"estimate": [0.125], "n": [8]}), ["estimate"]).row(0)
(12.5, 8)
>>> proportion(14.0)
0.14
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

PERCENT = 100.0


def percent(value: float) -> float:
    """A proportion (or a difference of proportions) in % (pp)."""
    return value * PERCENT


def proportion(value: float) -> float:
    """A figure given in % (or pp) as a proportion: for inputs such as ``--difference``."""
    return value / PERCENT


def percent_columns(frame: pl.DataFrame, columns: Iterable[str]) -> pl.DataFrame:
    """``frame`` with these proportion columns in % (pp for differences); the rest untouched."""
    return frame.with_columns(pl.col(c) * PERCENT for c in columns)


def percent_column(share: str, name: str) -> pl.Expr:
    """A proportion column ``share`` in %, as a new column ``name`` (``invalid_share`` → ``invalid_pct``)."""
    return (pl.col(share) * PERCENT).alias(name)
