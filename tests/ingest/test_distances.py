"""Tests for molp2s_stats.ingest.distances: golden values worked by
hand, independent reference implementations, property tests, bad values."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from molp2s_stats.ingest.distances import (
    DISTANCES,
    PropertyValueError,
    family_pair_distances,
    pair_distance,
    parse_value,
)

FWHM = 20.0
S = FWHM / (2 * math.sqrt(2 * math.log(2)))  # 20 / 2.35482 = 8.49322 cm^-1


def d(kind, raw_a, raw_b, **params):
    """Distance between two raw (decoded JSON) values."""
    return pair_distance(kind, parse_value(kind, raw_a), parse_value(kind, raw_b), **params)


def ir(freqs, ints):
    return {"frequencies": list(freqs), "intensities": list(ints)}


def uv(energies, strengths):
    return {"energies": list(energies), "strengths": list(strengths)}


# --------------------------------------------------------------- golden values


def test_abs_diff_golden():
    # |1.2 - 0.9| = 0.3
    assert d("abs_diff", 1.2, 0.9) == pytest.approx(0.3, abs=1e-12)
    assert d("abs_diff", 0.9, 1.2) == pytest.approx(0.3, abs=1e-12)
    assert d("abs_diff", 3, 3) == 0.0


def test_euclidean_golden():
    # sqrt((3-0)^2 + (4-0)^2 + (0-0)^2) = sqrt(9 + 16) = sqrt(25) = 5
    assert d("euclidean", [0, 0, 0], [3, 4, 0]) == pytest.approx(5.0)


def test_wasserstein_golden():
    # Two equal-weight atoms each, {0, 1} vs {1, 2}: every unit of mass moves
    # by 1 (0 -> 1, 1 -> 2), so W1 = 1/2 * 1 + 1/2 * 1 = 1.
    assert d("wasserstein", [0, 1], [1, 2]) == pytest.approx(1.0)
    # The {"shieldings": [...]} form is the same value as the plain list.
    assert d("wasserstein", {"shieldings": [0, 1]}, [1, 2]) == pytest.approx(1.0)
    # Order of the atoms does not matter: {0, 1} vs {1, 0} -> 0.
    assert d("wasserstein", [0, 1], [1, 0]) == pytest.approx(0.0)


def test_peak_overlap_two_single_peaks_golden():
    # Single peaks at nu1, nu2: p = q = [1], K_11 of each spectrum = 1, so
    # M = exp(-D^2 / (4 s^2)).  D = 20 cm^-1, FWHM = 20: s = 20 / 2.35482 =
    # 8.49322, 4 s^2 = 288.539, D^2 / (4 s^2) = 400 / 288.539 = 1.386294
    # (= 2 ln 2 exactly, since D = FWHM), so M = exp(-1.386294) = 0.25 and the
    # distance is 1 - 0.25 = 0.75.
    assert d("peak_overlap", ir([1000], [1]), ir([1020], [5])) == pytest.approx(0.75, abs=1e-12)
    # D = 10: D^2 / (4 s^2) = 100 / 288.539 = 0.346574, M = 0.707107, 1 - M = 0.292893.
    assert d("peak_overlap", ir([1000], [1]), ir([1010], [1])) == pytest.approx(0.292893, abs=1e-6)


def test_peak_overlap_identical_and_scaled():
    a = ir([500, 1200, 1210, 3000], [0.2, 1.0, 0.5, 3.0])
    assert d("peak_overlap", a, a) == pytest.approx(0.0, abs=1e-12)
    # Same peaks in another order: still the same spectrum.
    assert d("peak_overlap", a, ir([3000, 1210, 1200, 500], [3.0, 0.5, 1.0, 0.2])) == pytest.approx(0.0, abs=1e-12)
    b = ir([505, 1190, 1250, 2950], [1.0, 0.1, 0.7, 2.0])
    ref = d("peak_overlap", a, b)
    # Intensities scaled by a constant: same distance (they are normalised).
    b_scaled = ir([505, 1190, 1250, 2950], [1000.0, 100.0, 700.0, 2000.0])
    assert d("peak_overlap", a, b_scaled) == pytest.approx(ref, abs=1e-12)
    # Peaks 100 FWHM apart do not overlap at all: distance 1.
    assert d("peak_overlap", ir([500], [1]), ir([2500], [1])) == pytest.approx(1.0)


def test_peak_overlap_fwhm_parameter():
    # D = FWHM gives M = 1/4 whatever the FWHM (see the golden test above).
    assert d("peak_overlap", ir([1000], [1]), ir([1040], [1]), fwhm=40.0) == pytest.approx(0.75)


def test_uvvis_identical_and_far():
    a = uv([3.1, 4.5, 5.2], [0.1, 0.8, 0.3])
    assert d("uvvis_l1", a, a) == 0.0
    # Strengths scaled by a constant: the curves are area-normalised.
    assert d("uvvis_l1", a, uv([3.1, 4.5, 5.2], [1.0, 8.0, 3.0])) == pytest.approx(0.0, abs=1e-12)
    # 5 eV apart = 25 sigma: no overlap, distance 1.
    assert d("uvvis_l1", uv([2.0], [1]), uv([7.0], [1])) == pytest.approx(1.0, abs=1e-9)


def test_extreme_weights_do_not_overflow():
    # Weights near the float limit (or tiny) give the same answer as ordinary ones.
    a, b = ir([1000, 1010], [1, 2]), ir([1000, 1025], [2, 1])
    ref = d("peak_overlap", a, b)
    for k in (1e307, 1e-300):
        big_a = ir([1000, 1010], [k, 2 * k])
        assert d("peak_overlap", big_a, b) == pytest.approx(ref, abs=1e-12)
    ref = d("uvvis_l1", uv([3.0, 3.3], [1, 2]), uv([3.1], [1]))
    for k in (1e307, 1e-300):
        assert d("uvvis_l1", uv([3.0, 3.3], [k, 2 * k]), uv([3.1], [1])) == pytest.approx(ref)


def test_uvvis_window_too_wide():
    with pytest.raises(PropertyValueError, match="too wide"):
        d("uvvis_l1", uv([3.0], [1]), uv([5000.0], [1]))


# ----------------------------------------------- independent reference values


def brute_force_peak_overlap(a, b, fwhm=FWHM, step=0.1):
    """1 - cosine similarity of the two broadened curves on a dense grid."""
    s = fwhm / (2 * math.sqrt(2 * math.log(2)))
    va, ia = np.asarray(a["frequencies"], float), np.asarray(a["intensities"], float)
    vb, ib = np.asarray(b["frequencies"], float), np.asarray(b["intensities"], float)
    lo, hi = min(va.min(), vb.min()) - 10 * fwhm, max(va.max(), vb.max()) + 10 * fwhm
    x = np.arange(lo, hi + step, step)

    def curve(v, i):
        return sum(w * np.exp(-((x - c) ** 2) / (2 * s * s)) for c, w in zip(v, i / i.sum()))

    fa, fb = curve(va, ia), curve(vb, ib)
    return 1 - np.sum(fa * fb) / math.sqrt(np.sum(fa * fa) * np.sum(fb * fb))


@pytest.mark.parametrize(
    "a, b",
    [
        (ir([1000], [1]), ir([1020], [1])),
        (ir([1000, 1030], [1, 2]), ir([1010, 1025, 1100], [0.5, 1, 1])),
        (ir([1500, 1510, 1560], [3, 0, 1]), ir([1505, 1562], [1, 1])),
    ],
)
def test_peak_overlap_matches_dense_grid(a, b):
    assert d("peak_overlap", a, b) == pytest.approx(brute_force_peak_overlap(a, b), abs=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.floats(1000, 1200), st.floats(0.01, 10)), min_size=1, max_size=4),
    st.lists(st.tuples(st.floats(1000, 1200), st.floats(0.01, 10)), min_size=1, max_size=4),
)
def test_peak_overlap_matches_dense_grid_random(pa, pb):
    a, b = ir(*zip(*pa)), ir(*zip(*pb))
    assert d("peak_overlap", a, b) == pytest.approx(brute_force_peak_overlap(a, b), abs=1e-6)


@pytest.mark.parametrize("delta", [0.0, 0.01, 0.05, 0.13, 0.2, 0.4, 0.7, 1.0, 2.0])
@pytest.mark.parametrize("sigma", [0.2, 0.1])
def test_uvvis_two_single_gaussians_closed_form(delta, sigma):
    # N(0, sigma) vs N(delta, sigma) cross at delta/2; the L1 half-distance is
    # P(X < delta/2) - P(X + delta < delta/2) = 2 Phi(delta / (2 sigma)) - 1.
    expected = 2 * norm.cdf(delta / (2 * sigma)) - 1
    got = d("uvvis_l1", uv([3.0], [0.4]), uv([3.0 + delta], [2.5]), uvvis_sigma=sigma)
    assert got == pytest.approx(expected, abs=1e-4)


# ---------------------------------------------------------- property tests

finite = st.floats(-1e3, 1e3, allow_nan=False)
positive = st.floats(1e-3, 1e3)
spectra_ir = st.lists(st.tuples(st.floats(400, 4000), positive), min_size=1, max_size=6).map(lambda p: ir(*zip(*p)))
spectra_uv = st.lists(st.tuples(st.floats(1, 10), positive), min_size=1, max_size=6).map(lambda p: uv(*zip(*p)))
STRATEGIES = {
    "abs_diff": finite,
    "euclidean": st.lists(finite, min_size=3, max_size=3),
    "wasserstein": st.lists(finite, min_size=1, max_size=10),
    "peak_overlap": spectra_ir,
    "uvvis_l1": spectra_uv,
}


@pytest.mark.parametrize("kind", DISTANCES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_symmetric_nonnegative_zero_on_identical(kind, data):
    a = data.draw(STRATEGIES[kind])
    b = data.draw(STRATEGIES[kind])
    ab, ba = d(kind, a, b), d(kind, b, a)
    assert ab >= 0.0
    assert ab == pytest.approx(ba, rel=1e-9, abs=1e-12)
    assert d(kind, a, a) == pytest.approx(0.0, abs=1e-9)
    if kind in ("peak_overlap", "uvvis_l1"):
        assert 0.0 <= ab <= 1.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["shieldings", "frequencies", "intensities", "energies", "strengths", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("kind", DISTANCES)
@settings(max_examples=150, deadline=None)
@given(raw=json_values)
def test_parse_value_raises_only_property_value_error(kind, raw):
    try:
        parse_value(kind, raw)
    except PropertyValueError:
        pass


def test_family_pair_distances():
    values = {"C": 2.0, "A": 1.0, "B": 1.25, "D": None}
    assert family_pair_distances("abs_diff", values) == [
        ("A", "B", 0.25),
        ("A", "C", 1.0),
        ("B", "C", 0.75),
    ]
    assert family_pair_distances("abs_diff", {"A": 1.0}) == []
    raw = {"B": ir([1020], [1]), "A": ir([1040], [1])}
    spectra = {k: parse_value("peak_overlap", v) for k, v in raw.items()}
    [(x, y, dist)] = family_pair_distances("peak_overlap", spectra, fwhm=20.0)
    assert (x, y) == ("A", "B") and dist == pytest.approx(0.75)


# -------------------------------------------------------------- bad values

BAD = [
    ("abs_diff", "1.2", "expected a number, got str"),
    ("abs_diff", None, "expected a number, got null"),
    ("abs_diff", True, "expected a number, got bool"),
    ("abs_diff", [1.2], "expected a number, got list"),
    ("abs_diff", float("nan"), "non-finite"),
    ("abs_diff", float("inf"), "non-finite"),
    ("abs_diff", 10**400, "non-finite"),
    ("euclidean", 1.0, "vector: expected a list of numbers, got float"),
    ("euclidean", [], "vector: empty list"),
    ("euclidean", [0, "1", 2], r"vector\[1\]: expected a number, got str"),
    ("euclidean", [0, False, 2], r"vector\[1\]: expected a number, got bool"),
    ("euclidean", [0, [1], 2], r"vector\[1\]: expected a number, got list"),
    ("euclidean", [0, 1, float("-inf")], r"vector\[2\]: non-finite"),
    ("wasserstein", {"shifts": [1, 2]}, "missing key 'shieldings'"),
    ("wasserstein", {"shieldings": []}, "shieldings: empty list"),
    ("wasserstein", [], "shieldings: empty list"),
    ("wasserstein", "31.2", "expected a list of numbers, got str"),
    ("wasserstein", {"shieldings": 31.2}, "expected a list of numbers, got float"),
    ("wasserstein", [31.0, float("nan")], r"shieldings\[1\]: non-finite"),
    ("peak_overlap", [1], "expected an object with keys 'frequencies' and 'intensities', got list"),
    ("peak_overlap", {"frequencies": [1000]}, "missing key 'intensities'"),
    ("peak_overlap", {"intensities": [1]}, "missing key 'frequencies'"),
    ("peak_overlap", ir([], []), "frequencies: empty list"),
    ("peak_overlap", ir([1000, 1200], [1]), "length mismatch: 2 frequencies but 1 intensities"),
    ("peak_overlap", ir([1000, 1200], [1, -0.5]), "negative intensities"),
    ("peak_overlap", ir([1000, 1200], [0, 0.0]), "all intensities are zero"),
    ("peak_overlap", ir([1000, float("nan")], [1, 1]), r"frequencies\[1\]: non-finite"),
    ("peak_overlap", ir([1000, 1200], [1, True]), r"intensities\[1\]: expected a number, got bool"),
    ("uvvis_l1", 3.2, "expected an object with keys 'energies' and 'strengths', got float"),
    ("uvvis_l1", {"energies": [3.2]}, "missing key 'strengths'"),
    ("uvvis_l1", uv([3.2], []), "strengths: empty list"),
    ("uvvis_l1", uv([3.2, 4.0, 5.1], [0.1, 0.2]), "length mismatch: 3 energies but 2 strengths"),
    ("uvvis_l1", uv([3.2, 4.0], [0.1, -0.2]), "negative strengths"),
    ("uvvis_l1", uv([3.2, 4.0], [0, 0]), "all strengths are zero"),
    ("uvvis_l1", uv([3.2, float("inf")], [1, 1]), r"energies\[1\]: non-finite"),
]


@pytest.mark.parametrize("kind, raw, message", BAD)
def test_bad_values_raise_property_value_error(kind, raw, message):
    with pytest.raises(PropertyValueError, match=message):
        parse_value(kind, raw)


def test_euclidean_length_mismatch():
    with pytest.raises(PropertyValueError, match="vector length mismatch: 3 vs 2"):
        d("euclidean", [0, 0, 0], [1, 1])


def test_unknown_distance_and_bad_parameters_are_plain_value_errors():
    with pytest.raises(ValueError, match="unknown distance 'cosine'") as err:
        parse_value("cosine", 1.0)
    assert not isinstance(err.value, PropertyValueError)
    with pytest.raises(ValueError, match="unknown distance"):
        pair_distance("cosine", 1.0, 2.0)
    with pytest.raises(ValueError, match="fwhm must be positive"):
        d("peak_overlap", ir([1000], [1]), ir([1000], [1]), fwhm=0.0)
    with pytest.raises(ValueError, match="uvvis_sigma must be positive"):
        d("uvvis_l1", uv([3], [1]), uv([3], [1]), uvvis_sigma=-0.2)
