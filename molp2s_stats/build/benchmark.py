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
import sys
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
    return pl.DataFrame(
        rows, schema=["family_id", "label", "scaffold", "fragment", "qm9_index", "is_source"], orient="row"
    ).sort("family_id", "label")


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
        jobs.append((row["Index"], qm9.atomic_numbers(row), json.loads(row["XYZ_Ang"])))
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


def assemble(
    chosen: pl.DataFrame, molecules: pl.DataFrame, xtb_results: dict[int, dict], *, seed: int
) -> dict[str, pl.DataFrame]:
    """The benchmark tables (families, candidates, properties, tasks), plus ``molecules`` (provenance per candidate)."""
    dft = {
        row["Index"]: row
        for row in molecules.filter(pl.col("Index").is_in(chosen["qm9_index"].implode()))
        .select("Index", "SMILES", "Dipole_debye", "HOMO_LUMO_gap_au")
        .iter_rows(named=True)
    }
    families = (
        chosen.filter(pl.col("is_source"))
        .select("family_id", "scaffold", pl.col("label").alias("source"))
        .sort("family_id")
    )
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
            "ir": {
                "frequencies": [round(f, 1) for f in xtb["frequencies"]],
                "intensities": [_sig(i) for i in xtb["ir_intensities"]],
            },
            "raman": {
                "frequencies": [round(f, 1) for f in xtb["frequencies"]],
                "intensities": [_sig(i) for i in xtb["raman_activities"]],
            },
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
        "tasks": pl.DataFrame(
            tasks,
            schema={
                c: pl.String
                for c in ("task_id", "family_id", "channel", "condition", "target", "shown_family", "shown_label")
            },
            orient="row",
        ),
        "molecules": pl.DataFrame(
            provenance, schema=["family_id", "label", "qm9_index", "qm9_smiles", "xtb_imaginary_modes"], orient="row"
        ),
    }


PROVENANCE = pl.DataFrame(
    [
        ("dipole_norm", "dipole moment norm", "D", "QM9 (Ramakrishnan et al. 2014) via qm9pack", "B3LYP/6-31G(2df,p)"),
        ("gap", "HOMO-LUMO gap", "Hartree", "QM9 (Ramakrishnan et al. 2014) via qm9pack", "B3LYP/6-31G(2df,p)"),
        (
            "dipole_vector",
            "dipole vector, principal-axis frame, components >= 0",
            "D",
            "tblite",
            "GFN2-xTB at the GFN2-xTB minimum nearest the QM9 geometry",
        ),
        (
            "ir",
            "harmonic frequencies and IR intensities",
            "cm-1, km/mol",
            "tblite",
            "GFN2-xTB; finite-difference Hessian and dipole derivatives",
        ),
        (
            "raman",
            "harmonic frequencies and Raman activities",
            "cm-1, A^4/amu",
            "tblite",
            "GFN2-xTB; finite-difference polarizability derivatives",
        ),
    ],
    schema=["channel", "quantity", "units", "source", "level_of_theory"],
    orient="row",
)


QM_PROVENANCE = [
    (
        "uvvis",
        "lowest singlet excitations: energies and oscillator strengths",
        "eV, dimensionless",
        "PySCF",
        "CIS (TDA on RHF)/6-31G at the QM9 geometry",
    ),
    *[
        (
            c,
            f"GIAO isotropic shieldings of the scaffold's {'1H' if c.startswith('h1') else '13C'} nuclei"
            + {
                "peaks": ", one per symmetry class",
                "peaks_int": ", one per class with its nuclei",
                "peaks_deg": ", one per class with its carbons",
                "atomwise": ", one per nucleus with its scaffold atom",
            }[c.split("_", 1)[1]],
            "ppm",
            "PySCF with pyscf-properties",
            "RHF/6-31G GIAO at the QM9 geometry",
        )
        for c in ("h1_peaks", "h1_peaks_int", "h1_atomwise", "c13_peaks", "c13_peaks_deg", "c13_atomwise")
    ],
]
QM_TARGET = 136  # families per new channel after input validation: the paper's cohort size


def _validated(values: dict[str, dict[str, object]], channel: str, cutoff: float, distance: str) -> bool:
    """Every pair of the family's candidates at least the cutoff apart in the channel.

    The rule of sql/marts/pair_separation.sql (same kernel, same 1e-9 relative slack), applied
    here before there is a database, so the build knows when the target is reached.
    """
    from ..ingest.distances import family_pair_distances, parse_value

    parsed = {label: parse_value(distance, v) for label, v in values.items()}
    return all(d >= cutoff * (1 - 1e-9) for _, _, d in family_pair_distances(distance, parsed))


