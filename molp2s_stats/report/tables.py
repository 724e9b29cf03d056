"""Report tables: great-tables for the page, CSV and LaTeX beside it for papers.

The pages call ``show``: it displays the table and writes ``<name>.csv`` and
``<name>.tex`` into the site's ``tables/`` folder. A leaderboard keeps the paper's
layout (models as rows, channels as columns, ``estimate [low, high]``), marks the
best and second best model per column in gold and silver, and closes with the
random-baseline row, which is never ranked.
"""

from __future__ import annotations

import html
import os
import re
import warnings
from pathlib import Path

import polars as pl
from great_tables import GT, loc, style

from ..glossary import column_label
from ..stats.metrics import BASELINE, channel_names, in_channel_order, read_channel_table, with_random_baseline
from ..stats.subsample import ESTIMATED_METHODS

GOLD, SILVER = "#f4d35e", "#d9d9d9"
LEADER = "#cfe8cf"  # a channel's top tie group: the models the data cannot separate from the first
TABLES_ENV = "MOLP2S_REPORT_TABLES"


INTERVAL_NOTE = (
    "Intervals: 95% family-level (the bootstrap's percentile interval; a score interval near 0% or "
    "100%; the CSV names each row's method)."
)


def tables_folder() -> Path:
    """Where tables are written: ``$MOLP2S_REPORT_TABLES``, else ``tables/`` in the working folder.

    Under ``quarto render`` the working folder is reports/, and ``_quarto.yml`` lists
    ``tables/`` as a resource, so Quarto copies the files into the site after rendering.
    """
    folder = Path(os.environ.get(TABLES_ENV, "tables"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def group_title(group: str) -> str:
    """A channel group's spanner: ``magnetic_resonance`` → ``Magnetic resonance``."""
    return group.replace("_", " ").capitalize()


def column_layout(channels: pl.DataFrame | None = None) -> dict[str, tuple[str, str | None, str]]:
    """channel → (group spanner, subgroup spanner or None, column label), from the channel
    table (``metrics.read_channel_table``; default the package's): the paper's Tables 2 and 9
    put Dipole, Gap, UV–Vis under Electronic and Peaks, +Int., Atomwise under ¹H NMR
    under Magnetic resonance."""
    channels = channels if channels is not None else read_channel_table()
    return {
        c: (group_title(g), sub, label)
        for c, g, sub, label in channels.select("channel", "group", "subgroup", "column_label").iter_rows()
    }


def _label(layout: dict, channel: str) -> str:
    return layout[channel][2] if channel in layout else channel


def _interval_grid(tidy: pl.DataFrame, *, rows: tuple[str, list[str]], columns: tuple[str, list[str]]) -> pl.DataFrame:
    """One row per value of ``rows``, and per value of ``columns`` three numeric columns:
    ``<value>`` (the estimate), ``<value>__low`` and ``<value>__high``, for ``cols_merge``."""
    (row_key, row_values), (column_key, column_values) = rows, columns
    wide = pl.DataFrame({row_key: row_values})
    for column, suffix in (("estimate", ""), ("conf_low", "__low"), ("conf_high", "__high")):
        part = tidy.pivot(on=column_key, index=row_key, values=column).rename(
            {c: f"{c}{suffix}" for c in column_values}, strict=False
        )
        wide = wide.join(part, on=row_key, how="left", maintain_order="left")
    return wide.select(row_key, *[f"{c}{s}" for c in column_values for s in ("", "__low", "__high")])


def _interval_cells(table: GT, columns: list[str]) -> GT:
    """Each of ``columns`` as ``estimate [low, high]`` with one decimal, from the columns
    ``_interval_grid`` makes; a missing estimate reads "—", a missing interval drops its brackets."""
    table = table.fmt_number(columns=[f"{c}{s}" for c in columns for s in ("", "__low", "__high")], decimals=1)
    table = table.sub_missing(columns=columns, missing_text="—")
    for column in columns:
        table = table.cols_merge(columns=[column, f"{column}__low", f"{column}__high"], pattern="{0}<< [{1}, {2}]>>")
    return table


def _fill(table: GT, columns: list[str], colours: list[list[str | None]]) -> GT:
    """Fill each body cell (row i, ``columns[j]``) with ``colours[i][j]`` where one is given."""
    for row, row_colours in enumerate(colours):
        for column, colour in zip(columns, row_colours):
            if colour:
                table = table.tab_style(style=style.fill(color=colour), locations=loc.body(columns=column, rows=[row]))
    return table


def model_order(
    order: list[str], models: pl.DataFrame | None, scores: dict[str, float] | None = None
) -> tuple[list[str], dict, dict]:
    """Models in report order, with their display names and groups (from the benchmark's
    optional models table): by group, in the order the groups first appear there, ungrouped
    ones after; within a group by ``scores`` (highest first) where given; the random baseline last."""
    names = dict(models.select("model", "display_name").iter_rows()) if models is not None else {}
    groups = dict(models.select("model", "group").iter_rows()) if models is not None else {}
    if scores:
        order = sorted(order, key=lambda m: -scores.get(m, float("-inf")))
    if any(groups.get(m) for m in order):
        group_order = {g: i for i, g in enumerate(dict.fromkeys(g for g in models["group"] if g))}
        order = sorted(order, key=lambda m: group_order.get(groups.get(m), len(group_order)))
    if BASELINE in order:
        order = [m for m in order if m != BASELINE] + [BASELINE]
    return order, names, groups


def leaderboard_table(
    metrics: pl.DataFrame,
    metric: str,
    *,
    title: str,
    subtitle: str | None = None,
    higher_is_better: bool = True,
    interval_note: str = INTERVAL_NOTE,
    models: pl.DataFrame | None = None,
    channel_table: pl.DataFrame | None = None,
    leaders: pl.DataFrame | None = None,
) -> tuple[GT, pl.DataFrame]:
    """The leaderboard of one metric as the paper lays it out, and the tidy frame behind it.

    One row per model, by the mean over channels (best first; the table's note says so), the
    random baseline last; one column per channel in the data's order, under the paper's spanners
    (Electronic, Vibrational, Magnetic resonance with ¹H and ¹³C NMR, Bundles); cells ``estimate
    [low, high]`` with one decimal, formatted by great-tables from numeric columns. ``models``
    (``model, display_name, group``, the benchmark's optional models table) names the rows and
    groups them (closed- and open-weight, say) in the order the groups first appear;
    ``channel_table`` (the database's, ``metrics.read_channel_table``) gives the spanners and
    labels. ``leaders`` (`stability.rank_intervals`' ``model, channel, tier``) shades each
    channel's top tie group, the models the data cannot separate from the first; without it, the
    paper's marks: gold and silver on the two highest values of each column, whether or not the
    data separate them. The frame returned is what gets exported: numbers, one row per model ×
    channel.
    """
    tidy = in_channel_order(with_random_baseline(metrics, metric), channel_table)
    channels = tidy["channel"].unique(maintain_order=True).to_list()
    means = dict(tidy.filter(pl.col("model") != BASELINE).group_by("model").agg(pl.col("estimate").mean()).iter_rows())
    scores = {m: (v if higher_is_better else -v) for m, v in means.items() if v is not None}
    order, names, groups = model_order(tidy["model"].unique(maintain_order=True).to_list(), models, scores)
    grouped = any(groups.get(m) for m in order)
    wide = _interval_grid(tidy, rows=("model", order), columns=("channel", channels))
    # rows of a model run on part of the benchmark carry the estimate over the whole cohort
    estimated = (
        set(tidy.filter(pl.col("method").is_in(ESTIMATED_METHODS))["model"]) if "method" in tidy.columns else set()
    )
    labels = [f"{names.get(m) or m} (estimated)" if m in estimated else names.get(m) or m for m in order]
    extra = {"label": labels}
    if grouped:
        extra["group"] = [groups.get(m) or ("" if m == BASELINE else "Other models") for m in order]
    wide = wide.with_columns(**{k: pl.Series(v, dtype=pl.String) for k, v in extra.items()})
    table = GT(wide.drop("model"), rowname_col="label", groupname_col="group" if grouped else None)
    table = _interval_cells(table.tab_header(title=title, subtitle=subtitle), channels)
    layout = column_layout(channel_table)
    table = table.cols_label(**{c: _label(layout, c) for c in channels})
    table = _spanners(table, channels, layout)
    if leaders is not None:
        top = set(leaders.filter(pl.col("tier") == 1).select("model", "channel").iter_rows())
        columns = [[LEADER if (m, c) in top else None for m in order] for c in channels]
        marks = (
            "Shaded: each channel's leaders, its top tie group (no two of them separated at 95%, "
            "simultaneous within the channel)."
        )
    else:
        ranked = wide.with_columns(pl.when(pl.col("model") != BASELINE).then(pl.col(c)).alias(c) for c in channels)
        columns = [podium(ranked[c].to_list(), higher_is_better) for c in channels]  # the baseline is never ranked
        marks = (
            "Gold and silver: the two highest values of each column (the paper's marks), whether or not the "
            "data separate them."
        )
    table = _fill(table, channels, [list(row) for row in zip(*columns)])
    if BASELINE in order:
        table = table.tab_style(
            style=style.text(style="italic", color="#555555"), locations=loc.body(rows=[order.index(BASELINE)])
        )
    if estimated:
        table = table.tab_source_note(
            "Estimated: the model answered a planned fraction of the families; its row is the estimate over the "
            "whole cohort (the AIPW estimator, from its answers and the complete models' outcomes), with a 95% "
            "design-based interval."
        )
    rows = "Rows: by the mean over the channels, best first" + (", within each group." if grouped else ".")
    return table.tab_source_note(f"{marks} {rows} {interval_note}"), tidy


def rank_range_table(
    ranges: pl.DataFrame,
    *,
    title: str,
    models: pl.DataFrame | None = None,
    channel_table: pl.DataFrame | None = None,
) -> GT:
    """`stability.rank_intervals` as a matrix a person can scan: one row per model (by the mean of its
    estimates over the channels, best first), one column per channel under the leaderboard's spanners,
    each cell the rank range ("2–4", or "1" where the data fix it), each channel's top tie group shaded
    as on the leaderboard; a model without a score on a channel shows "—"."""
    ranked = in_channel_order(ranges, channel_table)
    channels = ranked["channel"].unique(maintain_order=True).to_list()
    means = dict(ranked.group_by("model").agg(pl.col("estimate").mean()).iter_rows())
    order, names, groups = model_order(
        ranked["model"].unique(maintain_order=True).to_list(),
        models,
        {m: v for m, v in means.items() if v is not None},
    )
    cells = ranked.with_columns(
        pl.when(pl.col("rank_low").is_null())
        .then(pl.lit("—"))
        .when(pl.col("rank_low") == pl.col("rank_high"))
        .then(pl.col("rank_low").cast(pl.Int64).cast(pl.String))
        .otherwise(pl.format("{}–{}", pl.col("rank_low").cast(pl.Int64), pl.col("rank_high").cast(pl.Int64)))
        .alias("range")
    )
    wide = (
        pl.DataFrame({"model": order})
        .join(cells.pivot(on="channel", index="model", values="range"), on="model", how="left", maintain_order="left")
        .select("model", *channels)
    )
    grouped = any(groups.get(m) for m in order)
    wide = wide.with_columns(pl.Series("label", [names.get(m) or m for m in order], dtype=pl.String))
    if grouped:
        wide = wide.with_columns(pl.Series("group", [groups.get(m) or "Other models" for m in order], dtype=pl.String))
    layout = column_layout(channel_table)
    table = GT(wide.drop("model"), rowname_col="label", groupname_col="group" if grouped else None)
    table = table.tab_header(title=title).cols_label(**{c: _label(layout, c) for c in channels})
    table = _spanners(table, channels, layout).cols_align(align="center", columns=channels)
    top = set(ranked.filter(pl.col("tier") == 1).select("model", "channel").iter_rows())
    table = _fill(table, channels, [[LEADER if (m, c) in top else None for c in channels] for m in order])
    return table.tab_source_note(
        "Each cell: the best and worst rank the data allow (1 = best), simultaneous within a channel at 95%. "
        "Shaded: the channel's top tie group. Rows: by the mean over the channels, best first."
    )


NO_PROPERTIES = "none"  # the channel of P0 tasks, which show no property


def input_table(
    metrics: pl.DataFrame,
    p0: pl.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    models: pl.DataFrame | None = None,
    channel_table: pl.DataFrame | None = None,
) -> tuple[GT, pl.DataFrame]:
    """Source accuracy per property input as the paper's Table 7 lays it out, and its tidy frame.

    One row per input: no properties (P0, from ``p0``: ``metrics.p0_accuracy``) first, then
    each channel by name in display order; one column per model (display names, under their
    group's spanner), cells ``estimate [low, high]``; gold and silver mark the best two
    models of each row.
    """
    source = metrics.filter(pl.col("metric") == "acc_source")
    tidy = pl.concat([p0.select(source.columns), source])
    inputs = tidy["channel"].unique(maintain_order=True).to_list()
    order, names, groups = model_order(sorted(set(tidy["model"])), models)
    wide = _interval_grid(tidy, rows=("channel", inputs), columns=("model", order))
    input_names = {**channel_names(channel_table), NO_PROPERTIES: "No properties (P0)"}
    wide = wide.with_columns(pl.col("channel").replace(input_names).alias("input"))
    table = GT(wide.drop("channel"), rowname_col="input")
    table = _interval_cells(table.tab_header(title=title, subtitle=subtitle), order)
    table = table.cols_label(**{m: names.get(m) or m for m in order})
    for group in dict.fromkeys(groups.get(m) for m in order if groups.get(m)):
        table = table.tab_spanner(label=group, columns=[m for m in order if groups.get(m) == group])
    table = _fill(table, order, [podium(list(values)) for values in wide.select(order).iter_rows()])
    return table.tab_source_note(f"Gold: best per row; silver: second. {INTERVAL_NOTE}"), tidy


SPLIT_METRICS = {"cfr": "CFR", "persist": "Persist", "other": "Other"}
SPLIT_CHANNELS = ("ir", "raman", "vibrational_bundle", "all")  # the paper's Table 8


def split_table(
    metrics: pl.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    channels: tuple[str, ...] = SPLIT_CHANNELS,
    channel_table: pl.DataFrame | None = None,
) -> tuple[GT, pl.DataFrame]:
    """Where counterfactual answers go, as the paper's Table 8 lays it out: one row per model,
    per channel a spanner over CFR, Persist and Other (point estimates, %), and the tidy frame."""
    tidy = metrics.filter(pl.col("metric").is_in(list(SPLIT_METRICS)) & pl.col("channel").is_in(list(channels)))
    present = [c for c in channels if c in set(tidy["channel"])]
    wide = tidy.with_columns((pl.col("channel") + "__" + pl.col("metric")).alias("column")).pivot(
        on="column", index="model", values="estimate"
    )
    columns = [f"{c}__{m}" for c in present for m in SPLIT_METRICS if f"{c}__{m}" in wide.columns]
    wide = wide.select("model", *columns)
    table = (
        GT(wide, rowname_col="model")
        .tab_header(title=title, subtitle=subtitle)
        .fmt_number(columns=columns, decimals=1)
        .sub_missing(missing_text="—")
        .cols_label(**{c: SPLIT_METRICS[c.split("__")[1]] for c in columns})
    )
    layout = column_layout(channel_table)
    for channel in present:
        table = table.tab_spanner(
            label=_label(layout, channel), columns=[c for c in columns if c.startswith(f"{channel}__")]
        )
    return table, tidy


STABILITY_STATISTICS = {"spearman_rho": ("ρ", 3), "exact": ("Exact", 1), "mad": ("MAD", 2)}  # label, decimals
METRIC_LABELS = {"reliance_margin": "RM", "cfr": "CFR", "pgr": "PGR"}
DESIGN_HALF_WIDTH = 3.0  # pp: the PGR precision the Stability page plans the next study for


def stability_table(
    stability: pl.DataFrame,
    *,
    by: str,
    title: str,
    subtitle: str | None = None,
    channel_table: pl.DataFrame | None = None,
) -> tuple[GT, pl.DataFrame]:
    """Ranking stability as the paper's Tables 10 (``by="size"``) and 11 (``by="channel"``) lay it
    out: one row per subset size or channel (by its name), per metric a spanner over ρ, Exact and MAD."""
    metrics_present = stability["metric"].unique(maintain_order=True).to_list()
    wide = None
    for metric in metrics_present:
        part = stability.filter(pl.col("metric") == metric).select(
            by, *[pl.col(c).alias(f"{metric}__{c}") for c in STABILITY_STATISTICS]
        )
        wide = part if wide is None else wide.join(part, on=by, how="full", coalesce=True, maintain_order="left")
    columns = [c for c in wide.columns if c != by]
    rows = pl.col(by).cast(pl.String)
    if by == "channel":
        rows = rows.replace(channel_names(channel_table))
    table = GT(wide.with_columns(rows), rowname_col=by).tab_header(title=title, subtitle=subtitle)
    for statistic, (label, decimals) in STABILITY_STATISTICS.items():
        chosen = [c for c in columns if c.endswith(f"__{statistic}")]
        table = table.fmt_number(columns=chosen, decimals=decimals).cols_label(**{c: label for c in chosen})
    for metric in metrics_present:
        table = table.tab_spanner(
            label=METRIC_LABELS.get(metric, metric), columns=[c for c in columns if c.startswith(f"{metric}__")]
        )
    return table.sub_missing(missing_text="—"), stability


def _spanners(table: GT, channels: list[str], layout: dict) -> GT:
    """Sub-spanners (¹H NMR, ¹³C NMR) right above their columns, the groups above those."""
    groups: dict[str, list[str]] = {}
    subgroups: dict[str, list[str]] = {}
    for channel in channels:
        group, subgroup, _ = layout.get(channel, (None, None, channel))
        if group:
            groups.setdefault(group, []).append(channel)
        if subgroup:
            subgroups.setdefault(subgroup, []).append(channel)
    for label, columns in subgroups.items():
        table = table.tab_spanner(label=label, columns=columns, level=0, gather=False)
    for label, columns in groups.items():
        table = table.tab_spanner(label=label, columns=columns, level=1 if subgroups else 0, gather=False)
    return table


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


#: A one-row table with more columns than this reads as a list of fields (name, value), which
#: fits the page, rather than one row that scrolls sideways.
WIDE_SINGLE_ROW = 6


def verdict_sentence(subject: str, other: str, verdict: str | None, margin: float) -> str:
    """One pair's verdict as the pages say it: the only way a page words a comparison of two.

    >>> verdict_sentence("B", "A", "equivalent", 2.0)
    'B and A are equivalent within ±2 pp'
    """
    return {
        "ahead": f"{subject} is ahead of {other}",
        "behind": f"{subject} is behind {other}",
        "equivalent": f"{subject} and {other} are equivalent within ±{margin:g} pp",
        "non-inferior": f"{subject} is non-inferior to {other} (not worse by more than {margin:g} pp)",
        "undecided": f"{subject} and {other}: undecided (neither a difference nor equivalence shown)",
    }.get(verdict or "", f"{subject} and {other}: no verdict (the difference is undefined)")


def verdict_sentences(frame: pl.DataFrame, subject: str, other: str) -> str:
    """Every row's `verdict_sentence`, as a Markdown list: ``subject`` and ``other`` name the columns
    (model_b and model_a for transitions; to and from for paired inputs)."""
    return "\n".join(
        f"- {verdict_sentence(row[subject], row[other], row['verdict'], row['margin'])}."
        for row in frame.iter_rows(named=True)
    )


def leaders_summary(
    ranges: pl.DataFrame, names: dict[str, str] | None = None, models: pl.DataFrame | None = None
) -> str:
    """The Leaderboard's answer in one paragraph, from `stability.rank_intervals`: each model that leads
    somewhere (in a channel's top tie group) with its channels, on how many it leads alone, and the
    saturated channels."""
    names = names or {}
    shown = dict(models.select("model", "display_name").iter_rows()) if models is not None else {}
    top = ranges.filter(pl.col("tier") == 1)
    size = dict(top.group_by("channel").len().iter_rows())
    channels = ranges["channel"].unique(maintain_order=True).to_list()
    parts = []
    for model in top.group_by("model").len().sort(["len", "model"], descending=[True, False])["model"]:
        led = [c for c in channels if top.filter((pl.col("model") == model) & (pl.col("channel") == c)).height]
        alone = sum(size[c] == 1 for c in led)
        parts.append(
            f"**{shown.get(model) or model}** on {len(led)} of {len(channels)} "
            f"({', '.join(names.get(c, c) for c in led)}; alone on {alone})"
        )
    from ..stats.stability import SATURATION_LEVEL, saturated_channels

    saturated = saturated_channels(ranges)
    return (
        "Leaders by PGR, each channel's top tie group (the models the data cannot separate from the first, "
        "at 95% simultaneous within the channel): "
        + "; ".join(parts)
        + "."
        + (
            f" Saturated (the leaders all at or above {SATURATION_LEVEL:.0%}): "
            + ", ".join(names.get(c, c) for c in saturated)
            + "."
            if saturated
            else ""
        )
    )


def leader_sentences(pairs: pl.DataFrame, ranges: pl.DataFrame, names: dict[str, str] | None = None) -> str:
    """What the data say of each channel's leader, as a Markdown list: one line a channel, the leader
    against every other model of its tie group and against the first model behind the group, each a
    `verdict_sentence` of ``pairs`` (`stability.pair_verdicts`). ``ranges`` (`stability.rank_intervals`)
    gives the leaderboard order and the tie groups; ``names`` channel ids to the names shown."""
    names = names or {}
    lines = []
    for channel in ranges["channel"].unique(maintain_order=True).to_list():
        board = ranges.filter((pl.col("channel") == channel) & pl.col("tier").is_not_null())
        if board.height < 2:
            continue
        leader = board["model"][0]
        others = board.filter(pl.col("tier") == 1)["model"].to_list()[1:]
        others += board.filter(pl.col("tier") == 2)["model"].head(1).to_list()
        rows = {
            r["model_b"]: r
            for r in pairs.filter((pl.col("channel") == channel) & (pl.col("model_a") == leader)).iter_rows(named=True)
        }
        said = [verdict_sentence(m, leader, rows[m]["verdict"], rows[m]["margin"]) for m in others if m in rows]
        if said:
            lines.append(f"- {names.get(channel, channel)}: " + "; ".join(said) + ".")
    return "\n".join(lines)


def posterior_leaders(
    quantities: pl.DataFrame, contrasts: pl.DataFrame, channel_table: pl.DataFrame | None = None
) -> str:
    """One sentence: which model has the highest posterior mean of the quantity on each channel,
    grouped by model, the channels by name in the channel table's order, and on how many channels the
    posterior puts it above the runner-up with probability 0.95 or more (from ``contrasts``,
    `bayes.posterior.contrasts`)."""
    names = channel_names(channel_table)
    if quantities.height == 0:
        return ""
    quantities = in_channel_order(quantities, channel_table)
    by_leader: dict[str, list[str]] = {}
    sure = 0
    channels = quantities["channel"].unique(maintain_order=True).to_list()
    for channel in channels:
        board = quantities.filter(pl.col("channel") == channel).sort("estimate", descending=True)
        leader = board["model"][0]
        by_leader.setdefault(leader, []).append(names.get(channel, channel))
        if board.height > 1:
            above = contrasts.filter(
                (pl.col("channel") == channel)
                & (pl.col("model_a") == leader)
                & (pl.col("model_b") == board["model"][1])
            )["probability"]
            sure += int(above.len() > 0 and above[0] >= 0.95)
    leads = "; ".join(
        f"{model} on {', '.join(chs)}" for model, chs in sorted(by_leader.items(), key=lambda kv: -len(kv[1]))
    )
    return (
        f"Highest posterior mean: {leads}. On {sure} of {len(channels)} channels the posterior puts the leader "
        "above the runner-up with probability 0.95 or more."
    )


def answer(text: str) -> str:
    """A page's opening answer as HTML: one paragraph (class ``answer``), ``**bold**`` as <strong>.

    >>> answer("**b** leads on 2 of 3 channels.")
    "<p class='answer'><strong>b</strong> leads on 2 of 3 channels.</p>"
    """
    body = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(text, quote=False))
    return f"<p class='answer'>{body}</p>"


def listed(items: list[str]) -> str:
    """Items as a sentence lists them.

    >>> listed(["IR", "Raman", "Gap"])
    'IR, Raman and Gap'
    """
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items)


