"""Simulated responses with known truth, for checking the statistics end to end.

The generative model (all on the logit scale, ``σ`` the logistic function), for model
``m``, channel ``c``, family ``f`` with K_f candidates and source ``s_f``:

- family difficulty ``d_f ~ Normal(0, family_sd)``, shared by every model and channel;
- P0 and shuffled tasks (no usable properties): right with ``p = σ(skill_m − d_f)``;
- source tasks: right with ``σ(skill_m + reliance_mc − d_f)``;
- cf tasks (properties of candidate k): with probability ``responsiveness_mc`` the
  answer follows the properties (k); otherwise it is drawn as for a shuffled task
  (``s_f`` with probability p);
- a wrong answer is uniform over the other candidates; finally, with probability
  ``invalid_m``, the answer is replaced by text that names no candidate.

A share ``raw_text_share`` of answers comes as raw text; on tasks with properties, the
text opens with a one-sentence justification that names the shown quantity with
probability ``cites_m`` (drawn from a stream of its own, so the choices do not depend
on it).

The truth written beside the responses is on the probability scale and averaged over
all the benchmark's families (the statistics average over each channel's cohort, a
subset): ``reliance = (1 − invalid)·mean_f[σ(skill + reliance − d_f) − σ(skill − d_f)]``
(pp, the expectation of RM) and ``responsiveness`` = the expected share of cf tasks
answered with k, every (family, k) pair weighing the same (%, the expectation of
cf_accuracy).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy.special import expit

from . import units
from .defaults import SIMULATION_SEED

DEFAULT_SEED = SIMULATION_SEED
FAMILY_SD = 0.8


@dataclass(frozen=True)
class SimulatedModel:
    """One simulated model; reliance and responsiveness per channel (``*`` = any other)."""

    name: str
    skill: float
    reliance: dict[str, float]
    responsiveness: dict[str, float]
    invalid: float = 0.02
    raw_text_share: float = 0.3
    cites: float = 0.5

    def for_channel(self, table: dict[str, float], channel: str) -> float:
        return table.get(channel, table["*"])


# Profiles that differ the way the paper's models do: one leans on vibrational
# spectra, one on electronic properties, one ignores properties, one follows any
# property it is shown, and so on. Every name says it is simulated.
DEFAULT_MODELS = (
    SimulatedModel(
        "sim-vibrational-expert",
        0.0,
        {"ir": 1.6, "raman": 1.4, "vibrational_bundle": 1.8, "all": 1.6, "*": 0.3},
        {"ir": 0.6, "raman": 0.55, "vibrational_bundle": 0.65, "all": 0.6, "*": 0.15},
    ),
    SimulatedModel(
        "sim-electronic-expert",
        0.1,
        {"dipole_norm": 1.4, "dipole_vector": 1.2, "gap": 1.0, "all": 1.2, "*": 0.2},
        {"dipole_norm": 0.5, "dipole_vector": 0.45, "gap": 0.4, "all": 0.45, "*": 0.1},
    ),
    SimulatedModel("sim-generalist", 0.3, {"*": 0.8}, {"*": 0.35}),
    SimulatedModel("sim-structure-only", 0.9, {"*": 0.0}, {"*": 0.03}, cites=0.1),
    SimulatedModel("sim-responsive", -0.2, {"*": 0.5}, {"*": 0.75}, cites=0.8),
    SimulatedModel("sim-weak", -0.8, {"*": 0.2}, {"*": 0.1}, invalid=0.05, cites=0.3),
    SimulatedModel("sim-noisy", 0.2, {"*": 0.6}, {"*": 0.3}, invalid=0.15, raw_text_share=0.6),
    # The paper's NMR finding as known truth: more reliance on ¹H than on ¹³C, yet less
    # responsiveness to ¹H when it is replaced by a counterfactual candidate's.
    SimulatedModel(
        "sim-nmr-expert",
        0.0,
        {
            "h1_peaks": 1.5,
            "h1_peaks_int": 1.6,
            "h1_atomwise": 1.4,
            "c13_peaks": 0.8,
            "c13_peaks_deg": 0.9,
            "c13_atomwise": 0.7,
            "nmr_bundle": 1.6,
            "all": 1.2,
            "*": 0.2,
        },
        {
            "h1_peaks": 0.2,
            "h1_peaks_int": 0.25,
            "h1_atomwise": 0.2,
            "c13_peaks": 0.5,
            "c13_peaks_deg": 0.55,
            "c13_atomwise": 0.45,
            "nmr_bundle": 0.4,
            "all": 0.35,
            "*": 0.1,
        },
        cites=0.6,
    ),
)
# What a justification calls the shown quantity (the prompt's own words), per kind of channel.
QUANTITY_NAMES = {
    "dipole_norm": "dipole moment",
    "dipole_vector": "dipole vector",
    "gap": "HOMO–LUMO gap",
    "uvvis": "UV–Vis excitations",
    "ir": "IR spectrum",
    "raman": "Raman spectrum",
    "h1": "¹H shieldings",
    "c13": "¹³C shieldings",
    "vibrational_bundle": "IR and Raman spectra",
    "nmr_bundle": "NMR shieldings",
    "all": "dipole moment and spectra",
}


def justification(channel: str, cites: bool) -> str:
    """One sentence that names no candidate (so the answer after it stays unambiguous)."""
    if not cites:
        return "The size and branching of this fragment suit the scaffold best."
    name = QUANTITY_NAMES.get(channel) or QUANTITY_NAMES.get(channel.split("_")[0], "computed properties")
    return f"This fragment fits the shown {name} best."


INVALID_TEXTS = (
    "I cannot tell from the information given.",
    "Answer: `C1CC(`",
    "Either (A) or (B), hard to say.",
    "The properties do not match any option.",
)


def answer_text(label: str | None, fragment: str | None, molecule: str | None, rng: np.random.Generator) -> str:
    """An answer as a model might write it, in one of the styles the parser reads; ``label``
    None gives a text that names no candidate (an invalid answer). Every simulated text,
    the test fixture's and the benchmarks' included, comes from here."""
    if label is None:
        return str(rng.choice(INVALID_TEXTS))
    spelled = fragment.replace("[*]", str(rng.choice(["*", "[*]", "[1*]", "[*:1]"])))
    styles = (
        f"Answer: {label}",
        f"The answer is ({label}).",
        f"**{label}**",
        label,
        f"\\boxed{{{label}}}",
        f"Answer: `{spelled}`",
        f"The missing piece is `{spelled}`, so the final answer is {label}.",
        f"The completed molecule is `{molecule}`.",
    )
    return styles[int(rng.integers(len(styles)))]


@dataclass(frozen=True)
class Design:
    """A benchmark's tasks as index arrays, what the simulator draws from.

    Families in id order, candidates of a family in label order; ``target`` and
    ``source`` are candidate positions within the task's family.
    """

    task_ids: list[str]
    channels: np.ndarray  # per task (``none`` for P0)
    conditions: np.ndarray
    family: np.ndarray  # family position per task
    target: np.ndarray
    source: np.ndarray
    n_candidates: np.ndarray  # per task
    candidates: list[list[tuple[str, str, str]]]  # per family: (label, fragment, molecule)


def task_design(tables: dict[str, pl.DataFrame]) -> Design:
    """The :class:`Design` of benchmark tables (``ingest.read_benchmark``'s)."""
    families = tables["families"].sort("family_id")
    family_ids = families["family_id"].to_list()
    position = {f: i for i, f in enumerate(family_ids)}
    candidates: list[list[tuple[str, str, str]]] = [[] for _ in family_ids]
    for f, label, fragment, molecule in (
        tables["candidates"].sort("family_id", "label").select("family_id", "label", "fragment", "molecule").iter_rows()
    ):
        candidates[position[f]].append((label, fragment, molecule))
    label_index = [{c[0]: j for j, c in enumerate(members)} for members in candidates]
    source_label = families["source"].to_list()
    tasks = tables["tasks"].sort("task_id")
    family = np.array([position[f] for f in tasks["family_id"]], dtype=np.int64)
    return Design(
        task_ids=tasks["task_id"].to_list(),
        channels=tasks["channel"].to_numpy().astype(str),
        conditions=tasks["condition"].to_numpy().astype(str),
        family=family,
        target=np.array([label_index[f][t] for f, t in zip(family, tasks["target"])], dtype=np.int64),
        source=np.array([label_index[f][source_label[f]] for f in family], dtype=np.int64),
        n_candidates=np.array([len(candidates[f]) for f in family], dtype=np.int64),
        candidates=candidates,
    )


@dataclass(frozen=True)
class Answers:
    """One model's simulated answers, one entry per (task, sample)."""

    task: np.ndarray  # task position in the design
    sample: np.ndarray
    choice: np.ndarray  # candidate position within the family; -1 for an invalid answer
    as_text: np.ndarray  # written as raw text rather than a parsed choice
    cites: np.ndarray  # the text's justification names the shown quantity


def draw_answers(
    design: Design,
    model: SimulatedModel,
    difficulty: np.ndarray,
    samples: int | np.ndarray,
    rng: np.random.Generator,
    text_rng: np.random.Generator,
) -> Answers:
    """The generative model above, for every task and sample at once.

    ``difficulty`` has one d_f per family of the design; ``samples`` is the number of
    answers per task (one number, or one per task). Whether a text cites is drawn from
    ``text_rng``, so the choices do not depend on it.
    """
    counts = np.broadcast_to(np.asarray(samples, dtype=np.int64), design.family.shape)
    task = np.repeat(np.arange(design.family.size), counts)
    sample = np.arange(task.size) - np.repeat(np.cumsum(counts) - counts, counts)
    is_cf = design.conditions == "cf"
    per_channel = {
        c: (model.for_channel(model.reliance, c), model.for_channel(model.responsiveness, c))
        for c in np.unique(design.channels)
    }
    reliance = np.array([per_channel[c][0] for c in design.channels])
    responsiveness = np.array([per_channel[c][1] for c in design.channels])
    lift = np.where(design.conditions == "source", reliance, 0.0)
    # a cf answer that does not follow the properties is right when it names the source
    right = np.where(is_cf, design.source, design.target)
    follows = is_cf[task] & (rng.random(task.size) < responsiveness[task])
    correct = rng.random(task.size) < expit(model.skill - difficulty[design.family[task]] + lift[task])
    # a wrong answer is uniform over the other K − 1 candidates: the r-th of them, skipping `right`
    r = rng.integers(0, design.n_candidates[task] - 1)
    wrong = r + (r >= right[task])
    choice = np.where(follows, design.target[task], np.where(correct, right[task], wrong))
    invalid = rng.random(task.size) < model.invalid
    as_text = invalid | (rng.random(task.size) < model.raw_text_share)
    shows_properties = design.conditions != "none"
    # only a valid text answer on a task with properties opens with a justification
    cites = as_text & ~invalid & shows_properties[task] & (text_rng.random(task.size) < model.cites)
    return Answers(task=task, sample=sample, choice=np.where(invalid, -1, choice), as_text=as_text, cites=cites)


def answer_frame(name: str, design: Design, answers: Answers, rng: np.random.Generator) -> pl.DataFrame:
    """The response file rows of :func:`draw_answers`: ``model, task_id, sample, response,
    choice, latency_s``; a text answer has ``response`` (a justification first on tasks
    with properties), the others ``choice``."""
    families = design.family[answers.task]
    labels = [[c[0] for c in members] for members in design.candidates]
    # a text answer carries its choice only in the text, for the parser to find
    choice = [
        labels[f][c] if c >= 0 and not text else None
        for f, c, text in zip(families.tolist(), answers.choice.tolist(), answers.as_text.tolist())
    ]
    response: list[str | None] = [None] * answers.task.size
    for i in np.flatnonzero(answers.as_text).tolist():
        f, c, t = int(families[i]), int(answers.choice[i]), int(answers.task[i])
        text = answer_text(*design.candidates[f][c], rng) if c >= 0 else answer_text(None, None, None, rng)
        if c >= 0 and design.conditions[t] != "none":
            text = f"{justification(str(design.channels[t]), bool(answers.cites[i]))}\n{text}"
        response[i] = text
    return pl.DataFrame(
        {
            "model": [name] * answers.task.size,
            "task_id": pl.Series(design.task_ids).gather(answers.task),
            "sample": answers.sample,
            "response": pl.Series(response, dtype=pl.String),
            "choice": pl.Series(choice, dtype=pl.String),
            "latency_s": rng.gamma(2.0, 1.5, answers.task.size).round(2),
        },
        schema={
            "model": pl.String,
            "task_id": pl.String,
            "sample": pl.Int64,
            "response": pl.String,
            "choice": pl.String,
            "latency_s": pl.Float64,
        },
    )


def simulate(
    tables: dict[str, pl.DataFrame],
    *,
    models: tuple[SimulatedModel, ...] = DEFAULT_MODELS,
    seed: int = DEFAULT_SEED,
    samples: int = 1,
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Responses per model and the truth they were drawn from.

    Parameters
    ----------
    tables
        Benchmark tables as ``ingest.read_benchmark`` returns them.
    samples
        Sampled answers per task (the ``sample`` column).

    Returns
    -------
    (responses, truth)
        ``responses``: model name → frame of ``model, task_id, sample, response,
        choice, latency_s`` (one of response/choice set per row). ``truth``: one row per
        model × channel × quantity (``acc_p0``, ``acc_source``, ``acc_shuffled``,
        ``reliance``, ``responsiveness``), value in % or pp.
    """
    rng = np.random.default_rng(seed)
    text_rng = np.random.default_rng([seed, 1])  # justifications: a stream of their own
    design = task_design(tables)
    family_ids = sorted(tables["families"]["family_id"].to_list())
    difficulty = rng.normal(0.0, FAMILY_SD, len(family_ids))
    responses, truth = {}, []
    for model in models:
        answers = draw_answers(design, model, difficulty, samples, rng, text_rng)
        responses[model.name] = answer_frame(model.name, design, answers, rng)
        truth += _truth(model, tables, dict(zip(family_ids, difficulty)))
    truth = pl.DataFrame(truth, schema=["model", "channel", "quantity", "value"], orient="row")
    return responses, units.percent_columns(truth, ["value"])


def _truth(model: SimulatedModel, tables: dict[str, pl.DataFrame], difficulty: dict[str, float]) -> list[tuple]:
    sizes = tables["candidates"].group_by("family_id").len()
    k = dict(sizes.iter_rows())
    ids = sorted(difficulty)
    d = np.array([difficulty[f] for f in ids])
    n_candidates = np.array([k[f] for f in ids])
    valid = 1.0 - model.invalid
    p_shuffled = expit(model.skill - d)
    rows = []
    channels = sorted(set(tables["tasks"]["channel"].to_list()) - {"none"})
    for channel in channels:
        p_source = expit(model.skill + model.for_channel(model.reliance, channel) - d)
        q = model.for_channel(model.responsiveness, channel)
        # a non-responsive cf answer lands on k when it is wrong and the uniform pick is k
        p_cf = q + (1 - q) * (1 - p_shuffled) / (n_candidates - 1)
        rows += [
            (model.name, channel, "acc_p0", valid * p_shuffled.mean()),
            (model.name, channel, "acc_source", valid * p_source.mean()),
            (model.name, channel, "acc_shuffled", valid * p_shuffled.mean()),
            (model.name, channel, "reliance", valid * (p_source - p_shuffled).mean()),
            # cf_accuracy weighs every (family, counterfactual) pair alike: K_f − 1 per family
            (model.name, channel, "responsiveness", valid * float(np.average(p_cf, weights=n_candidates - 1))),
        ]
    return rows


def write(
    responses: dict[str, pl.DataFrame],
    truth: pl.DataFrame,
    out: Path,
    *,
    models: tuple[SimulatedModel, ...],
    seed: int,
    samples: int,
) -> list[Path]:
    """One Parquet file per model in ``out``; the truth and the parameters in ``out/simulation/``.

    The subfolder keeps ``molp2s load --responses out/*.parquet`` to response files only.
    """
    (out / "simulation").mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in responses.items():
        path = out / f"{name}.parquet"
        frame.write_parquet(path, compression="zstd", statistics=False)
        paths.append(path)
    truth.write_parquet(out / "simulation" / "truth.parquet", compression="zstd", statistics=False)
    params = {
        "generative_model": __doc__,
        "seed": seed,
        "samples": samples,
        "family_sd": FAMILY_SD,
        "models": [asdict(m) for m in models],
    }
    (out / "simulation" / "simulation.json").write_text(json.dumps(params, indent=2) + "\n", encoding="utf-8")
    return paths


def load_models(path: Path) -> tuple[SimulatedModel, ...]:
    """Models from a ``simulation.json``-style file (its ``models`` list)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(SimulatedModel(**m) for m in data["models"])


SYNTHETIC_FRAGMENTS = ("[*]CCC", "[*]C(C)C", "[*]OCC", "[*]COC")


def synthetic_benchmark(*, families: int, channels: tuple[str, ...]) -> dict[str, pl.DataFrame]:
    """Benchmark tables of any size for simulation studies and benchmarks.

    Families of four propyl/isopropyl/ethoxy/methoxymethyl candidates on benzene (source
    A), every condition in every channel, a cyclic shuffle; one property value only, so
    every family passes input validation. Tables as files: write each with
    ``write_parquet(folder / f"{name}.parquet")``.
    """
    fams, cands, tasks = [], [], []
    ids = [f"F{i:04d}" for i in range(families)]
    for i, f in enumerate(ids):
        fams.append((f, "c1ccc(cc1)[*]", "A"))
        for fragment, label in zip(SYNTHETIC_FRAGMENTS, "ABCD"):
            cands.append((f, label, fragment, "c1ccc(cc1)" + fragment.replace("[*]", "")))
        tasks.append((f"{f}-p0", f, "none", "none", "A", None, None))
        for channel in channels:
            tasks.append((f"{f}-{channel}-s", f, channel, "source", "A", f, "A"))
            tasks.append((f"{f}-{channel}-sh", f, channel, "shuffled", "A", ids[(i + 1) % families], "A"))
            for k in "BCD":
                tasks.append((f"{f}-{channel}-cf-{k}", f, channel, "cf", k, f, k))
    task_schema = {
        c: pl.String for c in ("task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label")
    }
    return {
        "families": pl.DataFrame(fams, schema=["family_id", "scaffold", "source"], orient="row"),
        "candidates": pl.DataFrame(cands, schema=["family_id", "label", "fragment", "molecule"], orient="row"),
        "properties": pl.DataFrame(
            [(ids[0], "A", channels[0], "1.0")], schema=["family_id", "label", "channel", "value"], orient="row"
        ),
        "tasks": pl.DataFrame(tasks, schema=task_schema, orient="row"),
    }
