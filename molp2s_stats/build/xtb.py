"""GFN2-xTB properties with tblite (build time only): dipole vector, IR and Raman sticks.

Level of theory: GFN2-xTB (tblite), gas phase, neutral closed shell. The QM9
B3LYP geometry is re-optimised with GFN2-xTB (L-BFGS on the xTB energy and
gradient) so that the harmonic analysis is done at a stationary point of the same
method. Harmonic frequencies come from a central-difference Hessian of analytic
gradients; IR intensities from dipole derivatives and Raman activities from
polarizability derivatives along the normal modes, the polarizability itself a
central difference of the dipole in a uniform electric field. Translations and
rotations are projected out before diagonalising.

Units: dipole in debye; frequencies in cm⁻¹; IR intensities in km/mol; Raman
activities in Å⁴/amu.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per process: reproducible sums

import numpy as np
from scipy.optimize import minimize

BOHR_IN_ANGSTROM = 0.52917721067
DEBYE_PER_AU = 2.541746473  # e·bohr in debye
AMU_IN_ME = 1822.888486209
HARTREE_IN_WAVENUMBER = 219474.6313632
IR_KM_PER_MOL = 974.8801118  # (e²/amu) → km/mol for |dμ/dQ|² in e/√amu
DISPLACEMENT = 0.005  # bohr
FIELD = 0.001  # atomic units
MASSES = {1: 1.00782503223, 6: 12.0, 7: 14.00307400443, 8: 15.99491461957, 9: 18.99840316273}


class _Engine:
    """Four GFN2-xTB calculators for one molecule: no field, and a field along x, y, z.

    Each is moved to a new geometry with ``update`` and restarted from the wavefunction
    at the reference geometry, which saves most SCC iterations in finite differences.
    """

    def __init__(self, numbers: np.ndarray, positions: np.ndarray):
        from tblite.interface import Calculator
        from tblite.library import ffi

        self.calculators = []
        for axis in (None, 0, 1, 2):
            calc = Calculator("GFN2-xTB", numbers, positions)
            calc.set("verbosity", 0)
            calc.set("accuracy", 0.01)  # tighter SCC convergence for finite differences
            if axis is not None:
                field = [0.0, 0.0, 0.0]
                field[axis] = FIELD
                calc.add("electric-field", ffi.new("double[]", field))
            self.calculators.append(calc)
        self.restart = [None] * 4

    def run(self, which: int, positions: np.ndarray):
        calc = self.calculators[which]
        calc.update(positions)
        result = calc.singlepoint(self.restart[which], copy=True) if self.restart[which] else calc.singlepoint()
        return result

    def anchor(self, positions: np.ndarray) -> None:
        """Remember the wavefunctions at ``positions`` as restart points."""
        self.restart = [self.run(i, positions) for i in range(4)]

    def energy_gradient_dipole(self, positions: np.ndarray):
        result = self.run(0, positions)
        return result.get("energy"), result.get("gradient"), result.get("dipole")

    def polarizability(self, positions: np.ndarray, dipole: np.ndarray) -> np.ndarray:
        """3×3 static polarizability (bohr³), α_ij = ∂μ_i/∂F_j by a forward difference.

        A forward difference costs three field calculations instead of six; with
        F = 0.001 au its error (the first hyperpolarizability term, β·F/2) is far below
        what separates two molecules' Raman spectra.
        """
        alpha = np.column_stack([(self.run(j + 1, positions).get("dipole") - dipole) / FIELD for j in range(3)])
        return 0.5 * (alpha + alpha.T)


def optimise(engine: _Engine, positions: np.ndarray, *, gtol: float = 1e-5) -> np.ndarray:
    """GFN2-xTB minimum nearest to ``positions`` (bohr)."""

    def energy_and_gradient(flat: np.ndarray) -> tuple[float, np.ndarray]:
        energy, gradient, _ = engine.energy_gradient_dipole(flat.reshape(-1, 3))
        return energy, gradient.ravel()

    result = minimize(
        energy_and_gradient, positions.ravel(), jac=True, method="L-BFGS-B", options={"gtol": gtol, "maxiter": 500}
    )
    return result.x.reshape(-1, 3)


def _rigid_motions(positions: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Orthonormal mass-weighted translation and rotation vectors, shape (k, 3N)."""
    sqrt_m = np.sqrt(np.repeat(masses, 3))
    centred = positions - (masses[:, None] * positions).sum(0) / masses.sum()
    vectors = []
    for axis in np.eye(3):
        vectors.append(np.tile(axis, len(masses)) * sqrt_m)
        vectors.append(np.cross(axis, centred).ravel() * sqrt_m)
    q, r = np.linalg.qr(np.array(vectors).T)
    keep = np.abs(np.diag(r)) > 1e-6 * np.abs(np.diag(r)).max()  # 5 for a linear molecule
    return q[:, keep].T