def _grouped_derangement(groups: dict[object, list[str]], rng: np.random.Generator) -> dict[str, str]:
    """A derangement within each group (groups in sorted order, singletons left out)."""
    shown = {}
    for key in sorted(groups, key=lambda k: tuple(sorted(k)) if isinstance(k, frozenset) else (k,)):
        members = sorted(groups[key])
        if len(members) >= 2:
            shown.update(zip(members, derangement(members, rng)))
    return shown


def add_qm_channels(
    tables: dict[str, pl.DataFrame],
    cache: dict[int, dict],
    *,
    seed: int = SEED,
    order_seed: int | None = None,
    target: int = QM_TARGET,
) -> tuple[dict[str, pl.DataFrame], dict]:
    """The benchmark with UV–Vis and the six NMR channels for a seeded subset of families.

    Families are taken in the seeded order of ``qm.family_order`` while every one of their
    candidates is in ``cache``, until each new channel has ``target`` input-validated
    families (or the cache runs out). A family gets a channel's tasks only when every
    candidate has a value in it (a scaffold with no hydrogen has no ¹H channels); the
    ``nmr_bundle`` when it has all six NMR channels. Shuffled tasks are a seeded
    derangement among the families with the channel; for the ``all`` bundle, among the
    families with the same channels, so a shuffled prompt shows the same headings as the
    source prompt. Earlier runs' rows for these channels are replaced, so the function
    can be run again as the cache grows; the other channels' tasks stay as they are.

    Returns the tables and a summary (families taken, validated per channel).
    """
    from ..ingest.benchmark import DEFAULT_CHANNELS
    from . import qm

    order_seed = qm.SEED if order_seed is None else order_seed
    new = set(qm.QM_CHANNELS) | {"nmr_bundle"}
    channel_table = pl.read_csv(DEFAULT_CHANNELS).filter(pl.col("channel").is_in(list(qm.QM_CHANNELS)))
    rules = {r["channel"]: (r["distance"], r["cutoff"]) for r in channel_table.iter_rows(named=True)}
    families, candidates, molecules = tables["families"], tables["candidates"], tables["molecules"]
    scaffold = dict(families.select("family_id", "scaffold").iter_rows())
    members = molecules.join(candidates, on=["family_id", "label"]).sort("family_id", "label")
    by_family = {f: g for (f,), g in members.group_by("family_id")}

    chosen, values, validated = [], {}, {c: 0 for c in qm.QM_CHANNELS}
    for family in qm.family_order(sorted(by_family), order_seed):
        if min(validated.values()) >= target:
            break
        group = by_family[family]
        if not all(i in cache for i in group["qm9_index"]):
            break  # the cache grows family by family in this order: stop at the first gap
        per_label = {}
        for row in group.iter_rows(named=True):
            entry = cache[row["qm9_index"]]
            try:
                found = qm.nmr_values(scaffold[family], row["fragment"], entry)
            except ValueError as exc:
                raise ValueError(f"family {family} candidate {row['label']} (QM9 {row['qm9_index']}): {exc}") from exc
            if (uv := qm.uvvis_value(entry)) is not None:
                found["uvvis"] = uv
            per_label[row["label"]] = found
        chosen.append(family)
        for channel in qm.QM_CHANNELS:
            if all(channel in v for v in per_label.values()):
                values[(family, channel)] = {label: v[channel] for label, v in per_label.items()}
                validated[channel] += _validated(
                    values[(family, channel)], channel, rules[channel][1], rules[channel][0]
                )

    properties = tables["properties"].filter(~pl.col("channel").is_in(list(new)))
    rows = [
        (f, label, channel, json.dumps(value))
        for (f, channel), by_label in sorted(values.items())
        for label, value in sorted(by_label.items())
    ]
    properties = pl.concat([properties, pl.DataFrame(rows, schema=properties.schema, orient="row")])

    tasks = tables["tasks"].filter(~pl.col("channel").is_in(list(new)))
    source = dict(families.select("family_id", "source").iter_rows())
    labels = {f: sorted(g["label"]) for f, g in by_family.items()}
    has = {f: {c for c in qm.QM_CHANNELS if (f, c) in values} for f in by_family}
    new_tasks = []
    for position, channel in enumerate((*qm.QM_CHANNELS, "nmr_bundle")):
        wanted = set(qm.NMR_CHANNELS) if channel == "nmr_bundle" else {channel}
        with_channel = sorted(f for f in by_family if wanted <= has[f])
        shown = _grouped_derangement({0: with_channel}, np.random.default_rng([seed, 100 + position]))
        for f in with_channel:
            s = source[f]
            new_tasks.append((f"{f}-{channel}-source", f, channel, "source", s, f, s))
            if f in shown:
                new_tasks.append((f"{f}-{channel}-shuffled", f, channel, "shuffled", s, shown[f], source[shown[f]]))
            new_tasks += [(f"{f}-{channel}-cf-{k}", f, channel, "cf", k, f, k) for k in labels[f] if k != s]
    # the all bundle: shuffled within families that have the same channels; its shuffled
    # tasks are made anew each run (a family alone in its group has none), the rest stay
    with_all = set(tasks.filter((pl.col("channel") == "all") & (pl.col("condition") == "source"))["family_id"])
    groups: dict[frozenset, list[str]] = {}
    for f in sorted(with_all):
        groups.setdefault(frozenset(has[f]), []).append(f)
    shown_all = _grouped_derangement(groups, np.random.default_rng([seed, CHANNELS.index("all")]))
    tasks = tasks.filter(~((pl.col("channel") == "all") & (pl.col("condition") == "shuffled")))
    new_tasks += [(f"{f}-all-shuffled", f, "all", "shuffled", source[f], g, source[g]) for f, g in shown_all.items()]
    tasks = pl.concat([tasks, pl.DataFrame(new_tasks, schema=tasks.schema, orient="row")]).sort("task_id")
    summary = {
        "families": len(chosen),
        "validated": validated,
        "with_channel": {c: sum(c in v for v in has.values()) for c in qm.QM_CHANNELS},
    }
    return {**tables, "properties": properties.sort("family_id", "label", "channel"), "tasks": tasks}, summary


