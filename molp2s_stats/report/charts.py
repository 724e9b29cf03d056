"""Report charts (Altair), shown as inline SVG: vl-convert renders them, so the page
fetches no Vega script at view time and reads the same under Quarto and without it."""

from __future__ import annotations

import altair as alt
import numpy as np
import polars as pl

from ..units import PERCENT

OUTCOMES = ("both_correct", "a_only", "b_only", "both_wrong")


def svg(chart: alt.TopLevelMixin, caption: str):
    """The chart as inline SVG markup in a figure with its caption (what to look at), in an HTML
    display object (vl-convert, offline).

    HTML rather than IPython's SVG object: nbconvert would turn the latter into a
    base64 <img>, and a chart inline in the DOM can be searched and read by tools.
    """
    import html

    import vl_convert
    from IPython.display import HTML

    if not caption.strip():
        raise ValueError("a chart needs a caption that says what to look at")
    return HTML(
        f"<figure class='chart'>{vl_convert.vegalite_to_svg(chart.to_json())}"
        f"<figcaption>{html.escape(caption, quote=False)}</figcaption></figure>"
    )


def save(chart: alt.TopLevelMixin, path) -> None:
    """Write a chart to .svg, .png or .html, offline (vl-convert; the HTML embeds the SVG)."""
    from pathlib import Path

    import vl_convert

    from ..errors import UsageError

    path = Path(path)
    spec = chart.to_json()
    if path.suffix == ".svg":
        path.write_text(vl_convert.vegalite_to_svg(spec))
    elif path.suffix == ".png":
        path.write_bytes(vl_convert.vegalite_to_png(spec, scale=2))
    elif path.suffix == ".html":
        path.write_text(f"<!doctype html><meta charset='utf-8'><body>{vl_convert.vegalite_to_svg(spec)}</body>")
    else:
        raise UsageError(f"{path}: a chart is written as .svg, .png or .html")


def predictive_checks(frame: pl.DataFrame, channel_table: pl.DataFrame | None = None) -> alt.VConcatChart:
    """Each check's observed value (dot; red when outside) against its predictive interval (bar),
    one row per model, panels by statistic and by channel (named, in the channel table's order) and
    condition (``posterior FIT --what predictive``'s frame, in %)."""
    from ..stats.metrics import channel_names, in_channel_order

    names = channel_names(channel_table)
    ordered = in_channel_order(frame, channel_table).with_columns(
        pl.when(pl.col("statistic") == "accuracy")
        .then(pl.lit("Accuracy (%)"))
        .otherwise(pl.lit("Family spread (pp)"))
        .alias("panel"),
        pl.format("{} · {}", pl.col("channel").replace(names), "condition").alias("cell"),
    )
    cell_order = ordered["cell"].unique(maintain_order=True).to_list()
    data = ordered.to_pandas()
    charts = []
    for panel in data["panel"].unique():
        part = data[data["panel"] == panel]
        base = alt.Chart(part).encode(y=alt.Y("model:N", title=None))
        interval = base.mark_rule(strokeWidth=3, opacity=0.45).encode(
            x=alt.X("conf_low:Q", title=panel), x2="conf_high:Q"
        )
        point = base.mark_point(filled=True, size=30).encode(
            x="observed:Q",
            color=alt.Color(
                "outside:N", scale=alt.Scale(domain=[False, True], range=["#333", "#d62728"]), title="outside"
            ),
            tooltip=["model", "channel", "condition", "observed", "predicted", "conf_low", "conf_high", "p_value"],
        )
        charts.append(
            alt.layer(interval, point)
            .properties(width=150, height=14 * part["model"].nunique())
            .facet(facet=alt.Facet("cell:N", title=None, sort=cell_order), columns=4)
            .properties(title=panel)
        )
    return alt.vconcat(*charts)


def _panels(frame: pl.DataFrame, channel_table: pl.DataFrame | None = None):
    """The frame for a faceted chart with a ``panel`` title per channel (its name in the channel
    table, ``metrics.read_channel_table``; default the package's), and the panels in that table's order."""
    from ..stats.metrics import channel_names, in_channel_order

    names = channel_names(channel_table)
    frame = in_channel_order(frame, channel_table)
    titles = {c: names.get(c, c) for c in frame["channel"].unique(maintain_order=True)}
    return (
        frame.with_columns(pl.col("channel").replace_strict(titles, return_dtype=pl.String).alias("panel")).to_pandas(),
        list(titles.values()),
    )


