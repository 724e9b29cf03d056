"""Build the embedded benchmark in ``data/benchmark`` from QM9 (build time only).

    python -m molp2s_stats.build.benchmark [--out data/benchmark] [--validated 150] [--seed 20261129]

Steps, each deterministic for a seed:

1. family pools from QM9 (``qm9.family_pools``);
2. families: pools in a seeded order; in each, up to ``DRAWS`` seeded draws of
   ``CANDIDATES`` fragments, keeping the first draw whose DFT dipole norms and gaps are
   all at least the cutoffs apart (else the last draw); families are added until
   ``VALIDATED`` of them pass both, so that the electronic cohorts stay above the
   paper's 136; labels A–D and the source are seeded too;
3. properties: dipole norm and gap from QM9 (B3LYP/6-31G(2df,p)); dipole vector, IR
   and Raman from GFN2-xTB (``xtb.vibrational_properties``), cached per molecule;
4. tasks: P0, source, shuffled (a seeded derangement per channel), one cf task per
   other candidate, for every channel with values and the bundles over them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
from pathlib import Path

import numpy as np
import polars as pl

from .. import chem
from . import qm9

SEED = 20261129
VALIDATED = 150  # families passing the DFT checks: keeps every cohort above the paper's 136
CANDIDATES = 4
DRAWS = 20
LABELS = "ABCDEF"
DFT_CUTOFFS = {"Dipole_debye": 0.30, "HOMO_LUMO_gap_au": 0.0005}
CHANNELS = ("dipole_norm", "dipole_vector", "gap", "ir", "raman", "vibrational_bundle", "all")
ELEMENTS = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}
CACHE = Path("build/xtb-cache")


def _separated(values: np.ndarray, cutoff: float) -> bool:
    return all(abs(a - b) >= cutoff * (1 - 1e-9) for a, b in itertools.combinations(values, 2))


def select_families(pools: pl.DataFrame, molecules: pl.DataFrame, *, validated: int, seed: int) -> pl.DataFrame:
    """One row per candidate: family_id, label, scaffold, fragment, qm9_index, is_source.

    Families are taken in the seeded pool order until ``validated`` of them pass the
    DFT input validation (dipole norm and gap) in both channels; the others stay in
    the benchmark, so input validation still has families to drop.
    """
    rng = np.random.default_rng(seed)
    dft = molecules.select("Index", *DFT_CUTOFFS).rename({"Index": "qm9_index"})
    members = pools.join(dft, on="qm9_index")
    by_pool = {key: group.sort("fragment") for (key,), group in members.group_by("pool_id")}
    order = sorted(by_pool)
    rng.shuffle(order)
    rows = []
    passed = 0
    for pool_id in order:
        if passed >= validated:
            break
        group = by_pool[pool_id]
        for _ in range(DRAWS):
            pick = group[np.sort(rng.choice(group.height, size=CANDIDATES, replace=False))]
            separated = all(_separated(pick[c].to_numpy(), cut) for c, cut in DFT_CUTOFFS.items())
            if separated:
                break
        passed += separated
        family_id = f"Q{len(rows) // CANDIDATES + 1:03d}"
        labels = rng.permutation(list(LABELS[:CANDIDATES]))
        source = int(rng.integers(CANDIDATES))
        for i, row in enumerate(pick.iter_rows(named=True)):
            rows.append((family_id, str(labels[i]), row["scaffold"], row["fragment"], row["qm9_index"], i == source))
    return pl.DataFrame(rows, schema=["family_id", "label", "scaffold", "fragment", "qm9_index", "is_source"],
                        orient="row").sort("family_id", "label")


def _xtb_one(args: tuple[int, list[int], list[list[float]]]) -> tuple[int, dict]:
    from . import xtb

    index, numbers, positions = args
    path = CACHE / f"{index}.json"
    if path.exists():
        return index, json.loads(path.read_text())
    result = xtb.vibrational_properties(numbers, np.array(positions))
    path.write_text(json.dumps(result))
    return index, result


def xtb_properties(molecules: pl.DataFrame, indices: list[int], *, processes: int = 2) -> dict[int, dict]:
    """GFN2-xTB results per QM9 index, computed in parallel and cached in build/xtb-cache."""
    CACHE.mkdir(parents=True, exist_ok=True)
    jobs = []
    for row in molecules.filter(pl.col("Index").is_in(indices)).sort("Index").iter_rows(named=True):
        numbers = [ELEMENTS[e.strip("'\" ")] for e in row["Elements"].strip("[]").split(",")]
        jobs.append((row["Index"], numbers, json.loads(row["XYZ_Ang"])))
    out = {}
    with mp.get_context("spawn").Pool(processes) as pool:
        for done, (index, result) in enumerate(pool.imap(_xtb_one, jobs), start=1):
            out[index] = result
            if done % 50 == 0:
                print(f"  xTB {done}/{len(jobs)}", flush=True)
    return out


def _sig(value: float, digits: int = 4) -> float:
    """Rounded to ``digits`` significant digits: keeps the files small and stable."""
    return float(f"{value:.{digits}g}")


def derangement(items: list[str], rng: np.random.Generator) -> list[str]:
    """A seeded permutation of ``items`` with no item in its own place (needs ≥ 2 items)."""
    if len(items) < 2:
        raise ValueError("a derangement needs at least two items")
    while True:  # about e draws on average
        order = [items[i] for i in rng.permutation(len(items))]
        if all(a != b for a, b in zip(items, order)):
            return order


def assemble(chosen: pl.DataFrame, molecules: pl.DataFrame, xtb_results: dict[int, dict], *,
             seed: int) -> dict[str, pl.DataFrame]:
    """The SPEC §2 tables, plus ``molecules`` (provenance per candidate)."""
    dft = {row["Index"]: row for row in molecules.filter(pl.col("Index").is_in(chosen["qm9_index"].implode()))
           .select("Index", "SMILES", "Dipole_debye", "HOMO_LUMO_gap_au").iter_rows(named=True)}
    families = (chosen.filter(pl.col("is_source")).select("family_id", "scaffold", pl.col("label").alias("source"))
                .sort("family_id"))
    candidates, properties, provenance = [], [], []
    for row in chosen.iter_rows(named=True):
        molecule = chem.complete(row["scaffold"], row["fragment"])
        candidates.append((row["family_id"], row["label"], row["fragment"], molecule))
        index = row["qm9_index"]
        xtb = xtb_results[index]
        values = {
            "dipole_norm": dft[index]["Dipole_debye"],
            "gap": dft[index]["HOMO_LUMO_gap_au"],
            "dipole_vector": [round(v, 4) for v in xtb["dipole_vector"]],
            "ir": {"frequencies": [round(f, 1) for f in xtb["frequencies"]],
                   "intensities": [_sig(i) for i in xtb["ir_intensities"]]},
            "raman": {"frequencies": [round(f, 1) for f in xtb["frequencies"]],
                      "intensities": [_sig(i) for i in xtb["raman_activities"]]},
        }
        for channel, value in values.items():
            properties.append((row["family_id"], row["label"], channel, json.dumps(value)))
        provenance.append((row["family_id"], row["label"], index, dft[index]["SMILES"], xtb["imaginary_modes"]))
    tasks = []
    ids = families["family_id"].to_list()
    source = dict(families.select("family_id", "source").iter_rows())
    labels = {f: g["label"].to_list() for (f,), g in chosen.group_by("family_id")}
    for f in ids:
        tasks.append((f"{f}-p0", f, "none", "none", source[f], None, None))
    for channel in CHANNELS:
        shown = dict(zip(ids, derangement(ids, np.random.default_rng([seed, CHANNELS.index(channel)]))))
        for f in ids:
            s = source[f]
            tasks.append((f"{f}-{channel}-source", f, channel, "source", s, f, s))
            tasks.append((f"{f}-{channel}-shuffled", f, channel, "shuffled", s, shown[f], source[shown[f]]))
            for k in sorted(labels[f]):
                if k != s:
                    tasks.append((f"{f}-{channel}-cf-{k}", f, channel, "cf", k, f, k))
    return {
        "families": families,
        "candidates": pl.DataFrame(candidates, schema=["family_id", "label", "fragment", "molecule"], orient="row"),
        "properties": pl.DataFrame(properties, schema=["family_id", "label", "channel", "value"], orient="row"),
        "tasks": pl.DataFrame(tasks, schema={c: pl.String for c in ("task_id", "family_id", "channel", "condition",
                                                                     "target", "shown_family", "shown_label")},
                              orient="row"),
        "molecules": pl.DataFrame(provenance, schema=["family_id", "label", "qm9_index", "qm9_smiles",
                                                      "xtb_imaginary_modes"], orient="row"),
    }


PROVENANCE = pl.DataFrame(
    [
        ("dipole_norm", "dipole moment norm", "D", "QM9 (Ramakrishnan et al. 2014) via qm9pack", "B3LYP/6-31G(2df,p)"),
        ("gap", "HOMO-LUMO gap", "Hartree", "QM9 (Ramakrishnan et al. 2014) via qm9pack", "B3LYP/6-31G(2df,p)"),
        ("dipole_vector", "dipole vector, principal-axis frame, components >= 0", "D", "tblite",
         "GFN2-xTB at the GFN2-xTB minimum nearest the QM9 geometry"),
        ("ir", "harmonic frequencies and IR intensities", "cm-1, km/mol", "tblite",
         "GFN2-xTB; finite-difference Hessian and dipole derivatives"),
        ("raman", "harmonic frequencies and Raman activities", "cm-1, A^4/amu", "tblite",
         "GFN2-xTB; finite-difference polarizability derivatives"),
    ],
    schema=["channel", "quantity", "units", "source", "level_of_theory"], orient="row",
)


def write_benchmark(tables: dict[str, pl.DataFrame], out: Path) -> None:
    """Compressed Parquet, no statistics: small files that rebuild byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in {**tables, "provenance": PROVENANCE}.items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", compression_level=19, statistics=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/benchmark"))
    parser.add_argument("--validated", type=int, default=VALIDATED)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    molecules = qm9.qm9_frame()
    pools = qm9.family_pools(molecules)
    chosen = select_families(pools, molecules, validated=args.validated, seed=args.seed)
    print(f"{chosen['family_id'].n_unique()} families, {chosen['qm9_index'].n_unique()} molecules", flush=True)
    results = xtb_properties(molecules, sorted(chosen["qm9_index"].unique().to_list()))
    write_benchmark(assemble(chosen, molecules, results, seed=args.seed), args.out)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
