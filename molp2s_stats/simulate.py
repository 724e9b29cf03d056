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
    SimulatedModel("sim-vibrational-expert", 0.0,
                   {"ir": 1.6, "raman": 1.4, "vibrational_bundle": 1.8, "all": 1.6, "*": 0.3},
                   {"ir": 0.6, "raman": 0.55, "vibrational_bundle": 0.65, "all": 0.6, "*": 0.15}),
    SimulatedModel("sim-electronic-expert", 0.1,
                   {"dipole_norm": 1.4, "dipole_vector": 1.2, "gap": 1.0, "all": 1.2, "*": 0.2},
                   {"dipole_norm": 0.5, "dipole_vector": 0.45, "gap": 0.4, "all": 0.45, "*": 0.1}),
    SimulatedModel("sim-generalist", 0.3, {"*": 0.8}, {"*": 0.35}),
    SimulatedModel("sim-structure-only", 0.9, {"*": 0.0}, {"*": 0.03}, cites=0.1),
    SimulatedModel("sim-responsive", -0.2, {"*": 0.5}, {"*": 0.75}, cites=0.8),
    SimulatedModel("sim-weak", -0.8, {"*": 0.2}, {"*": 0.1}, invalid=0.05, cites=0.3),
    SimulatedModel("sim-noisy", 0.2, {"*": 0.6}, {"*": 0.3}, invalid=0.15, raw_text_share=0.6),
    # The paper's NMR finding as known truth: more reliance on ¹H than on ¹³C, yet less
    # responsiveness to ¹H when it is replaced by a counterfactual candidate's.
    SimulatedModel("sim-nmr-expert", 0.0,
                   {"h1_peaks": 1.5, "h1_peaks_int": 1.6, "h1_atomwise": 1.4, "c13_peaks": 0.8, "c13_peaks_deg": 0.9,
                    "c13_atomwise": 0.7, "nmr_bundle": 1.6, "all": 1.2, "*": 0.2},
                   {"h1_peaks": 0.2, "h1_peaks_int": 0.25, "h1_atomwise": 0.2, "c13_peaks": 0.5,
                    "c13_peaks_deg": 0.55, "c13_atomwise": 0.45, "nmr_bundle": 0.4, "all": 0.35, "*": 0.1},
                   cites=0.6),
)
# What a justification calls the shown quantity (the prompt's own words), per kind of channel.
QUANTITY_NAMES = {"dipole_norm": "dipole moment", "dipole_vector": "dipole vector", "gap": "HOMO–LUMO gap",
                  "uvvis": "UV–Vis excitations", "ir": "IR spectrum", "raman": "Raman spectrum",
                  "h1": "¹H shieldings", "c13": "¹³C shieldings", "vibrational_bundle": "IR and Raman spectra",
                  "nmr_bundle": "NMR shieldings", "all": "dipole moment and spectra"}


def _justification(channel: str, cites: bool) -> str:
    """One sentence that names no candidate (so the answer after it stays unambiguous)."""
    if not cites:
        return "The size and branching of this fragment suit the scaffold best."
    name = QUANTITY_NAMES.get(channel) or QUANTITY_NAMES.get(channel.split("_")[0], "computed properties")
    return f"This fragment fits the shown {name} best."

INVALID_TEXTS = ("I cannot tell from the information given.", "Answer: `C1CC(`", "Either (A) or (B), hard to say.",
                 "The properties do not match any option.")


def _answer_text(label: str, fragment: str, molecule: str, rng: np.random.Generator) -> str:
    spelled = fragment.replace("[*]", str(rng.choice(["*", "[*]", "[1*]", "[*:1]"])))
    styles = (f"Answer: {label}", f"The answer is ({label}).", f"**{label}**", label, f"\\boxed{{{label}}}",
              f"Answer: `{spelled}`", f"The missing piece is `{spelled}`, so the final answer is {label}.",
              f"The completed molecule is `{molecule}`.")
    return styles[int(rng.integers(len(styles)))]


def simulate(tables: dict[str, pl.DataFrame], *, models: tuple[SimulatedModel, ...] = DEFAULT_MODELS,
             seed: int = DEFAULT_SEED, samples: int = 1) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
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
    families = tables["families"].sort("family_id")
    family_ids = families["family_id"].to_list()
    difficulty = dict(zip(family_ids, rng.normal(0.0, FAMILY_SD, len(family_ids))))
    candidates = tables["candidates"].sort("family_id", "label")
    members: dict[str, list[tuple[str, str, str]]] = {}
    for f, label, fragment, molecule in candidates.select("family_id", "label", "fragment", "molecule").iter_rows():
        members.setdefault(f, []).append((label, fragment, molecule))
    source = dict(families.select("family_id", "source").iter_rows())
    tasks = tables["tasks"].sort("task_id").select("task_id", "family_id", "channel", "condition", "target")
    responses, truth = {}, []
    for model in models:
        rows = []
        for task_id, family_id, channel, condition, target in tasks.iter_rows():
            labels = [m[0] for m in members[family_id]]
            base = model.skill - difficulty[family_id]
            lift = model.for_channel(model.reliance, channel) if condition == "source" else 0.0
            for sample in range(samples):
                if condition == "cf" and rng.uniform() < model.for_channel(model.responsiveness, channel):
                    choice = target
                else:
                    right = source[family_id] if condition == "cf" else target
                    if rng.uniform() < expit(base + lift):
                        choice = right
                    else:
                        choice = str(rng.choice([label for label in labels if label != right]))
                row = {"model": model.name, "task_id": task_id, "sample": sample, "response": None, "choice": None,
                       "latency_s": round(float(rng.gamma(2.0, 1.5)), 2)}
                if rng.uniform() < model.invalid:
                    row["response"] = str(rng.choice(INVALID_TEXTS))
                elif rng.uniform() < model.raw_text_share:
                    _, fragment, molecule = members[family_id][labels.index(choice)]
                    row["response"] = _answer_text(choice, fragment, molecule, rng)
                    if condition != "none":
                        cites = bool(text_rng.uniform() < model.cites)
                        row["response"] = f"{_justification(channel, cites)}\n{row['response']}"
                else:
                    row["choice"] = choice
                rows.append(row)
        responses[model.name] = pl.DataFrame(rows, schema={
            "model": pl.String, "task_id": pl.String, "sample": pl.Int64, "response": pl.String,
            "choice": pl.String, "latency_s": pl.Float64})
        truth += _truth(model, tables, difficulty)
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
            (model.name, channel, "responsiveness",
             valid * float(np.average(p_cf, weights=n_candidates - 1))),
        ]
    return rows


def write(responses: dict[str, pl.DataFrame], truth: pl.DataFrame, out: Path, *, models: tuple[SimulatedModel, ...],
          seed: int, samples: int) -> list[Path]:
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
    params = {"generative_model": __doc__, "seed": seed, "samples": samples, "family_sd": FAMILY_SD,
              "models": [asdict(m) for m in models]}
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
    task_schema = {c: pl.String for c in ("task_id", "family_id", "channel", "condition", "target",
                                          "shown_family", "shown_label")}
    return {
        "families": pl.DataFrame(fams, schema=["family_id", "scaffold", "source"], orient="row"),
        "candidates": pl.DataFrame(cands, schema=["family_id", "label", "fragment", "molecule"], orient="row"),
        "properties": pl.DataFrame([(ids[0], "A", channels[0], "1.0")],
                                   schema=["family_id", "label", "channel", "value"], orient="row"),
        "tasks": pl.DataFrame(tasks, schema=task_schema, orient="row"),
    }
