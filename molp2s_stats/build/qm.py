"""NMR shieldings and UV–Vis excitations with PySCF (build time only; the ``build`` extra).

    python -m molp2s_stats.build.qm [--benchmark data/benchmark] [--cache data/qm-cache]
                                    [--seed 20261201] [--families N] [--processes 2]

Level of theory, chosen to fit about 20 s a molecule on one core (measured on a
21-atom QM9 molecule, 98 basis functions: SCF 1 s, GIAO shieldings 12 s, the whole
CIS matrix built and diagonalised 7 s; the same ten states by Davidson took 55 s):

- restricted Hartree–Fock, 6-31G basis, density fitting for the SCF, at the QM9
  B3LYP/6-31G(2df,p) geometry (not re-optimised);
- NMR: GIAO isotropic shieldings of every nucleus (pyscf-properties ``nmr.RHF``);
- UV–Vis: singlet CIS (Tamm–Dancoff on HF), the full A matrix from
  ``pyscf.tdscf.rhf.get_ab`` diagonalised directly; the lowest ``STATES`` states with
  their length-gauge oscillator strengths (``TDA.oscillator_strength``).

CIS excitation energies are known to sit 1–2 eV above experiment; the distances
between candidates, which is what input validation and a model see, survive a shift.

One JSON file per QM9 molecule in the cache folder (git tracks it, so no session's
compute is lost); a molecule already cached is skipped, so the run resumes where it
stopped. Molecules are taken family by family in a seeded order of the benchmark's
families, so that what has been computed is complete families up to the last one or
two (two processes finish out of order); the benchmark build stops at the first gap.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per process: two processes on two cores

import argparse
import json
import multiprocessing as mp
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

SEED = 20261201
STATES = 12  # lowest excitations kept; the prompt and the UV–Vis distance use them all
BASIS = "6-31g"
LEVEL = "RHF/6-31G (density-fitted SCF), GIAO shieldings, CIS (TDA) singlets; QM9 B3LYP geometry"
HARTREE_IN_EV = 27.211386245988
CACHE = Path(__file__).resolve().parents[2] / "data" / "qm-cache"  # the checkout's data/, whatever the folder
SYMBOLS = {1: "H", 6: "C", 7: "N", 8: "O", 9: "F"}


def compute(numbers: list[int], positions: list[list[float]]) -> dict:
    """Shieldings (ppm, one per atom in the given order) and the lowest excitations of one molecule.

    Returns a dict: ``numbers``, ``positions`` (Å, as given), ``shieldings``,
    ``energies`` (eV), ``strengths``, ``homo_lumo_gap`` (Hartree, of this SCF), ``seconds``
    per step, ``level`` and the PySCF version.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyscf.prop announces its untested modules on import
        import pyscf
        from pyscf import gto, lib, scf, tdscf
        from pyscf.prop import nmr
    lib.num_threads(1)
    mol = gto.M(atom=[(SYMBOLS[z], p) for z, p in zip(numbers, positions)], basis=BASIS, unit="Angstrom", verbose=0)
    seconds = {}
    started = time.perf_counter()
    mf = scf.RHF(mol).density_fit()
    mf.conv_tol = 1e-10
    mf.kernel()
    if not mf.converged:
        raise RuntimeError("SCF did not converge")
    seconds["scf"] = time.perf_counter() - started

    started = time.perf_counter()
    giao = nmr.RHF(mf)
    giao.cphf = _induced_potential(mf)
    tensors = giao.kernel()
    shieldings = [float(np.trace(t) / 3) for t in tensors]
    seconds["nmr"] = time.perf_counter() - started

    started = time.perf_counter()
    a, _ = tdscf.rhf.get_ab(mf)
    nocc, nvir = a.shape[:2]
    energies, vectors = np.linalg.eigh(a.reshape(nocc * nvir, nocc * nvir))
    td = tdscf.TDA(mf)
    td.nstates = STATES
    td.e = energies[:STATES]
    # pyscf's RHF TDA convention: X normalised to 1/2 (the other half is the spin partner)
    td.xy = [(vectors[:, i].reshape(nocc, nvir) * np.sqrt(0.5), 0) for i in range(STATES)]
    strengths = td.oscillator_strength()
    seconds["cis"] = time.perf_counter() - started

    occupied = mf.mo_occ > 0
    gap = float(mf.mo_energy[~occupied].min() - mf.mo_energy[occupied].max())
    return {
        "numbers": list(numbers),
        "positions": positions,
        "shieldings": [round(s, 4) for s in shieldings],
        "energies": [round(float(e) * HARTREE_IN_EV, 5) for e in energies[:STATES]],
        "strengths": [float(f"{f:.6g}") for f in strengths],
        "homo_lumo_gap": round(gap, 6),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "level": LEVEL,
        "pyscf": pyscf.__version__,
    }


