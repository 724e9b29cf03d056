"""Binomial cells for the model, read off the ``binomial_cells`` view.

One row per model × channel × condition × cohort family for source, shuffled and cf
(cf tasks of a family pooled: same covariates, so one binomial row), and one row per
model × family for P0, which belongs to no channel. Aggregating identical covariate
patterns into binomial counts leaves the likelihood unchanged and shrinks the rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from ..defaults import CONDITIONS as ALL_CONDITIONS
from ..errors import UsageError

# the conditions the model has effects for: P0 ("none") enters as its own per-model intercept
MODELLED_CONDITIONS = tuple(c for c in ALL_CONDITIONS if c != "none")

_CELLS_SQL = """
SELECT model, channel, condition, family_id, successes, trials
FROM binomial_cells
WHERE condition <> 'none' AND list_contains($channels, channel)
"""
# P0 cells repeat under each channel whose cohort holds the family: one per model × family
_P0_SQL = """
SELECT DISTINCT model, family_id, successes, trials
FROM binomial_cells
WHERE condition = 'none' AND list_contains($channels, channel)
"""


@dataclass(frozen=True)
class ModelData:
    """Index arrays and counts; every label list is sorted, so fits do not depend on row order."""

    models: list[str]
    channels: list[str]
    families: list[str]
    family_channels: list[tuple[str, str]]  # (family_id, channel) pairs in some cohort
    n_candidates: float  # mean K over the families, for the prior centre
    cells: pl.DataFrame  # model, channel, condition, family_id, successes, trials + integer indices
    p0: pl.DataFrame  # model, family_id, successes, trials + integer indices


def read_model_data(con: duckdb.DuckDBPyConnection, *, channels: list[str] | None = None) -> ModelData:
    """Binomial cells of the cohorts of ``channels`` (default: every channel with a cohort)."""
    if channels is None:
        channels = con.sql("SELECT channel FROM cohort_summary WHERE cohort > 0").pl()["channel"].to_list()
    cells = con.sql(_CELLS_SQL, params={"channels": channels}).pl()
    p0 = con.sql(_P0_SQL, params={"channels": channels}).pl()
    if cells.height == 0:
        raise UsageError("no cohort families in the requested channels: nothing to fit")
    k_mean = con.sql(
        """SELECT avg(n_candidates) FROM family_candidates
           WHERE family_id IN (SELECT family_id FROM cohort WHERE in_cohort)"""
    ).fetchall()[0][0]
    return index(cells, p0, n_candidates=float(k_mean))


def index(cells: pl.DataFrame, p0: pl.DataFrame, *, n_candidates: float) -> ModelData:
    """Attach integer indices (sorted labels) to the cells."""
    models = sorted(set(cells["model"]) | set(p0["model"]))
    channels = sorted(cells["channel"].unique().to_list())
    families = sorted(set(cells["family_id"]) | set(p0["family_id"]))
    pairs = sorted(set(cells.select("family_id", "channel").iter_rows()))

    def code(column: str, labels: list) -> pl.Expr:
        return pl.col(column).replace_strict({v: i for i, v in enumerate(labels)}, return_dtype=pl.Int64)

    pair_code = {p: i for i, p in enumerate(pairs)}
    cells = cells.sort("model", "channel", "condition", "family_id").with_columns(
        code("model", models).alias("model_index"),
        code("channel", channels).alias("channel_index"),
        code("condition", list(MODELLED_CONDITIONS)).alias("condition_index"),
        code("family_id", families).alias("family_index"),
        pl.Series(
            "family_channel_index",
            [
                pair_code[p]
                for p in cells.sort("model", "channel", "condition", "family_id")
                .select("family_id", "channel")
                .iter_rows()
            ],
            pl.Int64,
        ),
    )
    p0 = p0.sort("model", "family_id").with_columns(
        code("model", models).alias("model_index"), code("family_id", families).alias("family_index")
    )
    return ModelData(models, channels, families, pairs, n_candidates, cells, p0)


POOLED_FAMILY = "(every family)"  # the one family label of ``pooled_over_families``


def pooled_over_families(data: ModelData) -> ModelData:
    """``data``'s cells summed over families: one cell per model × channel × condition, one P0 cell per
    model, under the single family ``POOLED_FAMILY``.

    What the model without family effects is sampled on. Its linear predictor does not depend
    on the family, so the sum over a model × channel × condition's families of
    ``s_f·η − n_f·log(1 + e^η)`` is ``S·η − N·log(1 + e^η)``: the same log density up to the
    binomial coefficients (constants), so the same posterior, from a few hundred cells
    instead of every family's (85,856 on the default data). Its LOO is still read off
    ``data``'s own cells (``loo.loo_comparison``), one observation per cell as before.
    """

    def summed(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
        return (
            frame.group_by(keys)
            .agg(pl.col("successes").sum(), pl.col("trials").sum())
            .with_columns(pl.lit(POOLED_FAMILY).alias("family_id"))
            .select(*keys, "family_id", "successes", "trials")
        )

    return index(
        summed(data.cells, ["model", "channel", "condition"]),
        summed(data.p0, ["model"]),
        n_candidates=data.n_candidates,
    )


def only_models(data: ModelData, models: list[str]) -> ModelData:
    """The cells of ``models`` alone, indexed afresh (a leaderboard before some models were added)."""
    raw = ["model", "channel", "condition", "family_id", "successes", "trials"]
    return index(
        data.cells.filter(pl.col("model").is_in(models)).select(raw),
        data.p0.filter(pl.col("model").is_in(models)).select("model", "family_id", "successes", "trials"),
        n_candidates=data.n_candidates,
    )
