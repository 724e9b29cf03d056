"""Distances between two candidates' property values, for input validation.

Pure numpy/scipy kernels used by input validation: :func:`parse_value` checks
and normalises one decoded JSON property value, :func:`pair_distance` measures
two parsed values, :func:`family_pair_distances` does every pair of a family.

The cutoff comparison (a pair is separated when ``distance >= cutoff``) is made
by the caller, not here. Likewise, UV-Vis distances are reported divided by
their cutoff in separability tables; that division happens there, and this
module always returns the raw distance.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np
from scipy.integrate import trapezoid
from scipy.stats import wasserstein_distance

from ..errors import UsageError

DISTANCES = ("abs_diff", "euclidean", "wasserstein", "peak_overlap", "uvvis_l1")

#: FWHM -> standard deviation of a Gaussian: FWHM / (2 sqrt(2 ln 2)) (~2.35482).
FWHM_TO_SIGMA = 1.0 / (2.0 * math.sqrt(2.0 * math.log(2.0)))

_MAX_GRID = 500_000  # uvvis_l1 grid points: a 1,000 eV window at sigma = 0.2 eV
# JSON object keys (positions, weights) of the two stick-spectrum formats.
_SPECTRUM_KEYS = {"peak_overlap": ("frequencies", "intensities"), "uvvis_l1": ("energies", "strengths")}


class PropertyValueError(UsageError):
    """A property value does not have the format its distance needs."""


def _check_kind(distance: str) -> None:
    if distance not in DISTANCES:  # a configuration error, not a bad value
        raise ValueError(f"unknown distance {distance!r}; expected one of {DISTANCES}")


def _type_name(x: object) -> str:
    return "null" if x is None else type(x).__name__


def _number(raw: object, what: str) -> float:
    if not isinstance(raw, numbers.Real) or isinstance(raw, (bool, np.bool_)):
        raise PropertyValueError(f"{what}: expected a number, got {_type_name(raw)}")
    try:
        x = float(raw)
    except (OverflowError, ValueError, TypeError):
        raise PropertyValueError(f"{what}: non-finite number (beyond float range)") from None
    if not math.isfinite(x):
        raise PropertyValueError(f"{what}: non-finite number {x!r}")
    return x


def _array(raw: object, what: str) -> np.ndarray:
    """A non-empty list of finite numbers as a 1-D float array."""
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if not isinstance(raw, (list, tuple)):
        raise PropertyValueError(f"{what}: expected a list of numbers, got {_type_name(raw)}")
    if len(raw) == 0:
        raise PropertyValueError(f"{what}: empty list")
    # Plain JSON numbers (the common case) convert in one step; anything else, or a number that
    # is not finite, goes element by element so the error names the first bad one.
    if all(type(x) is float or type(x) is int for x in raw):
        try:
            values = np.array(raw, dtype=float)
        except OverflowError:  # an integer beyond float range: said below
            values = None
        if values is not None and np.isfinite(values).all():
            return values
    return np.array([_number(x, f"{what}[{i}]") for i, x in enumerate(raw)], dtype=float)


def _field(raw: Mapping, key: str) -> np.ndarray:
    if key not in raw:
        raise PropertyValueError(f"missing key {key!r} (keys present: {sorted(map(str, raw))})")
    return _array(raw[key], key)


def parse_value(distance: str, raw: object) -> object:
    """Validate and normalise one decoded JSON property value.

    Parameters
    ----------
    distance : str
        One of :data:`DISTANCES`.
    raw : object
        The decoded JSON value (what ``json.loads`` gave): a number, a list or
        a dict, in the format of the channel's value (see the README's data model).

    Returns
    -------
    object
        ``float`` (abs_diff); 1-D float array (euclidean; wasserstein, from
        ``{"shieldings": [...]}`` or a plain list); tuple ``(positions,
        weights)`` of equal-length 1-D float arrays (peak_overlap, uvvis_l1, and
        wasserstein peaks with ``"counts"``).

    Raises
    ------
    PropertyValueError
        Wrong JSON type, missing key, boolean, non-finite number, empty list,
        positions/weights length mismatch, negative or all-zero weights.
    ValueError
        ``distance`` is not a known distance kind (a configuration error).

    Examples
    --------
    >>> parse_value("wasserstein", {"shieldings": [31, 30.5]})
    array([31. , 30.5])
    >>> parse_value("wasserstein", {"shieldings": [31, 30.5], "counts": [3, 1]})
    (array([31. , 30.5]), array([3., 1.]))
    >>> try:
    ...     parse_value("abs_diff", True)
    ... except PropertyValueError as err:
    ...     print(err)
    value: expected a number, got bool
    """
    _check_kind(distance)
    if distance == "abs_diff":
        return _number(raw, "value")
    if distance == "euclidean":
        return _array(raw, "vector")
    if distance == "wasserstein":
        if not isinstance(raw, Mapping):
            return _array(raw, "shieldings")
        shieldings = _field(raw, "shieldings")
        for key in ("counts", "atoms"):
            if key in raw and len(_field(raw, key)) != len(shieldings):
                raise PropertyValueError(f"length mismatch: {len(shieldings)} shieldings but {len(raw[key])} {key}")
        if "counts" not in raw:
            return shieldings
        counts = _field(raw, "counts")
        if np.any(counts <= 0) or np.any(counts != np.round(counts)):
            raise PropertyValueError(f"counts must be positive integers, got {counts.tolist()}")
        return shieldings, counts  # peaks weighted by their nuclei
    pos_key, w_key = _SPECTRUM_KEYS[distance]
    if not isinstance(raw, Mapping):
        msg = f"expected an object with keys {pos_key!r} and {w_key!r}, got {_type_name(raw)}"
        raise PropertyValueError(msg)
    pos, w = _field(raw, pos_key), _field(raw, w_key)
    if pos.shape != w.shape:
        raise PropertyValueError(f"length mismatch: {len(pos)} {pos_key} but {len(w)} {w_key}")
    if np.any(w < 0):
        raise PropertyValueError(f"negative {w_key}: {w[w < 0].tolist()}")
    if not np.any(w > 0):
        raise PropertyValueError(f"all {w_key} are zero")
    return pos, w


def _gauss(x: np.ndarray, y: np.ndarray, two_var: float) -> np.ndarray:
    """Matrix ``exp(-(x_i - y_j)^2 / two_var)``, by broadcasting."""
    return np.exp(-((x[:, None] - y[None, :]) ** 2) / two_var)


def _peak_spectrum(a: tuple, fwhm: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Positions, unit-sum weights, the overlap kernel's ``4 s^2`` and the spectrum's self-overlap."""
    s = fwhm * FWHM_TO_SIGMA
    v, p = a
    p = p / p.max()  # max first: no overflow in the sum
    p = p / p.sum()
    return v, p, 4 * s * s, p @ _gauss(v, v, 4 * s * s) @ p


