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
families, so that whatever has been computed is a set of complete families.
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
CACHE = Path("data/qm-cache")
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
    mol = gto.M(atom=[(SYMBOLS[z], p) for z, p in zip(numbers, positions)], basis=BASIS, unit="Angstrom",
                verbose=0)
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
    from .benchmark import ELEMENTS

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
        numbers = [ELEMENTS[e.strip("'\" ")] for e in row["Elements"].strip("[]").split(",")]
        jobs.append((index, numbers, json.loads(row["XYZ_Ang"])))
    return jobs


def run(benchmark: Path, cache: Path, *, seed: int, families: int | None, processes: int) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    jobs = jobs_in_order(benchmark, seed, families)
    todo = [(i, n, p, str(cache)) for i, n, p in jobs if not (cache / f"{i}.json").exists()]
    print(f"{len(jobs)} molecules, {len(jobs) - len(todo)} cached, {len(todo)} to compute "
          f"on {processes} processes", flush=True)
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(processes) as pool:
        for done, (index, seconds) in enumerate(pool.imap(_one, todo), start=1):
            elapsed = time.perf_counter() - started
            eta = elapsed / done * (len(todo) - done)
            print(f"[{done}/{len(todo)}] QM9 {index}: {seconds:.0f} s; elapsed {elapsed / 60:.0f} min, "
                  f"ETA {eta / 60:.0f} min", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", type=Path, default=Path("data/benchmark"))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--families", type=int, default=None, help="only the first N families of the order")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    run(args.benchmark, args.cache, seed=args.seed, families=args.families, processes=args.processes)


if __name__ == "__main__":
    sys.exit(main())