def overview_answer(counts: pl.DataFrame, cohort: pl.DataFrame, names: dict[str, str] | None = None) -> str:
    """The Overview's answer: the study's size, and how far each channel's cohort falls short of its
    families (``benchmark_summary`` and ``cohort_summary`` rows).

    >>> counts = pl.DataFrame({"families": [10], "channels": [2], "models": [3], "tasks": [70], "answers": [210]})
    >>> cohort = pl.DataFrame({"channel": ["ir", "gap"], "families_total": [10, 10], "cohort": [9, 4]})
    >>> overview_answer(counts, cohort, {"ir": "IR", "gap": "Gap"})
    '**3 models** answered 70 tasks of 10 families in 2 channels (210 answers). Each channel is scored on its cohort, from 4 families (Gap, 40% of its families) to 9 (IR, 90%).'
    """
    names = names or {}
    c = counts.row(0, named=True)
    text = (
        f"**{c['models']} models** answered {c['tasks']:,} tasks of {c['families']:,} families in "
        f"{c['channels']} channels ({c['answers']:,} answers)."
    )
    scored = cohort.filter(pl.col("cohort") > 0).with_columns(
        (pl.col("cohort") / pl.col("families_total")).alias("kept")
    )
    if scored.height == 0:
        return text + " No channel has a cohort yet: no family was answered by every model."
    ordered = scored.sort("cohort", "channel")
    low, high = ordered.row(0, named=True), ordered.row(-1, named=True)
    if low["cohort"] == high["cohort"]:
        every = "It is" if scored.height == 1 else "Every channel is"
        return text + f" {every} scored on {low['cohort']:,} families ({low['kept']:.0%} of its families)."
    return text + (
        f" Each channel is scored on its cohort, from {low['cohort']:,} families ({names.get(low['channel'], low['channel'])}, "
        f"{low['kept']:.0%} of its families) to {high['cohort']:,} ({names.get(high['channel'], high['channel'])}, "
        f"{high['kept']:.0%})."
    )