def _peak_overlap(a: tuple, b: tuple, fwhm: float) -> float:
    return _peak_overlap_of(_peak_spectrum(a, fwhm), _peak_spectrum(b, fwhm))


def _peak_overlap_of(a: tuple, b: tuple) -> float:
    # Cosine similarity of two Gaussian-broadened stick spectra.  The overlap
    # integral of two Gaussians of width s is proportional to
    # exp(-(v_i - v_j)^2 / (4 s^2)), and the constant cancels in the cosine.
    (va, pa, four_s2, pp), (vb, pb, _, qq) = a, b
    m = (pa @ _gauss(va, vb, four_s2) @ pb) / math.sqrt(pp * qq)
    return float(min(1.0, max(0.0, 1.0 - m)))  # clip floating error


def _uvvis_l1(a: tuple, b: tuple, sigma: float) -> float:
    # Unlike peak_overlap (an inner product, bilinear in the Gaussians, so a
    # closed form exists), the L1 norm of a difference of Gaussian mixtures
    # needs the points where the two curves cross, which are roots of a sum of
    # Gaussians with no closed form; so integrate numerically on a fine grid.
    # The step sigma/100 (the spec allows up to sigma/20) keeps the trapezoid
    # error at the kinks of |a - b| below ~1e-5.
    (ea, fa), (eb, fb) = a, b
    lo = min(ea.min(), eb.min()) - 6.0 * sigma
    hi = max(ea.max(), eb.max()) + 6.0 * sigma
    n = int(math.ceil((hi - lo) / (sigma / 100.0))) + 1
    if n > _MAX_GRID:
        raise PropertyValueError(f"energies span {hi - lo:.3g} eV, too wide for sigma={sigma}")
    grid = np.linspace(lo, hi, n)
    ya = _gauss(grid, ea, 2 * sigma * sigma) @ (fa / fa.max())  # max first: no overflow
    yb = _gauss(grid, eb, 2 * sigma * sigma) @ (fb / fb.max())
    ya, yb = ya / trapezoid(ya, grid), yb / trapezoid(yb, grid)  # unit area on the window
    d = 0.5 * trapezoid(np.abs(ya - yb), grid)
    return float(min(1.0, max(0.0, d)))


