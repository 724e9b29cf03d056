"""Every benchmark task as the messages a language model reads.

One versioned template (``TEMPLATE_ID``, with a content hash in ``TEMPLATE``) turns a
task into a system message and a user message: the masked scaffold and the labelled
candidate fragments exactly as the benchmark stores them, the property input of the
shown molecule (none for P0 tasks), and the answer instruction.

The model is never told the condition: the system message is the same for every
task, the source, shuffled and cf prompts of one family differ only inside the
property block, and a property block depends only on the shown molecule and the
channel, so a shuffled task shows exactly the text of its shown family's source task.

Property values are rendered by kind, one renderer per kind, chosen through the
channel table (its ``distance`` names the value format; the known channels add
their units): numbers, vectors, stick spectra (IR, Raman), NMR shieldings (peaks,
peaks with counts, atom-indexed) and UV–Vis excitations. Bundles show their
components under headings.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Iterable

import numpy as np
import polars as pl

from .defaults import DEFAULT_MAX_PEAKS
from .errors import UsageError

__all__ = ["TEMPLATE", "TEMPLATE_ID", "PROMPT_SCHEMA", "render_prompts", "render_property", "property_block"]

TEMPLATE_ID = "molp2s-prompt-v1"
HARTREE_IN_EV = 27.211386245988

SYSTEM = (
    "You are an expert chemist. Each question shows a molecule with one fragment masked, a set of "
    "candidate fragments, and sometimes computed physical properties of the complete molecule. "
    "Choose the candidate fragment that completes the molecule."
)
INTRO = (
    "One fragment of a molecule is masked. In the scaffold SMILES, [*] marks the atom where the "
    "masked fragment attaches.\n\nScaffold: {scaffold}\n\n"
    "Candidate fragments ([*] marks the atom that bonds to the scaffold):\n{candidates}"
)
PROPERTY_HEADER = "Computed properties of the complete molecule:"
INSTRUCTION = (
    "Which candidate fragment completes the molecule? Justify your choice in one or two sentences, "
    'then give the letter of your choice alone on the last line, as "Answer: X".'
)
# How each value kind is written: part of the template, so part of its hash.
FORMATS = {
    "dipole_norm": "Dipole moment: {:.2f} D",
    "dipole_vector": "Dipole moment vector (principal axes of inertia, smallest moment first): "
    "x = {:.2f} D, y = {:.2f} D, z = {:.2f} D",
    "gap": "HOMO–LUMO gap: {ev:.2f} eV ({hartree:.4f} Hartree)",
    "number": "{name}: {:.4g}",
    "vector": "{name}: [{}]",
    # not "of N peaks": the count of modes would tell molecules apart without the spectrum
    "spectrum": "{name} spectrum, the {shown} strongest peaks, sorted by frequency "
    "(frequency in cm⁻¹: {weight} relative to the strongest = 100):",
    "spectrum_peak": "{:.0f}: {:.1f}",
    "nmr_peaks": "{nucleus} shieldings (ppm), one per distinct peak: {}",
    "nmr_counts": "{nucleus} shieldings (ppm), one per distinct peak, with {count_word} in parentheses: {}",
    "nmr_atomwise": "{nucleus} shieldings (ppm) of each scaffold {atom_word}, labelled with the index of {relation} "
    "in the scaffold SMILES (0-based, [*] counted): {}",
    "uvvis": "UV–Vis: the lowest {} excitations (energy in eV, oscillator strength):",
    "uvvis_state": "{:.2f} eV, f = {:.3f}",
    "shielding": "{:.2f}",
    "missing": "{name}: not available",
}
# The kind of value each known channel holds; a benchmark's own channels fall back on
# the kind their distance implies.
CHANNEL_KINDS = {
    "dipole_norm": "dipole_norm",
    "dipole_vector": "dipole_vector",
    "gap": "gap",
    "ir": "spectrum",
    "raman": "spectrum",
    "uvvis": "uvvis",
    **{
        f"{nucleus}_{form}": "nmr"
        for nucleus in ("h1", "c13")
        for form in ("peaks", "peaks_int", "peaks_deg", "atomwise")
    },
}
DISTANCE_KINDS = {
    "abs_diff": "number",
    "euclidean": "vector",
    "peak_overlap": "spectrum",
    "wasserstein": "nmr",
    "uvvis_l1": "uvvis",
}
SPECTRUM_WEIGHTS = {"ir": "IR intensity", "raman": "Raman activity"}
NUCLEI = {
    "h1": ("¹H", "hydrogen", "the atom it is bonded to", "integrals (nuclei per peak)", "{:d}H"),
    "c13": ("¹³C", "carbon", "the carbon itself", "degeneracies (carbons per peak)", "×{:d}"),
}


def _template_hash() -> str:
    text = json.dumps(
        {
            "id": TEMPLATE_ID,
            "system": SYSTEM,
            "intro": INTRO,
            "header": PROPERTY_HEADER,
            "instruction": INSTRUCTION,
            "formats": FORMATS,
            "kinds": CHANNEL_KINDS,
            "distance_kinds": DISTANCE_KINDS,
            "nuclei": NUCLEI,
            "weights": SPECTRUM_WEIGHTS,
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


#: The template's id and content hash, as exports and loaded responses record it.
TEMPLATE = f"{TEMPLATE_ID}@{_template_hash()}"

PROMPT_SCHEMA = {
    "task_id": pl.String,
    "family_id": pl.String,
    "channel": pl.String,
    "condition": pl.String,
    "target": pl.String,
    "system": pl.String,
    "prompt": pl.String,
    "template": pl.String,
    "property_text": pl.String,
}


def _kind(channel: str, distance: str | None) -> str:
    if channel in CHANNEL_KINDS:
        return CHANNEL_KINDS[channel]
    if distance not in DISTANCE_KINDS:
        raise ValueError(f"channel {channel!r}: no renderer for distance {distance!r}")
    return DISTANCE_KINDS[distance]


def _spectrum(channel: str, name: str, value: dict, max_peaks: int) -> str:
    frequencies = np.asarray(value["frequencies"], dtype=float)
    weights = np.asarray(value["intensities"], dtype=float)
    if frequencies.size == 0 or frequencies.shape != weights.shape or not (weights > 0).any():
        raise ValueError(
            f"channel {channel!r}: a spectrum needs peaks with one intensity each, at least one of them positive"
        )
    # strongest first (ties by frequency, so the order is stable), then by frequency
    keep = np.lexsort((frequencies, -weights))[:max_peaks]
    keep = keep[np.argsort(frequencies[keep], kind="stable")]
    strongest = weights.max()
    lines = [FORMATS["spectrum"].format(name=name, shown=len(keep), weight=SPECTRUM_WEIGHTS.get(channel, "intensity"))]
    lines += [FORMATS["spectrum_peak"].format(frequencies[i], 100 * weights[i] / strongest) for i in keep]
    return "\n".join(lines)


def _nmr(channel: str, name: str, value) -> str:
    nucleus, atom_word, relation, count_word, count_format = NUCLEI.get(
        channel.split("_")[0], (name, "nucleus", "the atom it belongs to", "counts", "×{:d}")
    )
    if not isinstance(value, dict):
        value = {"shieldings": value}
    shieldings = [FORMATS["shielding"].format(s) for s in value["shieldings"]]
    if "atoms" in value:
        items = [f"atom {a}: {s}" for a, s in zip(value["atoms"], shieldings)]
        return FORMATS["nmr_atomwise"].format("; ".join(items), nucleus=nucleus, atom_word=atom_word, relation=relation)
    if "counts" in value:
        items = [f"{s} ({count_format.format(int(c))})" for s, c in zip(shieldings, value["counts"])]
        return FORMATS["nmr_counts"].format(", ".join(items), nucleus=nucleus, count_word=count_word)
    return FORMATS["nmr_peaks"].format(", ".join(shieldings), nucleus=nucleus)


def _uvvis(value: dict) -> str:
    order = np.argsort(np.asarray(value["energies"], dtype=float), kind="stable")
    lines = [FORMATS["uvvis"].format(len(order))]
    lines += [FORMATS["uvvis_state"].format(value["energies"][i], value["strengths"][i]) for i in order]
    return "\n".join(lines)


def render_property(
    channel: str, value, *, name: str | None = None, distance: str | None = None, max_peaks: int = DEFAULT_MAX_PEAKS
) -> str:
    """One single channel's value as prompt text.

    Parameters
    ----------
    channel
        Channel id; a known one (``dipole_norm``, ``gap``, ``ir``, ``h1_peaks``, …) picks
        its own units, any other is rendered by the kind its ``distance`` implies.
    value
        The decoded JSON value in the channel's format.
    name
        Display name for headings (default: the channel id).
    max_peaks
        IR and Raman: the strongest peaks kept.

    Examples
    --------
    >>> print(render_property("gap", 0.2503))
    HOMO–LUMO gap: 6.81 eV (0.2503 Hartree)
    >>> print(render_property("ir", {"frequencies": [3000, 1700, 800], "intensities": [10, 40, 1]},
    ...                       name="IR", max_peaks=2))
    IR spectrum, the 2 strongest peaks, sorted by frequency (frequency in cm⁻¹: IR intensity relative to the strongest = 100):
    1700: 100.0
    3000: 25.0
    >>> print(render_property("h1_peaks_int", {"shieldings": [29.514, 31.2], "counts": [3, 2]}))
    ¹H shieldings (ppm), one per distinct peak, with integrals (nuclei per peak) in parentheses: 29.51 (3H), 31.20 (2H)
    """
    name = name or channel
    kind = _kind(channel, distance)
    if kind == "dipole_norm":
        return FORMATS["dipole_norm"].format(float(value))
    if kind == "dipole_vector":
        return FORMATS["dipole_vector"].format(*map(float, value))
    if kind == "gap":
        return FORMATS["gap"].format(ev=float(value) * HARTREE_IN_EV, hartree=float(value))
    if kind == "number":
        return FORMATS["number"].format(float(value), name=name)
    if kind == "vector":
        return FORMATS["vector"].format(", ".join(f"{float(v):.4g}" for v in value), name=name)
    if kind == "spectrum":
        return _spectrum(channel, name, value, max_peaks)
    if kind == "nmr":
        return _nmr(channel, name, value)
    return _uvvis(value)


def property_block(
    components: Iterable[tuple[str, str, str | None]],
    values: dict[str, object],
    *,
    bundle: bool,
    max_peaks: int = DEFAULT_MAX_PEAKS,
) -> str:
    """The property text of one shown molecule: one channel, or a bundle's components under headings.

    ``components`` are (channel, display name, distance) in display order; ``values``
    maps a channel to its decoded value for the shown molecule; a component without one
    says so rather than disappearing, so the block keeps its shape.
    """
    parts = []
    for channel, name, distance in components:
        if channel in values:
            text = render_property(channel, values[channel], name=name, distance=distance, max_peaks=max_peaks)
        else:
            text = FORMATS["missing"].format(name=name)
        parts.append(f"### {name}\n{text}" if bundle else text)
    return "\n\n".join(parts)


def _user_message(scaffold: str, candidates: list[tuple[str, str]], block: str | None) -> str:
    listing = "\n".join(f"{label}. {fragment}" for label, fragment in candidates)
    parts = [INTRO.format(scaffold=scaffold, candidates=listing)]
    if block:
        parts.append(f"{PROPERTY_HEADER}\n{block}")
    parts.append(INSTRUCTION)
    return "\n\n".join(parts)


def render_prompts(
    tables: dict[str, pl.DataFrame],
    *,
    channels: list[str] | None = None,
    conditions: list[str] | None = None,
    max_peaks: int = DEFAULT_MAX_PEAKS,
) -> pl.DataFrame:
    """Every task (or those of the given channels and conditions) as a system and a user message.

    Parameters
    ----------
    tables
        The benchmark tables ``families``, ``candidates``, ``properties``, ``tasks`` and
        ``channels`` (as ``read_benchmark`` or ``benchmark_tables`` give them).
    channels, conditions
        Keep only these (``none`` selects the P0 tasks in either).
    max_peaks
        IR and Raman: the strongest peaks shown.

    Returns
    -------
    polars.DataFrame
        One row per task, in task-id order: ``task_id, family_id, channel, condition,
        target, system, prompt, template, property_text`` (the property block alone; null
        for P0 tasks).
    """
    if max_peaks < 1:
        raise UsageError("max_peaks must be at least 1")
    tasks = tables["tasks"]
    if channels:
        tasks = tasks.filter(
            pl.col("channel").is_in(list(channels) + ["none"])
            if "none" in channels
            else pl.col("channel").is_in(channels)
        )
    if conditions:
        tasks = tasks.filter(pl.col("condition").is_in(conditions))
    channel_table = tables["channels"].sort("position")
    singles = channel_table.filter(pl.col("components").is_null())
    single_rows = [(r["channel"], r["name"], r["distance"]) for r in singles.iter_rows(named=True)]
    components: dict[str, list[tuple[str, str, str | None]]] = {}
    for row in channel_table.iter_rows(named=True):
        if row["components"] is None:
            components[row["channel"]] = [(row["channel"], row["name"], row["distance"])]
        else:
            wanted = set(row["components"])
            components[row["channel"]] = [c for c in single_rows if "*" in wanted or c[0] in wanted]
    bundles = set(channel_table.filter(pl.col("components").is_not_null())["channel"])

    values: dict[tuple[str, str], dict[str, object]] = {}
    for family_id, label, channel, value in (
        tables["properties"].select("family_id", "label", "channel", "value").iter_rows()
    ):
        values.setdefault((family_id, label), {})[channel] = json.loads(value) if isinstance(value, str) else value
    # a bundle shows a component only where every candidate of the task's family has it,
    # so the headings of a family's source, shuffled and cf tasks are the same
    labels = {f: g.sort("label")["label"].to_list() for (f,), g in tables["candidates"].group_by("family_id")}
    available = {f: set.intersection(*(set(values.get((f, k), {})) for k in ks)) for f, ks in labels.items()}
    scaffolds = dict(tables["families"].select("family_id", "scaffold").iter_rows())
    listing = {
        f: g.sort("label").select("label", "fragment").rows() for (f,), g in tables["candidates"].group_by("family_id")
    }

    blocks: dict[tuple, str] = {}
    rows, mismatched = [], []
    for task in tasks.sort("task_id").iter_rows(named=True):
        family = task["family_id"]
        block = None
        if task["condition"] != "none":
            if task["shown_family"] is None:
                if task["condition"] == "shuffled":
                    raise ValueError(f"task {task['task_id']!r}: a shuffled task needs its shown_family")
                shown = (family, task["target"])  # source and cf tasks show the family's own candidate
            else:
                shown = (task["shown_family"], task["shown_label"] or task["target"])
            wanted = tuple(components[task["channel"]])
            if task["channel"] in bundles:
                # the components both families have: where they have the same (as a benchmark
                # should derange them), a shuffled task shows exactly its shown family's source text
                own = {c[0] for c in wanted} & available[family]
                theirs = {c[0] for c in wanted} & available[shown[0]]
                wanted = tuple(c for c in wanted if c[0] in own & theirs)
                if own != theirs and task["condition"] == "shuffled":
                    mismatched.append(task["task_id"])
            key = (shown, task["channel"], wanted)
            if key not in blocks:
                blocks[key] = property_block(
                    wanted, values.get(shown, {}), bundle=task["channel"] in bundles, max_peaks=max_peaks
                )
            block = blocks[key]
        rows.append(
            (
                task["task_id"],
                family,
                task["channel"],
                task["condition"],
                task["target"],
                SYSTEM,
                _user_message(scaffolds[family], listing[family], block),
                TEMPLATE,
                block,
            )
        )
    if mismatched:
        warnings.warn(
            f"{len(mismatched)} shuffled bundle task(s), e.g. {mismatched[0]!r}, show a family with other "
            "components than their own: they show the components both have, which is not the shown "
            "family's source text; derange bundles among families with the same channels",
            stacklevel=2,
        )
    return pl.DataFrame(rows, schema=PROMPT_SCHEMA, orient="row")


def benchmark_tables(con, task_ids: list[str] | None = None) -> dict[str, pl.DataFrame]:
    """The benchmark tables of a database, in the form ``render_prompts`` takes; with
    ``task_ids``, only those tasks and the families they ask about or show."""
    if task_ids is None:
        return {
            name: con.sql(f"SELECT * FROM {name}").pl()
            for name in ("families", "candidates", "properties", "tasks", "channels")
        }
    params = {"ids": task_ids}
    tasks = con.sql("SELECT * FROM tasks WHERE list_contains($ids, task_id)", params=params).pl()
    families = sorted(set(tasks["family_id"]) | set(tasks["shown_family"].drop_nulls()))
    touched = {"families": families}
    return {
        "tasks": tasks,
        "channels": con.sql("SELECT * FROM channels").pl(),
        **{
            name: con.sql(f"SELECT * FROM {name} WHERE list_contains($families, family_id)", params=touched).pl()
            for name in ("families", "candidates", "properties")
        },
    }


# -------------------------------------------------------------------- batch files

# Anthropic's Message Batches accept custom ids of 1–64 letters, digits, '-' and '_'.
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
EXPORT_FORMATS = ("jsonl", "csv", "parquet", "openai-batch", "anthropic-batch")

#: The values of ``reasoning_effort`` on /v1/chat/completions, as the openai SDK's
#: ``ReasoningEffort`` type lists them (the tests check they are all in it); a model takes
#: only some of them, and the API says which when it refuses one.
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: Anthropic's least ``budget_tokens`` for extended thinking.
MIN_THINKING_BUDGET = 1024

# The token limit a request gets when none is given, by what it asks for.
# The answer asked for is short (a sentence or two, then "Answer: X"): 1,024 tokens hold
# it with room to spare, and a limit that low still catches a model that rambles.
ANSWER_TOKENS = 1024
# OpenAI counts a reasoning model's hidden reasoning against max_completion_tokens, and a
# request whose reasoning eats the limit comes back with finish_reason "length" and no
# text. OpenAI's reasoning guide suggests reserving at least 25,000 tokens when starting
# out; 32,768 is above that and within the output limit of its reasoning models. Only the
# tokens a model generates are billed, so a high limit costs nothing it does not use.
OPENAI_REASONING_TOKENS = 32768


MAX_TOKENS_RULES = {
    "answer": f"{ANSWER_TOKENS}: the short answer the prompt asks for",
    "openai_reasoning": f"{OPENAI_REASONING_TOKENS}: OpenAI counts hidden reasoning against max_completion_tokens",
    "anthropic_thinking": f"thinking budget + {ANSWER_TOKENS}: thinking counts against max_tokens, "
    "and the answer needs room after it",
}


def max_tokens_rule(*, api: str, reasoning_effort: str | None = None, thinking_budget: int | None = None) -> str:
    """Which of ``MAX_TOKENS_RULES`` sets the default token limit of a request."""
    if api == "anthropic" and thinking_budget is not None:
        return "anthropic_thinking"
    if api == "openai" and reasoning_effort not in (None, "none"):
        return "openai_reasoning"
    return "answer"


def default_max_tokens(*, api: str, reasoning_effort: str | None = None, thinking_budget: int | None = None) -> int:
    """The token limit a request gets unless one is given.

    Plain requests: ``ANSWER_TOKENS`` (1,024). OpenAI with a reasoning effort other than
    ``none``: ``OPENAI_REASONING_TOKENS`` (32,768), since the hidden reasoning counts
    against the limit. Anthropic with a thinking budget: the budget plus
    ``ANSWER_TOKENS``, since thinking counts against ``max_tokens``, which must exceed it.

    >>> default_max_tokens(api="openai"), default_max_tokens(api="openai", reasoning_effort="high")
    (1024, 32768)
    >>> default_max_tokens(api="anthropic", thinking_budget=8000)
    9024
    """
    rule = max_tokens_rule(api=api, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
    if rule == "anthropic_thinking":
        return thinking_budget + ANSWER_TOKENS
    return OPENAI_REASONING_TOKENS if rule == "openai_reasoning" else ANSWER_TOKENS


def request_api(fmt: str) -> str | None:
    """``openai`` or ``anthropic`` for a batch format, None for a table; an unknown format is refused."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown prompt format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}")
    return fmt.removesuffix("-batch") if fmt.endswith("-batch") else None