def data_answer(cohort: pl.DataFrame, names: dict[str, str] | None = None) -> str:
    """The Data page's answer, from ``cohort_summary``: where input validation (candidates the channel
    can tell apart) drops the most families, and whether missing answers drop any.

    >>> cohort = pl.DataFrame({"channel": ["ir", "gap"], "families_total": [10, 10], "input_validated": [9, 4],
    ...                        "complete_coverage": [10, 10], "cohort": [9, 4]})
    >>> print(data_answer(cohort, {"ir": "IR", "gap": "Gap"}))
    Input validation keeps from 40% of the families (Gap, 4 of 10) to 90% (IR, 9 of 10): a family stays
    where the channel's properties tell its source from every distractor. Every model answered every task
    of every family: no family left a cohort for missing answers.
    """
    names = names or {}
    rows = cohort.filter(pl.col("families_total") > 0).with_columns(
        (pl.col("input_validated") / pl.col("families_total")).alias("kept")
    )
    if rows.height == 0:
        return "No channel has families yet."
    ordered = rows.sort("kept", "channel")
    low, high = ordered.row(0, named=True), ordered.row(-1, named=True)

    def share(r: dict) -> str:
        return f"{names.get(r['channel'], r['channel'])}, {r['input_validated']:,} of {r['families_total']:,}"

    text = (
        f"Input validation keeps {low['kept']:.0%} of the families on every channel: a family stays where the "
        "channel's properties tell its source from every distractor."
        if low["kept"] == high["kept"]
        else f"Input validation keeps from {low['kept']:.0%} of the families ({share(low)}) to {high['kept']:.0%} "
        f"({share(high)}): a family stays where the channel's properties tell its source from every distractor."
    )
    short = rows.filter(pl.col("complete_coverage") < pl.col("families_total"))
    if short.height == 0:
        return text + " Every model answered every task of every family: no family left a cohort for missing answers."
    worst = short.with_columns((pl.col("families_total") - pl.col("complete_coverage")).alias("missing")).sort(
        "missing", descending=True
    )
    r = worst.row(0, named=True)
    return text + (
        f" Missing answers take families out of {short.height} channel(s), most on "
        f"{names.get(r['channel'], r['channel'])} ({r['missing']:,})."
    )


