"""Functions compiled by numba, for the few loops no array library runs without Python per step.

``compiled`` is what the model's hand-written gradient (bayes/numba_density.py) and the audit's
bisection (stats/audit.py) are compiled with: the GIL released, and the machine code cached on
disk beside the module (or in numba's user cache folder where the package's is read-only), so
that only the first process compiles it. Where no cache can be written, each process compiles
it anew rather than failing.
"""

from __future__ import annotations


def compiled(function):
    """``function`` compiled by numba (``njit``, GIL released, cached on disk where it can be)."""
    import numba

    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba: "cannot cache function …: no locator available"
        return numba.njit(nogil=True)(function)
