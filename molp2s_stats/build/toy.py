"""A small generated benchmark with synthetic properties and simulated responses.

The test fixture in ``tests/fixtures/toy`` (the embedded default data is the QM9
benchmark in ``data/``; see ``build/benchmark.py``): a dozen families over real scaffolds and fragments (the molecules are valid SMILES made by
joining them with RDKit), **synthetic** property values drawn at random, every
condition, three simulated models and a few invalid answers and retries. Nothing
here is a measurement; it exercises every code path.

Run ``python -m molp2s_stats.build.toy tests/fixtures/toy`` to regenerate it (seeded). Unlike
the QM9 benchmark it has every channel kind (UV–Vis and NMR included), which the
tests need.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from ..chem import complete

SEED = 20261129
SCAFFOLDS = (
    "c1ccc(cc1)[*]", "C1CCC(CC1)[*]", "c1cc([*])cnc1", "[*]C1CC1", "CC(C)(C)[*]", "c1ccc2ccccc2c1[*]",
    "C1COCC1[*]", "CN(C)C(=O)[*]", "c1ccsc1[*]", "OCC[*]", "FC(F)(F)c1ccc(cc1)[*]", "CC(=O)Nc1ccc(cc1)[*]",
)
FRAGMENTS = (
    "[*]C", "[*]CC", "[*]CCC", "[*]C(C)C", "[*]O", "[*]OC", "[*]N", "[*]C#N", "[*]C(C)=O",
    "[*]F", "[*]Cl", "[*]C=O", "[*]C(F)(F)F", "[*]N(C)C",
)
FAMILY_SIZES = (4, 4, 3, 5, 4, 6, 2, 4, 3, 4, 5, 4)
SINGLE_CHANNELS = (
    "dipole_norm", "dipole_vector", "gap", "uvvis", "ir", "raman",
    "h1_peaks", "h1_peaks_int", "h1_atomwise", "c13_peaks", "c13_peaks_deg", "c13_atomwise",
)
CHANNELS = SINGLE_CHANNELS + ("vibrational_bundle", "nmr_bundle", "all")
LABELS = "ABCDEF"

# Simulated models: P(correct) with no properties, extra accuracy from the right
# properties (reliance) per channel group, and P(moving to a counterfactual).
MODELS = {
    "sim-alpha": {"p0": 0.35, "reliance": {"electronic": 0.30, "vibrational": 0.45, "magnetic_resonance": 0.10, "bundle": 0.40},
                  "responsiveness": 0.55, "invalid": 0.03},
    "sim-beta": {"p0": 0.45, "reliance": {"electronic": 0.15, "vibrational": 0.05, "magnetic_resonance": 0.35, "bundle": 0.30},
                 "responsiveness": 0.35, "invalid": 0.02},
    "sim-gamma": {"p0": 0.30, "reliance": {"electronic": 0.02, "vibrational": 0.02, "magnetic_resonance": 0.02, "bundle": 0.02},
                  "responsiveness": 0.05, "invalid": 0.06},
}
GROUP = {**{c: "electronic" for c in ("dipole_norm", "dipole_vector", "gap", "uvvis")},
         **{c: "vibrational" for c in ("ir", "raman")},
         **{c: "magnetic_resonance" for c in SINGLE_CHANNELS[6:]},
         **{c: "bundle" for c in CHANNELS[12:]}}


def _property(channel: str, rng: np.random.Generator) -> object:
    if channel == "dipole_norm":
        return round(float(rng.uniform(0, 12)), 3)
    if channel == "dipole_vector":
        return [round(float(v), 3) for v in rng.normal(0, 2, 3)]
    if channel == "gap":
        return round(float(rng.uniform(0.2, 0.35)), 5)
    if channel == "uvvis":
        return {"energies": sorted(rng.uniform(3, 8, 3).round(3).tolist()), "strengths": rng.uniform(0.01, 1, 3).round(3).tolist()}
    if channel in ("ir", "raman"):
        return {"frequencies": sorted(rng.uniform(400, 3500, 8).round(1).tolist()), "intensities": rng.uniform(1, 100, 8).round(2).tolist()}
    low, high, count = (20, 32, 6) if channel.startswith("h1") else (30, 190, 5)
    return {"shieldings": sorted(rng.uniform(low, high, count).round(3).tolist())}


def build_benchmark(rng: np.random.Generator) -> dict[str, pl.DataFrame]:
    families, candidates, properties, tasks = [], [], [], []
    for index, (scaffold, size) in enumerate(zip(SCAFFOLDS, FAMILY_SIZES), start=1):
        family_id = f"F{index:02d}"
        fragments = rng.choice(FRAGMENTS, size=size, replace=False)
        labels = LABELS[:size]
        source = labels[int(rng.integers(size))]
        families.append((family_id, scaffold, source))
        for label, fragment in zip(labels, fragments):
            candidates.append((family_id, label, fragment, complete(scaffold, str(fragment))))
            for channel in SINGLE_CHANNELS:
                properties.append((family_id, label, channel, _property(channel, rng)))
    props = {(f, l, c): v for f, l, c, v in properties}
    # Make some pairs too close to tell apart, so input validation has work to do.
    props[("F03", "B", "dipole_norm")] = props[("F03", "A", "dipole_norm")] + 0.1
    props[("F05", "C", "gap")] = props[("F05", "A", "gap")]
    props[("F08", "B", "ir")] = props[("F08", "A", "ir")]
    del props[("F10", "D", "uvvis")]  # a value missing: that pair is not verifiable
    source_of = {f: s for f, _, s in families}
    ids = [f for f, _, _ in families]
    for position, family_id in enumerate(ids):
        labels = [l for f, l, *_ in candidates if f == family_id]
        tasks.append((f"{family_id}-p0", family_id, "none", "none", source_of[family_id], None, None))
        shown = ids[(position + 1) % len(ids)]  # shuffled: the next family's source (a derangement)
        for channel in CHANNELS:
            stem = f"{family_id}-{channel}"
            s = source_of[family_id]
            tasks.append((f"{stem}-source", family_id, channel, "source", s, family_id, s))
            tasks.append((f"{stem}-shuffled", family_id, channel, "shuffled", s, shown, source_of[shown]))
            for k in labels:
                if k != s:
                    tasks.append((f"{stem}-cf-{k}", family_id, channel, "cf", k, family_id, k))
    return {
        "families": pl.DataFrame(families, schema=["family_id", "scaffold", "source"], orient="row"),
        "candidates": pl.DataFrame(candidates, schema=["family_id", "label", "fragment", "molecule"], orient="row"),
        "properties": pl.DataFrame(
            [(f, l, c, json.dumps(v)) for (f, l, c), v in props.items()],
            schema=["family_id", "label", "channel", "value"], orient="row"),
        "tasks": pl.DataFrame(tasks, schema=["task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label"], orient="row"),
    }


def _answer_text(label: str | None, fragment: str | None, rng: np.random.Generator) -> str:
    if label is None:
        return rng.choice(["I cannot determine the answer.", "Answer: `C1CC(`", "It is either (A) or (B)."])
    style = int(rng.integers(6))
    spelled = fragment.replace("[*]", rng.choice(["*", "[*]", "[1*]", "[*:1]"]))
    return [f"Answer: {label}", f"The answer is ({label}).", f"**{label}**", label,
            f"Answer: `{spelled}`", f"The missing fragment is `{spelled}`, so the final answer is {label}."][style]


def simulate_responses(bench: dict[str, pl.DataFrame], rng: np.random.Generator) -> dict[str, pl.DataFrame]:
    labels_of: dict[str, list[str]] = {}
    fragment_of = {}
    for f, l, frag, _ in bench["candidates"].iter_rows():
        labels_of.setdefault(f, []).append(l)
        fragment_of[(f, l)] = frag
    difficulty = {f: rng.normal(0, 0.08) for f in labels_of}
    out = {}
    for model, p in MODELS.items():
        rows = []
        for task_id, family_id, channel, condition, target, *_ in bench["tasks"].iter_rows():
            labels = labels_of[family_id]
            source = bench["families"].filter(pl.col("family_id") == family_id)["source"][0]
            base = p["p0"] - difficulty[family_id]
            if condition == "cf":
                roll = rng.uniform()
                choice = target if roll < p["responsiveness"] else (source if roll < 0.85 else str(rng.choice(labels)))
            else:
                lift = {"none": 0.0, "source": p["reliance"][GROUP.get(channel, "bundle")], "shuffled": -0.05}[condition]
                correct = rng.uniform() < np.clip(base + lift, 0.02, 0.98)
                choice = target if correct else str(rng.choice([l for l in labels if l != target]))
            if rng.uniform() < p["invalid"]:
                choice = None
            if model == "sim-gamma" and task_id == "F12-ir-cf-" + [l for l in labels if l != source][0]:
                continue  # one missing answer: F12 drops out of the IR cohort (and its bundles keep it)
            attempts = [choice]
            if rng.uniform() < 0.02:  # a retry: the first attempt failed, the second is terminal
                attempts = [None, choice]
            for attempt, c in enumerate(attempts):
                row = {"model": model, "task_id": task_id, "attempt": attempt,
                       "latency_s": round(float(rng.gamma(2, 1.5)), 2)}
                if model == "sim-alpha" or c is None:
                    row["response"] = _answer_text(c, fragment_of.get((family_id, c)), rng)
                else:
                    row["choice"] = c
                rows.append(row)
        out[model] = pl.DataFrame(rows, schema={"model": pl.String, "task_id": pl.String, "attempt": pl.Int64,
                                                "latency_s": pl.Float64, "response": pl.String, "choice": pl.String})
    return out


def write(directory: Path, seed: int = SEED) -> None:
    rng = np.random.default_rng(seed)
    bench = build_benchmark(rng)
    directory.mkdir(parents=True, exist_ok=True)
    bench["families"].write_csv(directory / "families.csv")
    bench["candidates"].write_csv(directory / "candidates.csv")
    bench["properties"].write_ndjson(directory / "properties.jsonl")
    bench["tasks"].write_parquet(directory / "tasks.parquet")
    responses = simulate_responses(bench, rng)
    (directory / "responses").mkdir(exist_ok=True)
    responses["sim-alpha"].write_ndjson(directory / "responses" / "sim-alpha.jsonl")
    responses["sim-beta"].write_csv(directory / "responses" / "sim-beta.csv")
    responses["sim-gamma"].write_parquet(directory / "responses" / "sim-gamma.parquet")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/toy"))