def stability_answer(by_size: pl.DataFrame, threshold: float = 0.9) -> str:
    """The Stability page's answer, from the macro rows of `stability.ranking_stability`: for each metric,
    the fewest families at which the ranking's mean Spearman ρ with the full cohort's reaches
    ``threshold``, and how often the ranking is then exactly the full cohort's.

    >>> by_size = pl.DataFrame({"metric": ["cfr", "cfr", "reliance_margin", "reliance_margin"],
    ...                         "size": [25, 50, 25, 50], "spearman_rho": [0.85, 0.93, 0.6, 0.8],
    ...                         "exact": [10.0, 42.0, 1.0, 5.0]})
    >>> print(stability_answer(by_size))
    On fewer families the ranking by the mean over channels holds as follows: CFR reaches a Spearman ρ of
    0.9 with the full cohort's ranking at 50 families (exactly the same ranking in 42% of subsets); RM
    stays below 0.9 up to 50 families (ρ 0.80).
    """
    parts = []
    for metric in by_size["metric"].unique(maintain_order=True).to_list():
        rows = by_size.filter((pl.col("metric") == metric) & pl.col("spearman_rho").is_not_null()).sort("size")
        if rows.height == 0:
            continue
        reached = rows.filter(pl.col("spearman_rho") >= threshold)
        name = METRIC_LABELS.get(metric, metric)
        if reached.height:
            r = reached.row(0, named=True)
            parts.append(
                f"{name} reaches a Spearman ρ of {threshold:g} with the full cohort's ranking at {r['size']:,} "
                f"families (exactly the same ranking in {r['exact']:.0f}% of subsets)"
            )
        else:
            r = rows.row(-1, named=True)
            parts.append(f"{name} stays below {threshold:g} up to {r['size']:,} families (ρ {r['spearman_rho']:.2f})")
    if not parts:
        return "No ranking to test: it needs at least two complete models."
    return "On fewer families the ranking by the mean over channels holds as follows: " + "; ".join(parts) + "."