def pair_distance(distance: str, a: object, b: object, *, fwhm: float = 20.0, uvvis_sigma: float = 0.2) -> float:
    """Distance between two parsed property values.

    Parameters
    ----------
    distance : str
        One of :data:`DISTANCES`.
    a, b : object
        Outputs of :func:`parse_value` for the same ``distance``.
    fwhm : float, default 20.0
        Gaussian FWHM (cm^-1) for ``peak_overlap``.
    uvvis_sigma : float, default 0.2
        Gaussian standard deviation (eV) for ``uvvis_l1``.

    Returns
    -------
    float
        ``|a - b|`` (abs_diff); Euclidean norm of ``a - b`` (euclidean);
        1-Wasserstein distance (wasserstein); ``1 - M`` (peak_overlap, in
        [0, 1]); ``1/2 * integral |a - b| dE`` (uvvis_l1, in [0, 1]).

    Raises
    ------
    PropertyValueError
        Euclidean vectors of different lengths; a UV-Vis window too wide to grid.
    ValueError
        Unknown ``distance`` or a non-positive ``fwhm`` / ``uvvis_sigma``.

    Examples
    --------
    >>> round(pair_distance("abs_diff", 1.2, 0.9), 12)
    0.3
    >>> pair_distance("wasserstein", np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    1.0

    Peaks with counts: three nuclei at 0 and one at 1 against four at 1 move ¾ of the mass by 1.

    >>> pair_distance("wasserstein", (np.array([0.0, 1.0]), np.array([3.0, 1.0])), np.array([1.0]))
    0.75
    """
    _check_kind(distance)
    if distance == "abs_diff":
        return abs(float(a) - float(b))
    if distance == "euclidean":
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape:
            raise PropertyValueError(f"vector length mismatch: {a.size} vs {b.size}")
        return float(np.linalg.norm(a - b))
    if distance == "wasserstein":
        # peaks with counts weigh by their nuclei; a plain list weighs each shielding alike
        (a, wa), (b, wb) = (x if isinstance(x, tuple) else (x, None) for x in (a, b))
        return float(wasserstein_distance(a, b, wa, wb))
    kernel = _peak_overlap if distance == "peak_overlap" else _uvvis_l1
    return kernel(a, b, _kernel_width(distance, fwhm, uvvis_sigma))


def _kernel_width(distance: str, fwhm: float = 20.0, uvvis_sigma: float = 0.2) -> float:
    name, width = ("fwhm", fwhm) if distance == "peak_overlap" else ("uvvis_sigma", uvvis_sigma)
    if not (math.isfinite(width) and width > 0):
        raise UsageError(f"{name} must be positive and finite, got {width!r}")
    return width


def family_pair_distances(distance: str, values: Mapping[str, object], **params: float) -> list[tuple[str, str, float]]:
    """Distances of all unordered candidate pairs of one family.

    Parameters
    ----------
    distance : str
        One of :data:`DISTANCES`.
    values : Mapping[str, object]
        Label -> parsed value; labels mapped to ``None`` (no value) are skipped.
    **params : float
        Passed on to :func:`pair_distance` (``fwhm``, ``uvvis_sigma``).

    Returns
    -------
    list[tuple[str, str, float]]
        Sorted ``(label_a, label_b, distance)`` with ``label_a < label_b``.

    Examples
    --------
    >>> family_pair_distances("abs_diff", {"B": 2.0, "A": 1.5, "C": None})
    [('A', 'B', 0.5)]
    """
    labels = sorted(k for k, v in values.items() if v is not None)
    pairs = [(x, y) for i, x in enumerate(labels) for y in labels[i + 1 :]]
    if distance == "peak_overlap" and pairs:
        # each spectrum's normalisation and self-overlap once, not once a pair
        fwhm = _kernel_width(distance, **params)
        spectra = {label: _peak_spectrum(values[label], fwhm) for label in labels}
        return [(x, y, _peak_overlap_of(spectra[x], spectra[y])) for x, y in pairs]
    return [(x, y, pair_distance(distance, values[x], values[y], **params)) for x, y in pairs]