def principal_frame_dipole(positions: np.ndarray, masses: np.ndarray, dipole: np.ndarray) -> np.ndarray:
    """Dipole components along the principal axes of inertia (smallest moment first), each ≥ 0.

    A vector in the lab frame of one geometry means nothing next to another molecule's;
    in the principal frame, with the sign of each axis fixed by the dipole, it does.
    """
    centred = positions - (masses[:, None] * positions).sum(0) / masses.sum()
    inertia = np.einsum("i,ij,ik->jk", masses, centred, centred)
    inertia = np.trace(inertia) * np.eye(3) - inertia
    _, axes = np.linalg.eigh(inertia)
    return np.abs(axes.T @ dipole)


def vibrational_properties(numbers: list[int], positions_angstrom: np.ndarray) -> dict[str, object]:
    """Dipole vector, IR and Raman stick spectra of one molecule at the GFN2-xTB level."""
    numbers = np.asarray(numbers)
    masses = np.array([MASSES[int(z)] for z in numbers])
    positions = np.asarray(positions_angstrom, float) / BOHR_IN_ANGSTROM
    engine = _Engine(numbers, positions)
    positions = optimise(engine, positions)
    engine.anchor(positions)
    _, _, dipole = engine.energy_gradient_dipole(positions)
    n = 3 * len(numbers)
    hessian = np.zeros((n, n))
    dipole_derivative = np.zeros((n, 3))
    alpha_derivative = np.zeros((n, 3, 3))
    for k in range(n):
        step = np.zeros(n)
        step[k] = DISPLACEMENT
        sides = []
        for sign in (1.0, -1.0):
            displaced = positions + sign * step.reshape(-1, 3)
            _, gradient, mu = engine.energy_gradient_dipole(displaced)
            sides.append((gradient, mu, engine.polarizability(displaced, mu)))
        (g_plus, mu_plus, a_plus), (g_minus, mu_minus, a_minus) = sides
        hessian[k] = (g_plus - g_minus).ravel() / (2 * DISPLACEMENT)
        dipole_derivative[k] = (mu_plus - mu_minus) / (2 * DISPLACEMENT)
        alpha_derivative[k] = (a_plus - a_minus) / (2 * DISPLACEMENT)
    hessian = 0.5 * (hessian + hessian.T)
    inv_sqrt_m = 1.0 / np.sqrt(np.repeat(masses, 3) * AMU_IN_ME)
    weighted = hessian * inv_sqrt_m[:, None] * inv_sqrt_m[None, :]
    rigid = _rigid_motions(positions, masses)
    projector = np.eye(n) - rigid.T @ rigid
    eigenvalues, modes = np.linalg.eigh(projector @ weighted @ projector)
    order = np.argsort(np.abs(eigenvalues))[len(rigid) :]  # drop the rigid-body zeros
    eigenvalues, modes = eigenvalues[order], modes[:, order]
    frequencies = np.sign(eigenvalues) * np.sqrt(np.abs(eigenvalues)) * HARTREE_IN_WAVENUMBER
    # Cartesian displacement per unit mass-weighted normal coordinate (amu^-1/2).
    cartesian_modes = modes / np.sqrt(np.repeat(masses, 3))[:, None]
    dmu_dq = cartesian_modes.T @ dipole_derivative  # e / √amu
    ir = IR_KM_PER_MOL * (dmu_dq**2).sum(axis=1)
    dalpha_dq = np.einsum("km,kij->mij", cartesian_modes, alpha_derivative)
    dalpha_dq *= BOHR_IN_ANGSTROM**2  # bohr²/√amu → Å²/√amu
    mean = np.einsum("mii->m", dalpha_dq) / 3
    xx, yy, zz = dalpha_dq[:, 0, 0], dalpha_dq[:, 1, 1], dalpha_dq[:, 2, 2]
    aniso = 0.5 * (
        (xx - yy) ** 2
        + (yy - zz) ** 2
        + (zz - xx) ** 2
        + 6 * (dalpha_dq[:, 0, 1] ** 2 + dalpha_dq[:, 1, 2] ** 2 + dalpha_dq[:, 0, 2] ** 2)
    )
    raman = 45 * mean**2 + 7 * aniso
    real = frequencies > 0
    order = np.argsort(frequencies[real])
    return {
        "dipole_vector": (principal_frame_dipole(positions, masses, dipole) * DEBYE_PER_AU).tolist(),
        "frequencies": frequencies[real][order].tolist(),
        "ir_intensities": ir[real][order].tolist(),
        "raman_activities": raman[real][order].tolist(),
        "imaginary_modes": int((~real).sum()),
    }