def variance_answer(
    components: pl.DataFrame,
    designs: pl.DataFrame,
    names: dict[str, str] | None = None,
    singles: list[str] | None = None,
) -> str:
    """The lead of the Stability page's variance section: where most of a score's variance lies, and the
    cheapest design for the target the ``designs`` rows meet (``planning.design``'s cheapest rows), on
    one channel: the largest cohort among the single channels (``singles``; default every channel)
    that have a family level (a bundle mixes its parts' variance; the all-channel bundle has none).

    >>> components = pl.DataFrame({"channel": ["ir"] * 4, "metric": ["pgr"] * 4,
    ...     "level": ["family", "family_channel", "task", "sample"], "variance": [31.0, 496.0, 161.0, float("nan")],
    ...     "share": [4.5, 72.1, 23.4, float("nan")], "sample_identified": [False] * 4, "families": [357] * 4})
    >>> designs = pl.DataFrame({"channel": ["ir"], "families": [347], "new_families": [0], "samples": [1],
    ...     "cf_tasks": [2], "responses": [13880], "half_width": [2.9]})
    >>> print(variance_answer(components, designs, {"ir": "IR"}))
    Most of a PGR score's variance lies between families: on IR 72% is the family's difficulty in the
    channel and 4% the part it carries into every channel, 23% is which cf tasks a family has. One answer
    a task cannot tell what repeating it would buy. For a ±3 pp PGR half-width, IR needs 347 families (no
    new ones) with 2 cf tasks a family.
    """
    names = names or {}
    parts = []
    pgr = components.filter(pl.col("metric") == "pgr")
    readable = pgr.filter(
        (pl.col("level") == "family") & pl.col("variance").is_not_nan() & pl.col("channel").is_in(singles or [])
        if singles is not None
        else (pl.col("level") == "family") & pl.col("variance").is_not_nan()
    )
    pool = readable if readable.height else pgr
    channel = pool.sort("families", descending=True, maintain_order=True)["channel"][0] if pool.height else None
    designs = designs.filter(pl.col("channel") == channel)
    if channel is not None:
        share = dict(pgr.filter(pl.col("channel") == channel).select("level", "share").iter_rows())
        name = names.get(channel, channel)
        shared = (
            f" and {share['family']:.0f}% the part it carries into every channel"
            if share.get("family") == share.get("family")  # NaN: no single channel to read it against
            else ""
        )
        parts.append(
            f"Most of a PGR score's variance lies between families: on {name} {share['family_channel']:.0f}% is the "
            f"family's difficulty in the channel{shared}, {share['task']:.0f}% is which cf tasks a family has."
        )
        if not pgr["sample_identified"].any():
            parts.append("One answer a task cannot tell what repeating it would buy.")
    if designs.height:
        row = designs.row(0, named=True)
        name = names.get(row["channel"], row["channel"])
        new = f"{row['new_families']:,} new" if row["new_families"] else "no new ones"
        answers = f", {row['samples']} answers a task" if row["samples"] > 1 else ""
        parts.append(
            f"For a ±{DESIGN_HALF_WIDTH:g} pp PGR half-width, {name} needs {row['families']:,} families ({new}) "
            f"with {row['cf_tasks']} cf tasks a family{answers}."
        )
    return " ".join(parts)


