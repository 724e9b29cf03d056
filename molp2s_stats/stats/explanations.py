"""Do the justifications cite the property they were shown?

MolP2SBench asks for a choice and a one- or two-sentence justification. A response
*cites the shown property* when its text names the channel's quantity (``dipole``,
``HOMO–LUMO gap``, ``IR``, ``shielding``, …) or repeats a number that the prompt's
property block shows (a number with a decimal point or of three or more digits, so
that "three carbons" or "B2" do not count). Only responses with raw text enter; a
response given as a bare label has no justification.

Per model × channel × condition (source, shuffled, cf) over the channel's cohort:

- ``cites_property``: the share of answers that cite the shown property;
- ``cites_but_persists`` (cf tasks): the share of answers that cite the property yet
  keep the source candidate: the justification talks about the property while the
  choice ignores it.

Both are ratios of sums over families with a family-bootstrap interval, like every
metric.
"""

from __future__ import annotations

import functools
import re

import duckdb
import numpy as np
import polars as pl

from .. import units
from ..defaults import DEFAULT_DRAWS, DEFAULT_MAX_PEAKS
from . import resample
from .metrics import ESTIMATE_COLUMNS, family_matrices

__all__ = ["EXPLANATION_METRICS", "cites_property", "response_citations", "citation_rates", "explanations_from_db"]

EXPLANATION_METRICS = ("cites_property", "cites_but_persists")
# Words that name each kind of quantity; a bundle's response may name any component's.
QUANTITY_WORDS = {
    "dipole_norm": r"dipole",
    "dipole_vector": r"dipole",
    "gap": r"homo|lumo|band\s*gap|energy\s+gap|\bgap\b",
    "ir": r"\bir\b|infra-?red|cm[-⁻]1|cm⁻¹|wavenumber|stretch|vibration",
    "raman": r"raman|cm[-⁻]1|cm⁻¹|wavenumber|stretch|vibration",
    "uvvis": r"uv|excitation|absorption|oscillator|\bev\b",
    "nmr": r"nmr|shielding|chemical\s+shift|ppm|¹h|¹³c|\b1h\b|\b13c\b",
}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
SCHEMA = {
    "model": pl.String,
    "channel": pl.String,
    "condition": pl.String,
    "metric": pl.String,
    "estimate": pl.Float64,
    "conf_low": pl.Float64,
    "conf_high": pl.Float64,
    "conf_level": pl.Float64,
    "n": pl.Int64,
    "answers": pl.Int64,
    "method": pl.String,
    "draws": pl.Int64,
    "draws_undefined": pl.Int64,
    "seed": pl.Int64,
}


def _significant_numbers(text: str) -> frozenset[str]:
    # 100 is the relative-intensity scale every spectrum shows, not a value of this molecule
    return frozenset(m for m in _NUMBER.findall(text) if ("." in m or len(m) >= 3) and float(m) != 100)


# a task's property text is read once, not once per model that answered it (eight on the default data)
_shown_numbers = functools.lru_cache(maxsize=65_536)(_significant_numbers)


@functools.lru_cache(maxsize=256)
def _quantity_pattern(channels: tuple[str, ...]) -> re.Pattern:
    words = [
        QUANTITY_WORDS["nmr" if c.startswith(("h1_", "c13_")) else c]
        for c in channels
        if c in QUANTITY_WORDS or c.startswith(("h1_", "c13_"))
    ]
    return re.compile("|".join(words) or r"(?!)", re.I)


def cites_property(response: str, property_text: str | None, components: list[str]) -> bool:
    """Whether one justification names the quantity of ``components`` or a number shown in ``property_text``.

    >>> cites_property("The 2.35 D dipole fits B best.\\nAnswer: B", "Dipole moment: 2.35 D", ["dipole_norm"])
    True
    >>> cites_property("B has three carbons.\\nAnswer: B", "Dipole moment: 2.35 D", ["dipole_norm"])
    False
    >>> cites_property("The peak at 1712 is a carbonyl.", "1712: 100.0", ["ir"])
    True
    """
    if not response:
        return False
    if _quantity_pattern(tuple(components)).search(response):
        return True
    return bool(property_text and _significant_numbers(response) & _shown_numbers(property_text))


