"""One task drawn the way the paper's Figure 1 does: the masked scaffold, the candidate
fragments (RDKit SVG), the property input the model saw, and each model's answer."""

from __future__ import annotations

import html

import duckdb
import polars as pl
from rdkit import Chem
from rdkit.Chem import Draw


def _svg(smiles: str, caption: str, size: tuple[int, int] = (190, 150)) -> str:
    """A molecule as an inline SVG figure; the caption is HTML text (RDKit draws legends as paths)."""
    molecule = Chem.MolFromSmiles(smiles)
    if molecule is None:  # a value the loader accepted but RDKit cannot draw: say so, do not hide it
        drawing = f"<code>{html.escape(smiles)}</code> (RDKit cannot draw it)"
    else:
        drawer = Draw.rdMolDraw2D.MolDraw2DSVG(*size)
        drawer.DrawMolecule(molecule)
        drawer.FinishDrawing()
        svg = drawer.GetDrawingText()
        drawing = svg[svg.index("<svg"):]  # drop the XML prolog: the SVG sits inside HTML
    return f"<figure>{drawing}<figcaption>{html.escape(caption)}</figcaption></figure>"


def pick_task(con: duckdb.DuckDBPyConnection, channel: str | None = None) -> str:
    """A source task of a cohort family (first by id), on ``channel`` or the largest cohort's channel."""
    if channel is None:
        channel = con.sql("SELECT channel FROM cohort_summary ORDER BY cohort DESC, channel LIMIT 1").fetchall()[0][0]
    rows = con.sql(
        """SELECT task_id FROM cohort_tasks
           WHERE channel = $channel AND condition = 'source' ORDER BY task_id LIMIT 1""",
        params={"channel": channel}).fetchall()
    if not rows:
        raise ValueError(f"no source task in the cohort of channel {channel!r}")
    return rows[0][0]


def task_figure(con: duckdb.DuckDBPyConnection, task_id: str) -> str:
    """HTML of the task: scaffold, candidates (source marked), property input, answers per model."""
    task = con.sql("SELECT * FROM tasks WHERE task_id = $t", params={"t": task_id}).pl()
    if task.height == 0:
        raise ValueError(f"no task {task_id!r}")
    family, channel, condition, target = task.row(0)[1:5]
    shown_family, shown_label = task["shown_family"][0], task["shown_label"][0]
    scaffold, source = con.sql("SELECT scaffold, source FROM families WHERE family_id = $f",
                               params={"f": family}).fetchall()[0]
    candidates = con.sql("SELECT label, fragment FROM candidates WHERE family_id = $f ORDER BY label",
                         params={"f": family}).pl()
    shown = con.sql("SELECT value FROM properties WHERE family_id = $f AND label = $l AND channel = $c",
                    params={"f": shown_family, "l": shown_label, "c": channel}).fetchall()
    answers = con.sql(
        """SELECT model, sample, coalesce(choice, 'invalid: ' || invalid_reason) AS answer
           FROM stg_terminal_responses WHERE task_id = $t ORDER BY model, sample""", params={"t": task_id}).pl()
    drawings = "".join(
        _svg(fragment, f"{label}{' (source)' if label == source else ''}")
        for label, fragment in candidates.iter_rows())
    value = shown[0][0] if shown else "(no value)"
    if len(value) > 600:  # a stick spectrum: the start is enough to show the form of the input
        value = f"{value[:600]} … ({len(value):,} characters in all)"
    answer_rows = "".join(
        f"<tr><td>{html.escape(m)}</td><td>{s}</td><td>{html.escape(str(a))}"
        f"{' ✓' if a == target else ''}</td></tr>" for m, s, a in answers.iter_rows())
    return (
        f"<div class='task-figure'><p><strong>Task {html.escape(task_id)}</strong>: family {html.escape(family)}, "
        f"channel <code>{html.escape(channel)}</code>, condition <code>{html.escape(condition)}</code>, "
        f"right answer <strong>{html.escape(target)}</strong>.</p>"
        f"<div class='molecules'>{_svg(scaffold, 'masked scaffold')}</div>"
        f"<div class='molecules'>{drawings}</div>"
        f"<p>Property input shown to the model ({html.escape(channel)} of candidate {html.escape(shown_label)}):</p>"
        f"<pre>{html.escape(value)}</pre>"
        f"<table class='answers'><thead><tr><th>model</th><th>sample</th><th>answer</th></tr></thead>"
        f"<tbody>{answer_rows}</tbody></table></div>")


def invalid_rates(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Share of terminal answers that name no candidate, per model (%)."""
    return con.sql("SELECT model, answers, 100 * invalid_share AS invalid_pct FROM invalid_rates ORDER BY model").pl()