def reliance_answer(
    result: pl.DataFrame, names: dict[str, str] | None = None, models: pl.DataFrame | None = None
) -> str:
    """The Reliance page's answer, from `metrics.compute_metrics`' rows: on how many channels each model's
    reliance margin is above zero at 95% (it answers better with its own properties than with another
    family's), and the highest counterfactual flip rate."""
    names = names or {}
    shown = dict(models.select("model", "display_name").iter_rows()) if models is not None else {}
    rm = result.filter((pl.col("metric") == "reliance_margin") & pl.col("estimate").is_not_null())
    channels = rm["channel"].unique(maintain_order=True).to_list()
    if not channels:
        return "No channel has a reliance margin yet: it needs source and shuffled answers on a cohort."
    above = rm.filter(pl.col("conf_low") > 0)
    counted = above.group_by("model").agg(pl.col("channel")).with_columns(pl.col("channel").list.len().alias("n"))
    parts = [
        f"**{shown.get(m) or m}** on {n} of {len(channels)}"
        + (f" ({listed([names.get(c, c) for c in led])})" if n <= 3 else "")
        for m, led, n in counted.sort(["n", "model"], descending=[True, False]).iter_rows()
    ]
    quiet = sorted(set(rm["model"]) - set(counted["model"]))
    text = (
        "Reliance margin above zero at 95% on a channel (each channel on its own; the model answers better with its own properties than with "
        "another family's): " + ("; ".join(parts) if parts else "no model on any channel") + "."
    )
    if quiet and parts:
        text += f" Not shown on any channel: {listed([shown.get(m) or m for m in quiet])}."
    cfr = result.filter((pl.col("metric") == "cfr") & pl.col("estimate").is_not_null()).sort(
        "estimate", descending=True
    )
    if cfr.height:
        top = cfr.row(0, named=True)
        text += (
            f" Highest counterfactual flip rate (answers that follow a counterfactual candidate's properties): "
            f"**{shown.get(top['model']) or top['model']}** on {names.get(top['channel'], top['channel'])}, "
            f"{top['estimate']:.1f}% [{top['conf_low']:.1f}, {top['conf_high']:.1f}]."
        )
    return text


