"""A small generated benchmark with synthetic properties and simulated responses.

The test fixture in ``tests/support/fixtures/toy`` (the embedded default data is the QM9
benchmark in ``data/``; see ``build/benchmark.py``): a dozen families over real scaffolds and fragments (the molecules are valid SMILES made by
joining them with RDKit), **synthetic** property values drawn at random, every
condition, three simulated models (``simulate``) and a few invalid answers and retries. Nothing
here is a measurement; it exercises every code path.

Run ``python -m molp2s_stats.build.toy tests/support/fixtures/toy`` to regenerate it (seeded). Unlike
the QM9 benchmark it has every channel kind (UV–Vis and NMR included), which the
tests need.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from .. import simulate
from ..chem import complete

SEED = 20261129
SCAFFOLDS = (
    "c1ccc(cc1)[*]",
    "C1CCC(CC1)[*]",
    "c1cc([*])cnc1",
    "[*]C1CC1",
    "CC(C)(C)[*]",
    "c1ccc2ccccc2c1[*]",
    "C1COCC1[*]",
    "CN(C)C(=O)[*]",
    "c1ccsc1[*]",
    "OCC[*]",
    "FC(F)(F)c1ccc(cc1)[*]",
    "CC(=O)Nc1ccc(cc1)[*]",
)
FRAGMENTS = (
    "[*]C",
    "[*]CC",
    "[*]CCC",
    "[*]C(C)C",
    "[*]O",
    "[*]OC",
    "[*]N",
    "[*]C#N",
    "[*]C(C)=O",
    "[*]F",
    "[*]Cl",
    "[*]C=O",
    "[*]C(F)(F)F",
    "[*]N(C)C",
)
FAMILY_SIZES = (4, 4, 3, 5, 4, 6, 2, 4, 3, 4, 5, 4)
SINGLE_CHANNELS = (
    "dipole_norm",
    "dipole_vector",
    "gap",
    "uvvis",
    "ir",
    "raman",
    "h1_peaks",
    "h1_peaks_int",
    "h1_atomwise",
    "c13_peaks",
    "c13_peaks_deg",
    "c13_atomwise",
)
CHANNELS = SINGLE_CHANNELS + ("vibrational_bundle", "nmr_bundle", "all")
LABELS = "ABCDEF"

GROUP = {
    **{c: "electronic" for c in ("dipole_norm", "dipole_vector", "gap", "uvvis")},
    **{c: "vibrational" for c in ("ir", "raman")},
    **{c: "magnetic_resonance" for c in SINGLE_CHANNELS[6:]},
    **{c: "bundle" for c in CHANNELS[12:]},
}


def _by_group(lift: dict[str, float]) -> dict[str, float]:
    return {"*": 0.0, **{channel: lift[group] for channel, group in GROUP.items()}}


# Three simulated models (the package's one simulator, logit scale): one leans on vibrational
# spectra, one on NMR, one barely uses properties. sim-alpha answers only in text (the
# JSONL file exercises the parser); sim-gamma has the most invalid answers.
MODELS = (
    simulate.SimulatedModel(
        "sim-alpha",
        -0.6,
        _by_group({"electronic": 1.2, "vibrational": 1.9, "magnetic_resonance": 0.4, "bundle": 1.7}),
        {"*": 0.55},
        invalid=0.03,
        raw_text_share=1.0,
    ),
    simulate.SimulatedModel(
        "sim-beta",
        -0.2,
        _by_group({"electronic": 0.6, "vibrational": 0.2, "magnetic_resonance": 1.4, "bundle": 1.2}),
        {"*": 0.35},
        invalid=0.02,
        raw_text_share=0.3,
    ),
    simulate.SimulatedModel("sim-gamma", -0.8, {"*": 0.1}, {"*": 0.05}, invalid=0.06, raw_text_share=0.3),
)
RETRY_SHARE = 0.02  # answers whose first attempt failed (invalid text) before the terminal one


def _property(channel: str, rng: np.random.Generator) -> object:
    if channel == "dipole_norm":
        return round(float(rng.uniform(0, 12)), 3)
    if channel == "dipole_vector":
        return [round(float(v), 3) for v in rng.normal(0, 2, 3)]
    if channel == "gap":
        return round(float(rng.uniform(0.2, 0.35)), 5)
    if channel == "uvvis":
        return {
            "energies": sorted(rng.uniform(3, 8, 3).round(3).tolist()),
            "strengths": rng.uniform(0.01, 1, 3).round(3).tolist(),
        }
    if channel in ("ir", "raman"):
        return {
            "frequencies": sorted(rng.uniform(400, 3500, 8).round(1).tolist()),
            "intensities": rng.uniform(1, 100, 8).round(2).tolist(),
        }
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
    props = {(f, label, c): v for f, label, c, v in properties}
    # Make some pairs too close to tell apart, so input validation has work to do.
    props[("F03", "B", "dipole_norm")] = props[("F03", "A", "dipole_norm")] + 0.1
    props[("F05", "C", "gap")] = props[("F05", "A", "gap")]
    props[("F08", "B", "ir")] = props[("F08", "A", "ir")]
    del props[("F10", "D", "uvvis")]  # a value missing: that pair is not verifiable
    source_of = {f: s for f, _, s in families}
    ids = [f for f, _, _ in families]
    for position, family_id in enumerate(ids):
        labels = [label for f, label, *_ in candidates if f == family_id]
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
            [(f, label, c, json.dumps(v)) for (f, label, c), v in props.items()],
            schema=["family_id", "label", "channel", "value"],
            orient="row",
        ),
        "tasks": pl.DataFrame(
            tasks,
            schema=["task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label"],
            orient="row",
        ),
    }


def simulate_responses(bench: dict[str, pl.DataFrame], seed: int) -> dict[str, pl.DataFrame]:
    """The simulator's answers, plus what a harness log has that it does not: a few retries
    (``attempt`` 0 failed, 1 terminal) and one missing answer."""
    responses, _ = simulate.simulate(bench, models=MODELS, seed=seed)
    rng = np.random.default_rng([seed, 2])
    source = dict(bench["families"].select("family_id", "source").iter_rows())
    labels = bench["candidates"].group_by("family_id").agg(pl.col("label").sort())
    first_other = {f: next(label for label in ls if label != source[f]) for f, ls in labels.iter_rows()}
    out = {}
    for model, frame in responses.items():
        frame = frame.drop("sample").with_columns(pl.lit(0, pl.Int64).alias("attempt"))
        if model == "sim-gamma":  # F12 drops out of the IR cohort (its bundles keep it)
            frame = frame.filter(pl.col("task_id") != f"F12-ir-cf-{first_other['F12']}")
        retried = frame.filter(pl.Series(rng.random(frame.height) < RETRY_SHARE))
        failed = retried.with_columns(
            pl.Series(
                "response",
                [simulate.answer_text(None, None, None, rng) for _ in range(retried.height)],
                dtype=pl.String,
            ),
            pl.lit(None, pl.String).alias("choice"),
        )
        frame = pl.concat(
            [
                frame.join(retried.select("task_id"), on="task_id", how="anti"),
                failed,
                retried.with_columns(pl.lit(1, pl.Int64).alias("attempt")),
            ]
        )
        out[model] = frame.sort("task_id", "attempt").select(
            "model", "task_id", "attempt", "latency_s", "response", "choice"
        )
    return out


def write(directory: Path, seed: int = SEED) -> None:
    rng = np.random.default_rng(seed)
    bench = build_benchmark(rng)
    directory.mkdir(parents=True, exist_ok=True)
    bench["families"].write_csv(directory / "families.csv")
    bench["candidates"].write_csv(directory / "candidates.csv")
    bench["properties"].write_ndjson(directory / "properties.jsonl")
    bench["tasks"].write_parquet(directory / "tasks.parquet")
    responses = simulate_responses(bench, seed)
    (directory / "responses").mkdir(exist_ok=True)
    responses["sim-alpha"].write_ndjson(directory / "responses" / "sim-alpha.jsonl")
    responses["sim-beta"].write_csv(directory / "responses" / "sim-beta.csv")
    responses["sim-gamma"].write_parquet(directory / "responses" / "sim-gamma.parquet")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/support/fixtures/toy"))