def forest(frame: pl.DataFrame, *, title: str, x_title: str, channel_table: pl.DataFrame | None = None) -> alt.Chart:
    """Estimate and interval per model, one panel per channel (``model, channel, estimate, conf_low, conf_high``),
    the panels in the channel table's order (the paper's), titled by the channels' names."""
    data, order = _panels(frame.select("model", "channel", "estimate", "conf_low", "conf_high"), channel_table)
    base = alt.Chart(data).encode(y=alt.Y("model:N", title=None))
    rule = base.mark_rule().encode(x=alt.X("conf_low:Q", title=x_title), x2="conf_high:Q")
    point = base.mark_point(filled=True, size=40).encode(
        x="estimate:Q", tooltip=["model", "channel", "estimate", "conf_low", "conf_high"]
    )
    zero = alt.Chart(data).mark_rule(strokeDash=[3, 3], color="#888").encode(x=alt.datum(0))
    return (
        alt.layer(zero, rule, point)
        .properties(width=220, height=18 * frame["model"].n_unique())
        .facet(facet=alt.Facet("panel:N", title=None, sort=order), columns=3)
        .properties(title=title)
    )


def heatmap(frame: pl.DataFrame, *, title: str, channel_table: pl.DataFrame | None = None) -> alt.Chart:
    """P(A > B) per ordered model pair, one panel per channel (``channel, model_a, model_b, probability``),
    in the channel table's order, titled by the channels' names."""
    data, order = _panels(frame, channel_table)
    cells = (
        alt.Chart(data)
        .mark_rect()
        .encode(
            x=alt.X("model_b:N", title="B"),
            y=alt.Y("model_a:N", title="A"),
            color=alt.Color("probability:Q", scale=alt.Scale(domain=[0, 1], scheme="blueorange"), title="P(A > B)"),
        )
    )
    text = (
        alt.Chart(data)
        .mark_text(fontSize=9)
        .encode(x="model_b:N", y="model_a:N", text=alt.Text("probability:Q", format=".2f"))
    )
    return (
        alt.layer(cells, text)
        .properties(width=200, height=200)
        .facet(facet=alt.Facet("panel:N", title=None, sort=order), columns=3)
        .properties(title=title)
    )


def rank_bars(frame: pl.DataFrame, *, title: str, channel_table: pl.DataFrame | None = None) -> alt.Chart:
    """Probability of each rank per model, one panel per channel (``model, channel, rank, probability``),
    in the channel table's order, titled by the channels' names."""
    data, order = _panels(frame, channel_table)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("rank:O", title="rank (1 = highest)"),
            y=alt.Y("probability:Q", title="probability"),
            color=alt.Color("model:N"),
            xOffset="model:N",
        )
        .properties(width=220, height=120)
        .facet(facet=alt.Facet("panel:N", title=None, sort=order), columns=3)
        .properties(title=title)
    )


def transitions(frame: pl.DataFrame, *, title: str) -> alt.HConcatChart:
    """The paper's Figure 2, one row per model pair: the four shares of the tasks (both right,
    only A, only B, both wrong: A's gains over B and its losses) as a stacked bar, and beside
    it the net (B − A, pp) with its bootstrap interval (``model_transitions`` output)."""
    pairs = frame.with_columns(pl.format("{} vs {}", "model_a", "model_b").alias("pair"))
    order = pairs["pair"].to_list()
    long = pairs.unpivot(index="pair", on=list(OUTCOMES), variable_name="outcome", value_name="share")
    y = alt.Y("pair:N", title=None, sort=order)
    shares = (
        alt.Chart(long.to_pandas())
        .mark_bar()
        .encode(
            y=y,
            x=alt.X("share:Q", title="% of tasks", stack="normalize"),
            color=alt.Color("outcome:N", sort=list(OUTCOMES), title=None),
            order=alt.Order("outcome_order:Q"),
            tooltip=["pair", "outcome", alt.Tooltip("share:Q", format=".1f")],
        )
        .transform_calculate(outcome_order=f"indexof({list(OUTCOMES)}, datum.outcome)")
        .properties(width=360, title="shares of the tasks")
    )
    net = pairs.select("pair", "net", "conf_low", "conf_high").to_pandas()
    base = alt.Chart(net).encode(y=y)
    interval = base.mark_rule().encode(x=alt.X("conf_low:Q", title="net: B − A (pp)"), x2="conf_high:Q")
    point = base.mark_point(filled=True, size=50).encode(
        x="net:Q", tooltip=["pair", alt.Tooltip("net:Q", format=".1f")]
    )
    zero = alt.Chart(net).mark_rule(strokeDash=[3, 3], color="#888").encode(x=alt.datum(0))
    return alt.hconcat(shares, (interval + point + zero).properties(width=220, title="net, 95% interval")).properties(
        title=title
    )