def invalid_rule_answer(both: pl.DataFrame, names: dict[str, str] | None = None) -> str:
    """What leaving invalid answers out does to PGR, from rows ``model, channel, wrong, exclude,
    difference`` (pp): the largest change of a model's PGR, and the channels whose order of the
    models changes.

    >>> both = pl.DataFrame({"model": ["a", "b", "a", "b"], "channel": ["ir", "ir", "gap", "gap"],
    ...                      "wrong": [50.0, 40.0, 30.0, 20.0], "exclude": [51.0, 52.0, 31.0, 20.5]})
    >>> print(invalid_rule_answer(both.with_columns((pl.col("exclude") - pl.col("wrong")).alias("difference")),
    ...                           {"ir": "IR"}))
    Left out instead of counted wrong, invalid answers change a model's PGR by at most 12.0 pp; the order
    of the models changes on 1 channel(s): IR.
    """
    if both.height == 0:
        return "No PGR to compare."
    names = names or {}
    reordered = [
        names.get(channel, channel)
        for (channel,), group in both.group_by("channel", maintain_order=True)
        if group.sort("wrong", descending=True)["model"].to_list()
        != group.sort("exclude", descending=True)["model"].to_list()
    ]
    order = (
        f"changes on {len(reordered)} channel(s): {', '.join(reordered)}."
        if reordered
        else "stays the same on every channel."
    )
    return (
        "Left out instead of counted wrong, invalid answers change a model's PGR by at most "
        f"{both['difference'].abs().max():.1f} pp; the order of the models {order}"
    )


def _verdict_count(frame: pl.DataFrame, *verdicts: str) -> int:
    return frame.filter(pl.col("verdict").is_in(list(verdicts))).height


def _undecided_and_equivalent(frame: pl.DataFrame) -> str:
    margin = frame["margin"].drop_nulls()
    within = f" within ±{margin[0]:g} pp" if margin.len() else ""
    return (
        f"{_verdict_count(frame, 'equivalent', 'non-inferior')} shown equivalent{within} (or non-inferior), "
        f"{_verdict_count(frame, 'undecided')} undecided"
    )


def comparisons_answer(transitions: pl.DataFrame, paired: pl.DataFrame, channel: str, source: str, target: str) -> str:
    """The Comparisons page's answer: how many model pairs the largest cohort's source tasks tell apart,
    and for how many models a second input changes accuracy (the verdicts of both tables).

    >>> pairs = pl.DataFrame({"verdict": ["ahead", "undecided", "equivalent"], "margin": [2.0] * 3})
    >>> paired = pl.DataFrame({"verdict": ["ahead", "behind"], "margin": [2.0] * 2})
    >>> print(comparisons_answer(pairs, paired, "IR", "Vibrational", "All"))
    On the source tasks of IR, 1 of 3 model pairs differ at 95%; 1 shown equivalent within ±2 pp (or
    non-inferior), 1 undecided. With All instead of Vibrational, 1 of 2 models answer better, 1 worse;
    0 shown equivalent within ±2 pp (or non-inferior), 0 undecided.
    """
    told = _verdict_count(transitions, "ahead", "behind")
    text = (
        f"On the source tasks of {channel}, {told} of {transitions.height} model pairs differ at 95%; "
        f"{_undecided_and_equivalent(transitions)}."
    )
    if paired.height:
        text += (
            f" With {target} instead of {source}, {_verdict_count(paired, 'ahead')} of {paired.height} models "
            f"answer better, {_verdict_count(paired, 'behind')} worse; {_undecided_and_equivalent(paired)}."
        )
    return text