def response_citations(
    con: duckdb.DuckDBPyConnection, *, max_peaks: int = DEFAULT_MAX_PEAKS, channels: list[str] | None = None
) -> pl.DataFrame:
    """One row per terminal response with text to a cohort task with properties.

    ``max_peaks`` is the IR and Raman peak cap the prompts were exported with: the
    numbers a justification can repeat are those its prompt showed. ``channels``
    restricts the responses (default: every channel); only their prompts are rendered.

    Columns: ``model, channel, condition, family_id, task_id, sample, cites, persists``
    (``persists``: the choice is the family's source candidate on a cf task).
    """
    from ..prompts import benchmark_tables, render_prompts

    responses = con.sql(
        """SELECT r.model, t.channel, t.condition, t.family_id, t.task_id, r.sample, r.response,
                  r.choice = t.source_label AND t.condition = 'cf' AS persists
           FROM stg_terminal_responses AS r
           JOIN cohort_tasks AS t ON t.model = r.model AND t.task_id = r.task_id
           WHERE t.condition IN ('source', 'shuffled', 'cf') AND r.response IS NOT NULL
             AND trim(r.response) <> '' AND (? IS NULL OR list_contains(?, t.channel))""",
        params=[channels, channels],
    ).pl()
    if responses.height == 0:
        return responses.drop("response").with_columns(pl.lit(False).alias("cites"))
    tables = benchmark_tables(con)
    tasks = responses["task_id"].unique().to_list()
    tables["tasks"] = tables["tasks"].filter(pl.col("task_id").is_in(tasks))
    shown = dict(render_prompts(tables, max_peaks=max_peaks).select("task_id", "property_text").iter_rows())
    components = dict(
        con.sql("SELECT channel, list(component) FROM stg_channel_components GROUP BY channel").fetchall()
    )
    cites = [
        cites_property(text, shown.get(task_id), components.get(channel, [channel]))
        for text, task_id, channel in responses.select("response", "task_id", "channel").iter_rows()
    ]
    return responses.drop("response").with_columns(
        pl.Series("cites", cites, pl.Boolean), pl.col("persists").fill_null(False)
    )


def citation_rates(
    citations: pl.DataFrame, *, draws: int = DEFAULT_DRAWS, seed: int = 0, conf_level: float = 0.95
) -> pl.DataFrame:
    """The citing rates per model × channel × condition with family-bootstrap intervals (in %).

    ``citations`` has the columns of :func:`response_citations`. One row per model ×
    channel × condition × metric; ``n`` is the families with at least one answer,
    ``answers`` the responses counted. The channel's families are resampled; every
    model and condition of a channel shares the same replicates.
    """
    resample.check_options(draws=draws, conf_level=conf_level)
    per_family = citations.group_by("model", "channel", "condition", "family_id").agg(
        pl.len().cast(pl.Float64).alias("answers"),
        pl.col("cites").sum().cast(pl.Float64).alias("cites_property"),
        (pl.col("cites") & pl.col("persists")).sum().cast(pl.Float64).alias("cites_but_persists"),
    )
    rows = []
    for (channel,), part in sorted(per_family.group_by("channel"), key=lambda g: g[0]):
        # one column per model × condition on the channel's families: every cell of a
        # channel is resampled on the same replicates
        part = part.with_columns(pl.concat_str("model", "condition", separator="\x1f").alias("cell"))
        keys = sorted(part["cell"].unique().to_list())
        _, matrices = family_matrices(
            part.rename({"model": "_model", "cell": "model"}), models=keys, columns=["answers", *EXPLANATION_METRICS]
        )
        for metric in EXPLANATION_METRICS:
            chosen = [j for j, key in enumerate(keys) if metric == "cites_property" or key.endswith("\x1fcf")]
            a, b = matrices[metric][:, chosen], matrices["answers"][:, chosen]
            estimate = resample.ratio_of_sums(np.ones((1, a.shape[0])), a, b)[0]
            low, high, undefined, method, used = resample.bootstrap_ratio(
                a, b, draws=draws, seed=seed, key=f"explanations:{channel}", conf_level=conf_level
            )
            for i, j in enumerate(chosen):
                model, condition = keys[j].split("\x1f")
                rows.append(
                    (
                        model,
                        channel,
                        condition,
                        metric,
                        float(estimate[i]),
                        float(low[i]),
                        float(high[i]),
                        conf_level,
                        int((b[:, i] > 0).sum()),
                        int(b[:, i].sum()),
                        method[i],
                        used,
                        int(undefined[i]),
                        seed,
                    )
                )
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row").with_columns(pl.col(pl.Float64).fill_nan(None))
    return units.percent_columns(frame, ESTIMATE_COLUMNS)


def explanations_from_db(
    con: duckdb.DuckDBPyConnection, *, max_peaks: int = DEFAULT_MAX_PEAKS, channels: list[str] | None = None, **options
) -> pl.DataFrame:
    """:func:`citation_rates` of the database's cohort responses (of ``channels``; default
    every channel), channels in display order. Each channel has its own bootstrap
    stream, so a channel's figures do not depend on which others are asked for."""
    rates = citation_rates(response_citations(con, max_peaks=max_peaks, channels=channels), **options)
    order = con.sql("SELECT channel, position FROM stg_channels").pl()
    conditions = pl.DataFrame({"condition": ["source", "shuffled", "cf"], "_c": [0, 1, 2]})
    names = pl.DataFrame({"metric": list(EXPLANATION_METRICS), "_m": list(range(len(EXPLANATION_METRICS)))})
    return (
        rates.join(order, on="channel", how="left")
        .join(conditions, on="condition", how="left")
        .join(names, on="metric", how="left")
        .sort("position", "model", "_c", "_m")
        .drop("position", "_c", "_m")
    )
