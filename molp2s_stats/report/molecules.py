"""One task drawn the way the paper's Figure 1 does: the masked scaffold, the candidate
fragments (RDKit SVG), the prompt the model received, and each model's answer with its text."""

from __future__ import annotations

import html

import duckdb
import polars as pl
from rdkit import Chem
from rdkit.Chem import Draw

from .. import units
from ..errors import UsageError
from ..stats.metrics import channel_names


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
        drawing = svg[svg.index("<svg") :]  # drop the XML prolog: the SVG sits inside HTML
    return f"<figure>{drawing}<figcaption>{html.escape(caption)}</figcaption></figure>"


def pick_task(con: duckdb.DuckDBPyConnection, channel: str | None = None) -> str:
    """A source task of a cohort family (first by id), on ``channel`` or else on the single
    channel with the largest cohort: Figure 1 shows one property as the model saw it."""
    if channel is None:
        rows = con.sql(
            """SELECT s.channel FROM cohort_summary AS s
               JOIN stg_channel_components AS c ON c.channel = s.channel AND c.component = s.channel
               WHERE s.cohort > 0 ORDER BY s.cohort DESC, s.channel LIMIT 1"""
        ).fetchall()
        if not rows:
            raise UsageError("no single channel has a cohort: nothing to show")
        channel = rows[0][0]
    rows = con.sql(
        """SELECT task_id FROM cohort_tasks
           WHERE channel = $channel AND condition = 'source' ORDER BY task_id LIMIT 1""",
        params={"channel": channel},
    ).fetchall()
    if not rows:
        raise UsageError(f"no source task in the cohort of channel {channel!r}")
    return rows[0][0]


JUSTIFICATION_CHARACTERS = 400  # of each answer's text: enough for its justification


def task_figure(con: duckdb.DuckDBPyConnection, task_id: str) -> str:
    """HTML of the task as the model saw it (the paper's Figure 1): the masked scaffold, the
    candidates drawn (source marked), the rendered prompt, and each model's answer with its text."""
    from ..prompts import benchmark_tables, render_prompts

    tables = benchmark_tables(con, [task_id])  # the task, its family and the one it shows
    if tables["tasks"].height == 0:
        raise UsageError(f"no task {task_id!r}")
    family, channel, condition, target = tables["tasks"].select("family_id", "channel", "condition", "target").row(0)
    scaffold, source = tables["families"].filter(pl.col("family_id") == family).select("scaffold", "source").row(0)
    candidates = tables["candidates"].filter(pl.col("family_id") == family).sort("label")
    prompt = render_prompts(tables).row(0, named=True)
    channel_name = channel_names(tables["channels"])[channel]
    answers = con.sql(
        """SELECT model, sample, coalesce(choice, 'invalid: ' || invalid_reason) AS answer, response
           FROM stg_terminal_responses WHERE task_id = $t ORDER BY model, sample""",
        params={"t": task_id},
    ).pl()
    drawings = "".join(
        _svg(fragment, f"{label}{' (source)' if label == source else ''}")
        for label, fragment in candidates.select("label", "fragment").iter_rows()
    )

    def text(response: str | None) -> str:
        if not response:
            return "(no text)"
        short = response if len(response) <= JUSTIFICATION_CHARACTERS else response[:JUSTIFICATION_CHARACTERS] + " …"
        return html.escape(short)

    answer_rows = "".join(
        f"<tr><td>{html.escape(m)}</td><td>{s}</td><td>{html.escape(str(a))}{' ✓' if a == target else ''}</td>"
        f"<td class='justification'>{text(r)}</td></tr>"
        for m, s, a, r in answers.iter_rows()
    )
    return (
        f"<div class='task-figure'><p><strong>Task {html.escape(task_id)}</strong>: family {html.escape(family)}, "
        f"channel {html.escape(channel_name)} (<code>{html.escape(channel)}</code>), "
        f"condition <code>{html.escape(condition)}</code>, "
        f"right answer <strong>{html.escape(target)}</strong>.</p>"
        f"<div class='molecules'>{_svg(scaffold, 'masked scaffold')}</div>"
        f"<div class='molecules'>{drawings}</div>"
        f"<p>The prompt, as the model received it:</p>"
        f"<pre class='prompt'>{html.escape(prompt['system'])}\n\n{html.escape(prompt['prompt'])}</pre>"
        f"<table class='answers'><thead><tr><th>model</th><th>sample</th><th>answer</th><th>its text</th></tr></thead>"
        f"<tbody>{answer_rows}</tbody></table></div>"
    )


def invalid_rates(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Share of terminal answers that name no candidate, per model (%)."""
    rates = con.sql("SELECT model, answers, invalid_share FROM invalid_rates ORDER BY model").pl()
    return rates.select("model", "answers", units.percent_column("invalid_share", "invalid_pct"))


def family_figure(con: duckdb.DuckDBPyConnection, family_id: str, caption: str) -> str:
    """HTML of one family's candidates drawn side by side, the key marked, under ``caption`` (an audit finding)."""
    rows = con.sql(
        """SELECT c.label, c.molecule, f.source_label FROM stg_candidates AS c
                      JOIN stg_families AS f USING (family_id) WHERE c.family_id = $family ORDER BY c.label""",
        params={"family": family_id},
    ).fetchall()
    if not rows:
        raise UsageError(f"no family {family_id!r} in the benchmark")
    drawings = "".join(_svg(molecule, f"{label} (key)" if label == key else label) for label, molecule, key in rows)
    return (
        f"<div class='task-figure'><p><strong>{html.escape(family_id)}</strong>: {html.escape(caption)}</p>"
        f"<div class='molecules'>{drawings}</div></div>"
    )