def health_answer(findings: pl.DataFrame, changes: list[str], families: int) -> str:
    """The Benchmark health page's answer: how many families the audit flagged, by flag, and whether
    leaving them out moves any ranking (`audit.rank_changes`' lines)."""
    if findings.height == 0:
        return f"The audit flagged none of the {families:,} families."
    by_flag = findings.group_by("flag").agg(pl.col("family_id").n_unique().alias("n")).sort("n", descending=True)
    flagged = findings["family_id"].n_unique()
    text = (
        f"The audit flagged {flagged:,} of {families:,} families ("
        + ", ".join(f"{n} {flag.replace('_', ' ')}" for flag, n in by_flag.iter_rows())
        + ")."
    )
    if changes:
        return text + f" Without them the ranking by PGR moves on {len(changes)} channel(s): see the last section."
    return text + " Without them the ranking by PGR stays as it is on every channel."


def collapsed(summary: str, *parts) -> str:
    """HTML of a section that opens on a click (``<details>``), holding the parts' HTML (IPython HTML
    objects or strings): present and searchable on the page, not in the reader's way. Written as one
    output, so that it works alike under Quarto and on the Jupyter route."""
    body = "".join(getattr(part, "data", part) or "" for part in parts)
    return f'<details class="collapsed"><summary>{summary}</summary>{body}</details>'


def plain_table(
    frame: pl.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    decimals: int = 1,
    channel_table: pl.DataFrame | None = None,
) -> GT:
    """Any tidy frame as a great-table: floats rounded for reading, counts with thousands separators,
    channels by name and in the table's order (from ``channel_table``; default the package's), each
    column under its heading (``glossary.column_label``). A single wide row is shown as one line per
    column. The frame exported beside it keeps the ids."""
    if "channel" in frame.columns:
        frame = in_channel_order(frame, channel_table).with_columns(
            pl.col("channel").replace(channel_names(channel_table))
        )
    if frame.height == 1 and frame.width > WIDE_SINGLE_ROW:
        return _fields_table(frame, title=title, subtitle=subtitle, decimals=decimals)
    table = GT(frame).tab_header(title=title, subtitle=subtitle)
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    counts = [c for c, t in frame.schema.items() if t.is_integer() and c != "seed"]  # a seed is a name, not a count
    if floats:
        table = table.fmt_number(columns=floats, decimals=decimals)
    if counts:
        table = table.fmt_integer(columns=counts)
    return table.cols_label(**{c: column_label(c) for c in frame.columns})


def _fields_table(frame: pl.DataFrame, *, title: str, subtitle: str | None, decimals: int) -> GT:
    """One row as a two-column table: each column's heading and its value, formatted as
    `plain_table` formats it (great-tables formats by column, and this column mixes types)."""

    def shown(value, dtype, column: str) -> str:
        if value is None:
            return "—"
        if dtype == pl.Boolean:
            return "yes" if value else "no"
        if dtype.is_float():  # an ESS or a log density needs no third decimal beside an R-hat that does
            return f"{value:,.{decimals if abs(value) < 100 else min(decimals, 1)}f}"
        if dtype.is_integer():
            return str(value) if column == "seed" else f"{value:,}"
        return str(value)

    row = frame.row(0)
    fields = pl.DataFrame(
        {
            "field": [column_label(c) for c in frame.columns],
            "value": [shown(v, t, c) for v, (c, t) in zip(row, frame.schema.items())],
        }
    )
    return (
        GT(fields)
        .tab_header(title=title, subtitle=subtitle)
        .cols_label(field="", value="")
        .cols_align(align="right", columns="value")
    )


def save(frame: pl.DataFrame, table: GT, name: str) -> None:
    """CSV of the frame and LaTeX of the table, beside the page."""
    folder = tables_folder()
    frame.write_csv(folder / f"{name}.csv")
    with warnings.catch_warnings():
        # great-tables' LaTeX carries the values, not the gold/silver fills: known, and fine for a paper draft
        warnings.filterwarnings("ignore", message="Styles are not yet supported in LaTeX output")
        # great-tables drops the float position `[!t]` when QUARTO_BIN_PATH is set (quarto-cli's
        # launcher, package/scripts/common/quarto, exports it): without it, the .tex is the same on both routes
        quarto = os.environ.pop("QUARTO_BIN_PATH", None)
        try:
            latex = table.as_latex()
        finally:
            if quarto is not None:
                os.environ["QUARTO_BIN_PATH"] = quarto
        (folder / f"{name}.tex").write_text(latex)


def show(frame: pl.DataFrame, table: GT, name: str):
    """Write the table's CSV and LaTeX, and return HTML for the notebook to display."""
    from IPython.display import HTML

    save(frame, table, name)
    # great-tables names its elements (title, column ids) under the table's id: one id per
    # table keeps them unique on a page of several tables
    html = table.with_id(f"table-{name}").as_raw_html()
    # a table wider than the page scrolls inside its box instead of widening the page
    return HTML(f"<div class='table-scroll'>{html}</div>")