def check_request_options(
    *, api: str | None, max_tokens: int | None, reasoning_effort: str | None = None, thinking_budget: int | None = None
) -> int:
    """Refuse what the API would refuse, before a batch is paid for; returns the token limit.

    ``api`` is ``openai``, ``anthropic`` or None (a table export, which writes no request
    parameters). The requests set no temperature, top_p or top_k, so none of them can clash
    with extended thinking, which Anthropic takes only at their defaults.
    """
    # the arguments as the messages name them; a front end may name them its own way (the CLI: its flags)
    named = {
        "reasoning_effort": "reasoning_effort",
        "thinking_budget": "thinking_budget",
        "max_tokens": "max_tokens",
        "fmt": "the format",
    }
    if api is None:
        # (max_tokens has always been let through here, unused, and scripts pass it)
        given = [
            f"{{{name}}}"
            for name, value in (("reasoning_effort", reasoning_effort), ("thinking_budget", thinking_budget))
            if value is not None
        ]
        if given:
            verb, it = ("goes", "it") if len(given) == 1 else ("go", "them")
            raise UsageError(
                f"{' and '.join(given)} {verb} into batch requests; a table export holds only the "
                f"prompts (use {{fmt}} openai-batch or anthropic-batch, or set {it} in the harness "
                "that sends the prompts)",
                arguments=named,
            )
        return ANSWER_TOKENS
    if reasoning_effort is not None:
        if api != "openai":
            raise UsageError(
                "{reasoning_effort} is OpenAI's; for Anthropic's extended thinking give {thinking_budget} TOKENS",
                arguments=named,
            )
        if reasoning_effort not in REASONING_EFFORTS:
            raise UsageError(
                f"{{reasoning_effort}} must be one of {', '.join(REASONING_EFFORTS)}, got {reasoning_effort!r}",
                arguments=named,
            )
    if thinking_budget is not None:
        if api != "anthropic":
            raise UsageError(
                "{thinking_budget} is Anthropic's extended thinking; for OpenAI reasoning models "
                "give {reasoning_effort}",
                arguments=named,
            )
        if thinking_budget < MIN_THINKING_BUDGET:
            raise UsageError(
                f"{{thinking_budget}} must be at least {MIN_THINKING_BUDGET} tokens "
                f"(Anthropic's minimum), got {thinking_budget}",
                arguments=named,
            )
    if max_tokens is None:
        return default_max_tokens(api=api, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
    if max_tokens < 1:
        raise UsageError("{max_tokens} must be at least 1", arguments=named)
    if thinking_budget is not None and thinking_budget >= max_tokens:
        # the bare max_tokens below is the API's field, not the argument
        raise UsageError(
            f"{{thinking_budget}} ({thinking_budget}) must be less than {{max_tokens}} ({max_tokens}): "
            "thinking counts against max_tokens, and the answer needs room after it "
            f"(leave {{max_tokens}} out for {thinking_budget + ANSWER_TOKENS})",
            arguments=named,
        )
    return max_tokens


def batch_requests(
    prompts: pl.DataFrame,
    *,
    api: str,
    model: str,
    max_tokens: int | None = None,
    reasoning_effort: str | None = None,
    thinking_budget: int | None = None,
) -> list[dict]:
    """Batch-API request lines, one per task, ``custom_id`` = task_id.

    ``api`` is ``openai`` (Batch API on /v1/chat/completions, ``max_completion_tokens``,
    which reasoning models accept too, and ``reasoning_effort`` when given) or
    ``anthropic`` (Message Batches; ``thinking: {type: enabled, budget_tokens}`` when a
    thinking budget is given). ``max_tokens`` defaults by ``default_max_tokens``. A task
    id the API would refuse as a custom id, and an option the API would refuse, are
    refused here, by name.
    """
    if not model:
        raise UsageError(f"{api}-batch needs {{model}}: the model the requests go to", arguments={"model": "a model"})
    max_tokens = check_request_options(
        api=api, max_tokens=max_tokens, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget
    )
    lines = []
    for task_id, system, prompt in prompts.select("task_id", "system", "prompt").iter_rows():
        if api == "anthropic":
            if not _ANTHROPIC_ID.fullmatch(task_id):
                raise UsageError(
                    f"task_id {task_id!r} cannot be an Anthropic custom_id (1–64 letters, digits, '-' or '_')"
                )
            params = {
                "model": model,
                "max_tokens": max_tokens,
                "system": system,
                "messages": [{"role": "user", "content": prompt}],
            }
            if thinking_budget is not None:
                params["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
            lines.append({"custom_id": task_id, "params": params})
        else:
            body = {
                "model": model,
                "max_completion_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            }
            if reasoning_effort is not None:
                body["reasoning_effort"] = reasoning_effort
            lines.append({"custom_id": task_id, "method": "POST", "url": "/v1/chat/completions", "body": body})
    return lines


def write_prompts(
    prompts: pl.DataFrame,
    out,
    *,
    fmt: str = "jsonl",
    model: str | None = None,
    max_tokens: int | None = None,
    reasoning_effort: str | None = None,
    thinking_budget: int | None = None,
) -> dict | None:
    """Write rendered prompts as a table (jsonl, csv, parquet) or as a batch-API request file.

    Tables have one row per task: ``task_id, system, prompt, channel, condition, template``.
    A batch file cannot carry the template in its requests (the APIs refuse unknown
    fields), so a ``<out>.manifest.json`` beside it records the template, the model, the
    token limit (and whether it was the default), the reasoning effort or thinking budget
    and the task count; the manifest is returned (None for a table).
    """
    from pathlib import Path

    out = Path(out)
    api = request_api(fmt)
    if api is not None:
        lines = batch_requests(
            prompts,
            api=api,
            model=model or "",
            max_tokens=max_tokens,
            reasoning_effort=reasoning_effort,
            thinking_budget=thinking_budget,
        )
        from .output import replacing

        with replacing(out) as partial:  # an interrupted export leaves an earlier request file whole
            partial.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        # the limit the lines were written with, from the same rule (an empty export has no first line to read)
        limit = (
            max_tokens
            if max_tokens is not None
            else default_max_tokens(api=api, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
        )
        manifest = {
            "format": fmt,
            "template": TEMPLATE,
            "model": model,
            "max_tokens": limit,
            "max_tokens_default": (
                MAX_TOKENS_RULES[
                    max_tokens_rule(api=api, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget)
                ]
                if max_tokens is None
                else None
            ),
            "reasoning_effort": reasoning_effort,
            "thinking_budget": thinking_budget,
            "tasks": len(lines),
        }
        with replacing(Path(f"{out}.manifest.json")) as partial:
            partial.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        return manifest
    check_request_options(
        api=None, max_tokens=max_tokens, reasoning_effort=reasoning_effort, thinking_budget=thinking_budget
    )
    table = prompts.select("task_id", "system", "prompt", "channel", "condition", "template")
    if fmt == "jsonl":
        table.write_ndjson(out)
    elif fmt == "csv":
        table.write_csv(out)
    else:
        table.write_parquet(out)
    return None