def _induced_potential(mf):
    """The CPHF induced potential for any number of field components.

    pyscf-properties' own ``gen_vind`` reshapes to exactly three, but the Krylov solver
    drops components that have converged and then passes one or two, which fails with a
    reshape error on some molecules. Same arithmetic, any count.
    """
    response = mf.gen_response(singlet=True, hermi=2)
    coefficients = mf.mo_coeff
    occupied = coefficients[:, mf.mo_occ > 0]
    nmo, nocc = coefficients.shape[1], occupied.shape[1]

    def induced(mo1: np.ndarray) -> np.ndarray:
        dm1 = np.asarray([coefficients @ (2 * x) @ occupied.T for x in mo1.reshape(-1, nmo, nocc)])
        dm1 = dm1 - dm1.transpose(0, 2, 1)
        return np.einsum("xpq,pi,qj->xij", response(dm1), coefficients, occupied).ravel()

    return induced


def _one(job: tuple[int, list[int], list[list[float]], str]) -> tuple[int, float]:
    index, numbers, positions, cache = job
    path = Path(cache) / f"{index}.json"
    started = time.perf_counter()
    result = compute(numbers, positions)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, sort_keys=True) + "\n")
    tmp.replace(path)  # atomic: a killed run never leaves half a file
    return index, time.perf_counter() - started


def family_order(family_ids: list[str], seed: int) -> list[str]:
    """The benchmark's families in the seeded order in which they get the new channels."""
    return [family_ids[i] for i in np.random.default_rng(seed).permutation(len(family_ids))]


def read_cache(cache: Path) -> dict[int, dict]:
    """Every cached molecule, by QM9 index."""
    return {int(p.stem): json.loads(p.read_text()) for p in sorted(cache.glob("*.json"))}


def jobs_in_order(benchmark: Path, seed: int, families: int | None) -> list[tuple[int, list[int], list]]:
    """(QM9 index, atomic numbers, positions) of every molecule, family by family in the seeded order."""
    from . import qm9

    molecules = pl.read_parquet(benchmark / "molecules.parquet")
    order = family_order(sorted(molecules["family_id"].unique().to_list()), seed)[:families]
    indices: list[int] = []
    for family in order:
        for index in molecules.filter(pl.col("family_id") == family).sort("label")["qm9_index"]:
            if index not in indices:
                indices.append(index)
    qm9_rows = {r["Index"]: r for r in qm9.qm9_frame().filter(pl.col("Index").is_in(indices)).iter_rows(named=True)}
    jobs = []
    for index in indices:
        row = qm9_rows[index]
        jobs.append((index, qm9.atomic_numbers(row), json.loads(row["XYZ_Ang"])))
    return jobs