def read_built(folder: Path) -> dict[str, pl.DataFrame]:
    """A built benchmark folder's tables (those ``write_benchmark`` writes, provenance aside)."""
    return {p.stem: pl.read_parquet(p) for p in sorted(Path(folder).glob("*.parquet")) if p.stem != "provenance"}


def write_benchmark(tables: dict[str, pl.DataFrame], out: Path) -> None:
    """Compressed Parquet, no statistics: small files that rebuild byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    provenance = PROVENANCE
    if tables["properties"]["channel"].is_in([row[0] for row in QM_PROVENANCE]).any():
        provenance = pl.concat([PROVENANCE, pl.DataFrame(QM_PROVENANCE, schema=PROVENANCE.schema, orient="row")])
    for name, frame in {**tables, "provenance": provenance}.items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", compression_level=19, statistics=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/benchmark"))
    parser.add_argument("--validated", type=int, default=VALIDATED)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--qm-only",
        action="store_true",
        help="only (re)add the PySCF channels from data/qm-cache to the benchmark in --out",
    )
    args = parser.parse_args(argv)
    if args.qm_only:
        _write_with_qm(read_built(args.out), args.out, seed=args.seed)
        return
    molecules = qm9.qm9_frame()
    pools = qm9.family_pools(molecules)
    chosen = select_families(pools, molecules, validated=args.validated, seed=args.seed)
    print(f"{chosen['family_id'].n_unique()} families, {chosen['qm9_index'].n_unique()} molecules", flush=True)
    results = xtb_properties(molecules, sorted(chosen["qm9_index"].unique().to_list()))
    _write_with_qm(assemble(chosen, molecules, results, seed=args.seed), args.out, seed=args.seed)


def _write_with_qm(tables: dict[str, pl.DataFrame], out: Path, *, seed: int) -> None:
    from . import qm

    cache = qm.read_cache(qm.CACHE)
    if cache:
        tables, summary = add_qm_channels(tables, cache, seed=seed)
        print(
            f"PySCF channels for {summary['families']} families; input-validated per channel: {summary['validated']}",
            flush=True,
        )
        short = {c: n for c, n in summary["validated"].items() if n < QM_TARGET}
        if short:
            print(
                f"warning: below {QM_TARGET} input-validated families in {short}: the cache does not cover "
                "enough families yet (python -m molp2s_stats.build.qm resumes it)",
                file=sys.stderr,
                flush=True,
            )
    write_benchmark(tables, out)
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
