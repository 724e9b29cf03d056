"""Functions compiled by numba, for the few loops no array library runs without Python per step.

``compiled`` is what the model's hand-written gradient (bayes/numba_density.py) and the audit's
bisection (stats/audit.py) are compiled with: the GIL released, and the machine code cached on
disk beside the module (or in numba's user cache folder where the package's is read-only), so
that only the first process compiles it. Where no cache can be written, each process compiles
it anew rather than failing.
"""

from __future__ import annotations


def compiled(function, *, c_signature=None):
    """``function`` compiled by numba (``njit``, GIL released, cached on disk where it can be); with
    ``c_signature``, as a C callback of that signature (``numba.cfunc``), cached the same way."""
    import numba

    def compile_with(**cache):
        if c_signature is not None:
            return numba.cfunc(c_signature, **cache)(function)
        return numba.njit(nogil=True, **cache)(function)

    try:
        return compile_with(cache=True)
    except RuntimeError:  # numba: "cannot cache function …: no locator available"
        return compile_with()