def run(benchmark: Path, cache: Path, *, seed: int, families: int | None, processes: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    jobs = jobs_in_order(benchmark, seed, families)
    todo = [(i, n, p, str(cache)) for i, n, p in jobs if not (cache / f"{i}.json").exists()]
    print(
        f"{len(jobs)} molecules, {len(jobs) - len(todo)} cached, {len(todo)} to compute on {processes} processes",
        flush=True,
    )
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

    started = time.perf_counter()
    # a bar with the time left on a terminal; one line per molecule in a log file
    bar = Progress(
        "PySCF",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        "left",
        TimeRemainingColumn(),
        disable=not sys.stderr.isatty(),
    )
    with bar, mp.get_context("spawn").Pool(processes) as pool:
        task = bar.add_task("molecules", total=len(todo))
        for done, (index, seconds) in enumerate(pool.imap(_one, todo), start=1):
            bar.advance(task)
            if not sys.stderr.isatty():
                elapsed = time.perf_counter() - started
                eta = elapsed / done * (len(todo) - done)
                print(
                    f"[{done}/{len(todo)}] QM9 {index}: {seconds:.0f} s; elapsed {elapsed / 60:.0f} min, "
                    f"ETA {eta / 60:.0f} min",
                    flush=True,
                )


def checks(cache: dict[int, dict]) -> dict[str, float]:
    """What the data card reports: timings per step, the SCF gap against QM9's B3LYP gap, and
    ¹³C shieldings of sp³ against sp² carbons (sp² carbons are deshielded: lower shielding)."""
    from rdkit import Chem
    from scipy import stats

    from . import qm9

    indices = sorted(cache)
    qm9_rows = qm9.qm9_frame().filter(pl.col("Index").is_in(indices)).sort("Index")
    gaps = dict(qm9_rows.select("Index", "HOMO_LUMO_gap_au").iter_rows())
    smiles = dict(qm9_rows.select("Index", "SMILES").iter_rows())
    ours = np.array([cache[i]["homo_lumo_gap"] for i in indices])
    theirs = np.array([gaps[i] for i in indices])
    by_hybridisation: dict[str, list[float]] = {"SP3": [], "SP2": [], "SP": []}
    for index in indices:
        mol = Chem.AddHs(Chem.MolFromSmiles(smiles[index]))
        order = atom_order(mol, cache[index]["numbers"], cache[index]["positions"])
        for atom in mol.GetAtoms():
            kind = str(atom.GetHybridization())
            if atom.GetAtomicNum() == 6 and kind in by_hybridisation:
                by_hybridisation[kind].append(cache[index]["shieldings"][order[atom.GetIdx()]])
    seconds = {step: float(np.median([cache[i]["seconds"][step] for i in indices])) for step in ("scf", "nmr", "cis")}
    return {
        "molecules": len(indices),
        **{f"median_seconds_{k}": v for k, v in seconds.items()},
        "gap_pearson_r": float(stats.pearsonr(ours, theirs).statistic),
        "gap_spearman_rho": float(stats.spearmanr(ours, theirs).statistic),
        "gap_mean_ratio": float(np.mean(ours / theirs)),
        **{f"c13_{k.lower()}_median_ppm": float(np.median(v)) for k, v in by_hybridisation.items() if v},
        **{f"c13_{k.lower()}_count": len(v) for k, v in by_hybridisation.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", type=Path, default=Path("data/benchmark"))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--families", type=int, default=None, help="only the first N families of the order")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="print the data card's checks of the cache and stop")
    args = parser.parse_args(argv)
    if args.check:
        for key, value in checks(read_cache(args.cache)).items():
            print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")
        return
    run(args.benchmark, args.cache, seed=args.seed, families=args.families, processes=args.processes)


# ------------------------------------------------------------------ channel values

NMR_CHANNELS = ("h1_peaks", "h1_peaks_int", "h1_atomwise", "c13_peaks", "c13_peaks_deg", "c13_atomwise")
QM_CHANNELS = ("uvvis", *NMR_CHANNELS)
_NUCLEUS = {"h1": 1, "c13": 6}


def completed_molecule(scaffold: str, fragment: str):
    """The scaffold joined to the fragment, with explicit hydrogens, and where each scaffold atom went.

    Returns ``(mol, position)``: ``position[i]`` is the index in ``mol`` of atom ``i`` of
    ``Chem.MolFromSmiles(scaffold)`` (the ``[*]`` atom counted, and absent from the map).
    Scaffold atoms come first, fragment atoms next, hydrogens last.
    """
    from rdkit import Chem

    s, f = Chem.MolFromSmiles(scaffold), Chem.MolFromSmiles(fragment)
    if s is None or f is None:
        raise ValueError(f"invalid SMILES: {scaffold!r} or {fragment!r}")
    dummies = [next(a.GetIdx() for a in m.GetAtoms() if a.GetAtomicNum() == 0) for m in (s, f)]
    anchors = [m.GetAtomWithIdx(d).GetNeighbors()[0].GetIdx() for m, d in zip((s, f), dummies)]
    combined = Chem.RWMol(Chem.CombineMols(s, f))
    offset = s.GetNumAtoms()
    combined.AddBond(anchors[0], anchors[1] + offset, Chem.BondType.SINGLE)
    for index in sorted((dummies[0], dummies[1] + offset), reverse=True):
        combined.RemoveAtom(index)
    mol = combined.GetMol()
    Chem.SanitizeMol(mol)
    position = {i: i - (i > dummies[0]) for i in range(offset) if i != dummies[0]}
    return Chem.AddHs(mol), position


def atom_order(mol, numbers: list[int], positions: list[list[float]]) -> list[int]:
    """For each atom of ``mol``, its index in the QM9 geometry (matched by elements and bonds)."""
    from rdkit import Chem
    from rdkit.Chem import rdDetermineBonds

    # fixed-point coordinates: RDKit's XYZ reader refuses exponents such as 8.6e-05
    block = f"{len(numbers)}\n\n" + "\n".join(
        f"{SYMBOLS[z]} {x:.8f} {y:.8f} {w:.8f}" for z, (x, y, w) in zip(numbers, positions)
    )
    geometry = Chem.MolFromXYZBlock(block)
    if geometry is None:
        raise ValueError("RDKit could not read the QM9 geometry")
    rdDetermineBonds.DetermineConnectivity(geometry)
    query = Chem.Mol(mol)
    for atom in query.GetAtoms():
        atom.SetFormalCharge(0)  # the geometry's atoms carry no charges (zwitterions: N+ and O-)
    params = Chem.AdjustQueryParameters.NoAdjustments()
    params.makeBondsGeneric = True  # the geometry has connectivity, not bond orders
    match = geometry.GetSubstructMatch(Chem.AdjustQueryProperties(query, params))
    if len(match) != mol.GetNumAtoms() or geometry.GetNumAtoms() != mol.GetNumAtoms():
        raise ValueError("the QM9 geometry does not match the completed molecule")
    return list(match)


def symmetry_classes(mol) -> list[int]:
    """A class per atom: atoms that the molecule's automorphisms map onto each other share one.

    The automorphisms of the heavy-atom graph (elements, bond orders, hydrogen counts);
    a hydrogen takes its heavy atom's class. RDKit's canonical ranks with ties kept are
    close to this but can tie atoms that are not equivalent (the chain CH₂ of
    C1CC1CCC1CC1 ranks with the ring CH₂s).
    """
    from rdkit import Chem

    heavy = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]
    skeleton = Chem.RemoveHs(mol)  # heavy atoms keep their order, hydrogens come last in mol
    counts = [a.GetTotalNumHs() for a in skeleton.GetAtoms()]
    parent = list(range(skeleton.GetNumAtoms()))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for match in skeleton.GetSubstructMatches(skeleton, uniquify=False, maxMatches=100_000):
        if all(counts[i] == counts[j] for i, j in enumerate(match)):
            for i, j in enumerate(match):
                parent[root(i)] = root(j)
    classes = [0] * mol.GetNumAtoms()
    for position, index in enumerate(heavy):
        classes[index] = root(position)
    for atom in mol.GetAtoms():
        if atom.GetAtomicNum() == 1:
            classes[atom.GetIdx()] = classes[atom.GetNeighbors()[0].GetIdx()] + len(heavy)  # apart from heavy atoms
    return classes