def stability_lines(frame: pl.DataFrame, *, title: str, channel_table: pl.DataFrame | None = None) -> alt.Chart:
    """Mean Spearman ρ against the subset size, one small multiple per channel group (Electronic,
    Vibrational, …: a handful of lines each, told apart by colour within the panel), the y axis fitted
    to the values with ρ = 1 (the full cohort's ranking) drawn as the reference; channels by name, in
    the channel table's order (``ranking_stability`` output)."""
    from ..stats.metrics import read_channel_table

    table = channel_table if channel_table is not None else read_channel_table()
    groups = dict(table.select("channel", "group").iter_rows())
    data, order = _panels(
        frame.with_columns(pl.col("channel").replace_strict(groups, default="").alias("group")), channel_table
    )
    group_order = list(
        dict.fromkeys(g for c in frame["channel"].unique(maintain_order=True) for g in [groups.get(c, "")])
    )
    values = frame["spearman_rho"].drop_nulls()
    low = max(-1.0, float(np.floor((values.min() if len(values) else 0.0) * 20) / 20) - 0.05)
    y = alt.Y("spearman_rho:Q", title="mean Spearman ρ", scale=alt.Scale(domain=[low, 1.0]))
    lines = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X("size:Q", title="families in the subset"),
            y=y,
            color=alt.Color(
                "panel:N", title=None, sort=order, legend=alt.Legend(orient="bottom", columns=2, labelLimit=120)
            ),
            tooltip=["panel", "size", "spearman_rho"],
        )
    )
    perfect = alt.Chart().mark_rule(strokeDash=[3, 3], color="#888").encode(y=alt.datum(1.0))
    return (
        alt.layer(perfect, lines, data=data)
        .properties(width=170, height=170)
        .facet(column=alt.Column("group:N", title=None, sort=group_order))
        .resolve_scale(color="independent")
        .properties(title=title)
    )


LEVEL_LABELS = {
    "family": "family (every channel)",
    "family_channel": "family × channel",
    "task": "cf task within family",
    "sample": "repeated answer",
}


def variance_bars(frame: pl.DataFrame, *, title: str, channel_table: pl.DataFrame | None = None) -> alt.Chart:
    """One stacked bar per channel (by name, in the channel table's order): the share of one family's
    contribution to the score's variance at each level (``variance.variance_components`` rows of one
    metric). A level estimated below zero (noise around a small value) or not identified is drawn at 0,
    and the shares are of what is drawn."""
    from ..stats.metrics import channel_names, in_channel_order

    names = channel_names(channel_table)
    drawn = in_channel_order(frame, channel_table).with_columns(
        pl.col("variance").fill_nan(0.0).clip(lower_bound=0.0).alias("drawn")
    )
    drawn = drawn.with_columns(
        (PERCENT * pl.col("drawn") / pl.col("drawn").sum().over("channel")).alias("percent"),
        pl.col("channel").replace_strict(names, default=pl.col("channel")).alias("name"),
        pl.col("level").replace_strict(LEVEL_LABELS, default=pl.col("level")).alias("where"),
        pl.col("level").replace_strict({k: i for i, k in enumerate(LEVEL_LABELS)}, default=9).alias("order"),
    )
    order = list(dict.fromkeys(drawn["name"].to_list()))
    return (
        alt.Chart(drawn.to_pandas())
        .mark_bar()
        .encode(
            y=alt.Y("name:N", title=None, sort=order),
            x=alt.X("percent:Q", title="% of one family's variance", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color(
                "where:N", title=None, sort=list(LEVEL_LABELS.values()), legend=alt.Legend(orient="bottom")
            ),
            order=alt.Order("order:Q"),
            tooltip=["name", "where", alt.Tooltip("percent:Q", format=".0f"), alt.Tooltip("variance:Q", format=".0f")],
        )
        .properties(width=420, height=16 * len(order), title=title)
    )


def cost_precision(curve: pl.DataFrame, *, target: float, title: str, precision_title: str) -> alt.Chart:
    """Cost against the precision a design buys (``planning.precision_curve``), one line per answers a
    task × cf tasks a family, one panel per channel, the target drawn as a dashed rule: the cheapest
    way to a precision is the lowest line where it crosses the rule."""
    data = curve.with_columns(
        pl.format("{} answer(s), {} cf task(s)", "samples", "cf_tasks").alias("design")
    ).to_pandas()
    lines = (
        alt.Chart()
        .mark_line()
        .encode(
            x=alt.X("precision:Q", title=precision_title),
            y=alt.Y("cost:Q", title="cost (log scale)", scale=alt.Scale(type="log")),
            color=alt.Color("design:N", title=None, legend=alt.Legend(orient="bottom", columns=3)),
            tooltip=["channel", "design", "families", alt.Tooltip("cost:Q", format=",.0f"), "precision"],
        )
    )
    rule = alt.Chart().mark_rule(strokeDash=[3, 3], color="#888").encode(x=alt.datum(target))
    return (
        alt.layer(rule, lines, data=data)
        .properties(width=260, height=200)
        .facet(facet=alt.Facet("channel:N", title=None), columns=3)
        .properties(title=title)
    )
