"""Task families from QM9 molecules (build time only; needs the ``build`` extra).

QM9 (Ramakrishnan et al., Sci. Data 1, 140022, 2014; 130,831 molecules with
B3LYP/6-31G(2df,p) geometries and properties) comes from the ``qm9pack`` wheel.
Each molecule is cut at every acyclic single bond between heavy atoms into two
pieces, each capped with one ``[*]``; either piece can be the masked part
(fragment, ≥ 3 heavy atoms) and the other the scaffold (≥ 4). Cuts are grouped by
(scaffold, fragment formula): a group whose isomeric fragments number at least
four is a family pool, and every candidate in it completes a real QM9 molecule,
so every candidate has DFT labels.
"""

from __future__ import annotations

import glob
import multiprocessing as mp
import os
from collections import defaultdict
from dataclasses import dataclass

import polars as pl
from rdkit import Chem, RDLogger
from rdkit.Chem import rdMolDescriptors

RDLogger.DisableLog("rdApp.*")

# Heavy atoms, not counting the attachment point. Masked parts of two heavy atoms have
# few isomers to tell apart; scaffolds below four leave little molecule to reason from.
MIN_FRAGMENT_HEAVY_ATOMS = 3
MIN_SCAFFOLD_HEAVY_ATOMS = 4
MIN_POOL = 4


ELEMENTS = {"H": 1, "C": 6, "N": 7, "O": 8, "F": 9}


def atomic_numbers(row: dict) -> list[int]:
    """The atomic numbers of a QM9 row, from its ``Elements`` column (a list written as text)."""
    return [ELEMENTS[e.strip("'\" ")] for e in row["Elements"].strip("[]").split(",")]


def qm9_frame() -> pl.DataFrame:
    """The QM9 table shipped inside the qm9pack wheel: one row per molecule."""
    import qm9pack  # build-time dependency only

    folder = os.path.join(os.path.dirname(qm9pack.__file__), "data")
    parts = sorted(glob.glob(os.path.join(folder, "qm9_part*.csv")))
    if not parts:
        raise RuntimeError(f"no QM9 tables in {folder}")
    return pl.concat([pl.read_csv(p) for p in parts]).sort("Index")


def canonical(mol: Chem.Mol) -> str:
    """Canonical isomeric SMILES with every attachment point spelled ``[*]``."""
    return Chem.MolToSmiles(mol).replace("*", "[*]").replace("[[*]]", "[*]")


@dataclass(frozen=True)
class Cut:
    scaffold: str
    fragment: str
    formula: str
    qm9_index: int


def cuts(smiles: str, qm9_index: int) -> list[Cut]:
    """Every (scaffold, fragment) split of one molecule at an acyclic single bond."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return []
    out = []
    for bond in mol.GetBonds():
        if bond.IsInRing() or bond.GetBondType() != Chem.BondType.SINGLE:
            continue
        broken = Chem.FragmentOnBonds(mol, [bond.GetIdx()], addDummies=True, dummyLabels=[(0, 0)])
        pieces = Chem.GetMolFrags(broken, asMols=True, sanitizeFrags=True)
        if len(pieces) != 2:
            continue
        for scaffold, fragment in (pieces, pieces[::-1]):
            # GetNumHeavyAtoms does not count the dummy atom
            if (
                fragment.GetNumHeavyAtoms() < MIN_FRAGMENT_HEAVY_ATOMS
                or scaffold.GetNumHeavyAtoms() < MIN_SCAFFOLD_HEAVY_ATOMS
            ):
                continue
            out.append(
                Cut(canonical(scaffold), canonical(fragment), rdMolDescriptors.CalcMolFormula(fragment), qm9_index)
            )
    return out


def _cuts_batch(rows: list[tuple[str, int]]) -> list[Cut]:
    return [c for smiles, index in rows for c in cuts(smiles, index)]


def family_pools(molecules: pl.DataFrame, *, processes: int = 2) -> pl.DataFrame:
    """One row per pool member: ``pool_id`` (scaffold|formula), scaffold, fragment, qm9_index.

    Only pools with at least ``MIN_POOL`` distinct fragments, each completing a distinct
    molecule, are kept; when several QM9 entries give the same (scaffold, fragment), the
    lowest index is kept.
    """
    rows = list(molecules.select("SMILES", "Index").iter_rows())
    chunks = [rows[i : i + 2000] for i in range(0, len(rows), 2000)]
    if processes > 1:
        with mp.get_context("spawn").Pool(processes) as pool:
            results = pool.map(_cuts_batch, chunks)
    else:
        results = [_cuts_batch(chunk) for chunk in chunks]
    # (scaffold, formula) -> molecule -> its fragment. Keyed by molecule: a symmetric
    # scaffold can complete the same molecule from two fragment spellings, which would
    # make two candidates one molecule. The lowest fragment string wins, for determinism.
    members: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for batch in results:
        for c in batch:
            group = members[(c.scaffold, c.formula)]
            if c.qm9_index not in group or c.fragment < group[c.qm9_index]:
                group[c.qm9_index] = c.fragment
    table = []
    for (scaffold, formula), group in members.items():
        by_fragment = {}
        for index, fragment in sorted(group.items()):
            by_fragment.setdefault(fragment, index)  # one molecule per fragment (lowest index)
        if len(by_fragment) >= MIN_POOL:
            table += [(f"{scaffold}|{formula}", scaffold, formula, f, i) for f, i in sorted(by_fragment.items())]
    return pl.DataFrame(table, schema=["pool_id", "scaffold", "formula", "fragment", "qm9_index"], orient="row")