def nmr_values(scaffold: str, fragment: str, entry: dict) -> dict[str, dict]:
    """The six NMR channel values of one candidate from its cached shieldings.

    Scaffold nuclei only: the scaffold's carbons, and the hydrogens bonded to scaffold
    heavy atoms, as they sit in the completed molecule. Peaks average the shieldings of
    symmetry-equivalent nuclei (``symmetry_classes`` of the completed molecule), one value
    per peak, sorted, with their counts; atomwise values keep one
    shielding per nucleus with the scaffold atom index (for ¹H the heavy atom it is
    bonded to). A nucleus with no scaffold nucleus (no hydrogen, say) gets no value.
    """

    mol, position = completed_molecule(scaffold, fragment)
    order = atom_order(mol, entry["numbers"], entry["positions"])
    ranks = symmetry_classes(mol)
    shielding = [entry["shieldings"][order[i]] for i in range(mol.GetNumAtoms())]
    values = {}
    for nucleus, z in _NUCLEUS.items():
        nuclei = []  # (scaffold atom index, index in mol)
        for scaffold_index, index in sorted(position.items()):
            atom = mol.GetAtomWithIdx(index)
            if z == 6 and atom.GetAtomicNum() == 6:
                nuclei.append((scaffold_index, index))
            elif z == 1:
                nuclei += [(scaffold_index, h.GetIdx()) for h in atom.GetNeighbors() if h.GetAtomicNum() == 1]
        if not nuclei:
            continue
        atomwise = sorted((a, round(shielding[i], 3)) for a, i in nuclei)
        classes: dict[int, list[float]] = {}
        for _, index in nuclei:
            classes.setdefault(ranks[index], []).append(shielding[index])
        peaks = sorted((round(float(np.mean(v)), 3), len(v)) for v in classes.values())
        count_key = "h1_peaks_int" if nucleus == "h1" else "c13_peaks_deg"
        values[f"{nucleus}_peaks"] = {"shieldings": [p for p, _ in peaks]}
        values[count_key] = {"shieldings": [p for p, _ in peaks], "counts": [c for _, c in peaks]}
        values[f"{nucleus}_atomwise"] = {"shieldings": [s for _, s in atomwise], "atoms": [a for a, _ in atomwise]}
    return values


def uvvis_value(entry: dict) -> dict | None:
    """Energies (eV) and oscillator strengths of the cached excitations; None if all are dark."""
    strengths = [float(f"{f:.4g}") for f in entry["strengths"]]
    if not any(f > 0 for f in strengths):
        return None
    return {"energies": [round(e, 4) for e in entry["energies"]], "strengths": strengths}


if __name__ == "__main__":
    sys.exit(main())
