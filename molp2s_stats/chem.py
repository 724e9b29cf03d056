"""RDKit helpers: validating SMILES and completing a scaffold with a fragment."""

from __future__ import annotations

from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")


def is_valid_smiles(smiles: str) -> bool:
    """True when RDKit can read ``smiles``."""
    return isinstance(smiles, str) and bool(smiles) and Chem.MolFromSmiles(smiles) is not None


def attachment_points(smiles: str) -> int:
    """Number of dummy atoms (``*``, ``[*]``, ``[1*]``, ``[*:1]``) in ``smiles``."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError(f"invalid SMILES: {smiles!r}")
    return sum(1 for atom in mol.GetAtoms() if atom.GetAtomicNum() == 0)


def complete(scaffold: str, fragment: str) -> str:
    """Join a scaffold and a fragment, each with one attachment point, into a molecule.

    >>> complete("c1ccccc1[*]", "[*]C(C)C")
    'CC(C)c1ccccc1'
    """
    parts = []
    for smiles in (scaffold, fragment):
        mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            raise ValueError(f"invalid SMILES: {smiles!r}")
        dummies = [a for a in mol.GetAtoms() if a.GetAtomicNum() == 0]
        if len(dummies) != 1:
            raise ValueError(f"{smiles!r} needs exactly one attachment point, has {len(dummies)}")
        # molzip bonds the atoms that carry the same atom-map number on their dummies.
        dummies[0].SetIsotope(0)
        dummies[0].SetAtomMapNum(1)
        parts.append(mol)
    joined = Chem.molzip(parts[0], parts[1])
    return Chem.MolToSmiles(joined)
