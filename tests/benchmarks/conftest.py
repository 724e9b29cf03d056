"""Running a benchmark script at its smallest size, in the test's own process.

In-process (``runpy``, as ``python benchmarks/<script>`` runs it, its folder first on
``sys.path``) so that the scripts of one test file share their imports (PyMC, JAX, polars:
about 10 s a process) instead of paying for them once a script.
"""

from __future__ import annotations

import contextlib
import io
import runpy
import sys

import pytest

from tests.support import BENCHMARKS
from tests.support.benchmark_scripts import TINY


@pytest.fixture
def run_tiny(tmp_path, monkeypatch, request):
    """``run_tiny(script)``: the script run at its smallest size; returns what it printed."""

    def run(script: str) -> str:
        arguments, expected = TINY[script]
        given = {"tmp": tmp_path}
        if any("{default_database}" in a for a in arguments):
            given["default_database"] = request.getfixturevalue("default_database")
        monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / script), *(a.format(**given) for a in arguments)])
        monkeypatch.syspath_prepend(str(BENCHMARKS))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            try:
                runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
            except SystemExit as stop:
                # a figure that misses its target exits 1: only a crash (an exception, another status) fails here
                assert stop.code in (None, 0, 1), f"{script} exited with {stop.code!r}\n{printed.getvalue()[-2000:]}"
        output = printed.getvalue()
        assert expected in output, output[-2000:]
        return output

    return run
