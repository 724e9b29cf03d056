"""The QM9 family builder and the task generator, on molecules small enough to check by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rdkit import Chem

from molp2s_stats import chem
from molp2s_stats.build import qm9
from molp2s_stats.build.benchmark import derangement


def canonical(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def test_cuts_of_pentanamide():
    # CCCCC(N)=O has 7 heavy atoms and four acyclic single bonds between them. A cut is
    # kept when the fragment has >= 3 heavy atoms and the scaffold >= 4:
    #   CCC|CC(N)=O   fragment [*]CCC (3) on scaffold [*]CC(N)=O (4)   kept
    #   CCCC|C(N)=O   fragment [*]C(N)=O (3) on scaffold [*]CCCC (4)   kept
    #   (the reverse sides, and C|CCCC(N)=O, CC|CCC(N)=O, C(=O)|N, leave a side too small)
    cuts = qm9.cuts("CCCCC(N)=O", 7)
    assert {(c.scaffold, c.fragment, c.formula) for c in cuts} == {
        ("[*]CC(N)=O", "[*]CCC", "C3H7*"),
        ("[*]CCCC", "[*]C(N)=O", "CH2*NO"),
    }
    for cut in cuts:
        assert canonical(chem.complete(cut.scaffold, cut.fragment)) == canonical("CCCCC(N)=O")
        assert cut.qm9_index == 7


def test_ring_bonds_and_double_bonds_are_never_cut():
    # cyclohexanone: every single bond is in the ring, the C=O is double
    assert qm9.cuts("O=C1CCCCC1", 1) == []


def test_pools_group_isomeric_fragments_on_one_scaffold():
    # The four butyl isomers on the scaffold [*]CC(N)=O: one pool of four, every member a
    # distinct molecule, all with the formula C4H9*.
    smiles = ["CCCCCC(N)=O", "CC(C)CCC(N)=O", "CCC(C)CC(N)=O", "CC(C)(C)CC(N)=O"]
    molecules = pl.DataFrame({"SMILES": smiles, "Index": [1, 2, 3, 4]})
    pools = qm9.family_pools(molecules, processes=1)
    pool = pools.filter(pl.col("scaffold") == "[*]CC(N)=O")
    assert pool.height == 4
    assert pool["formula"].unique().to_list() == ["C4H9*"]
    assert sorted(pool["qm9_index"].to_list()) == [1, 2, 3, 4]
    for row in pool.iter_rows(named=True):
        assert canonical(chem.complete(row["scaffold"], row["fragment"])) == canonical(smiles[row["qm9_index"] - 1])


def test_one_molecule_is_never_two_candidates():
    # Ethers and alcohols of one formula on symmetric and asymmetric scaffolds: a molecule
    # reached through two fragment spellings must still count once in its pool.
    smiles = [
        "CCOCCC(N)=O",
        "COCCCC(N)=O",
        "CCCOCC(N)=O",
        "CC(C)OCC(N)=O",
        "COC(C)CC(N)=O",
        "OCCCCC(N)=O",
        "CC(O)CCC(N)=O",
    ]
    molecules = pl.DataFrame({"SMILES": smiles, "Index": list(range(1, len(smiles) + 1))})
    pools = qm9.family_pools(molecules, processes=1)
    assert pools.height > 0
    per_pool = pools.group_by("pool_id").agg(pl.col("qm9_index").n_unique().alias("molecules"), pl.len())
    assert (per_pool["molecules"] == per_pool["len"]).all()


@given(st.lists(st.text(min_size=1, max_size=4), min_size=2, max_size=40, unique=True), st.integers(0, 2**32 - 1))
def test_derangement_never_maps_a_family_to_itself(ids, seed):
    shown = derangement(ids, np.random.default_rng(seed))
    assert sorted(shown) == sorted(ids)
    assert all(a != b for a, b in zip(ids, shown))


def test_derangement_needs_two_families():
    with pytest.raises(ValueError):
        derangement(["only"], np.random.default_rng(0))
