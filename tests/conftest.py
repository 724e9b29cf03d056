"""What the whole suite shares, built once a run: the default database, a tiny one, one small fit.

Each is built the first time a test asks for it. Under pytest-xdist the workers share it
through a file lock in the run's common temporary folder (the first worker builds it, the
others wait and open it), so a run pays for each once, not once a worker or a module.
They are read-only by contract: open the databases with ``read_only=True``, and copy a file
before changing it (``copy_of``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support.tiny_benchmark import write_benchmark, write_responses

# `make test` runs pytest-xdist with --dist loadgroup: a module's tests stay on one worker (they share
# its module fixtures: a fit, a loaded database, a chain of examples), except in these modules, whose
# tests share nothing and are each a few minutes of subprocesses: one page of the docs each. Split, the
# two workers take them as they come free instead of one worker running every page in turn.
INDEPENDENT_TESTS = {"tests/docs/test_docs.py"}


def pytest_collection_modifyitems(config, items) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        module = Path(str(item.path)).relative_to(root).as_posix() if Path(str(item.path)).is_relative_to(root) else ""
        item.add_marker(pytest.mark.xdist_group(item.nodeid if module in INDEPENDENT_TESTS else module))


def _shared(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``<run folder>/<name>``, built by ``build(folder)`` once for all the workers of this run."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base  # xdist: a folder per worker
    folder = root / f"shared-{name}"
    with FileLock(str(root / f"shared-{name}.lock")):
        if not (folder / ".done").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build a killed worker left half made
            folder.mkdir()
            build(folder)
            (folder / ".done").touch()
    return folder


@pytest.fixture(scope="session")
def default_database(tmp_path_factory) -> Path:
    """The embedded default data (389 families, 8 models) loaded: the database's path."""

    def build(folder: Path) -> None:
        from molp2s_stats import store
        from molp2s_stats.ingest.default_data import load_default_data

        con = store.connect(folder / "default.duckdb")
        load_default_data(con)
        con.execute("CHECKPOINT")
        con.close()

    return _shared(tmp_path_factory, "default", build) / "default.duckdb"


@pytest.fixture(scope="session")
def tiny_database(tmp_path_factory) -> Path:
    """The tiny hand-checkable benchmark (tests/support/tiny_benchmark.py) loaded, beside its files
    (``bench/`` and ``responses/`` in the same folder): the database's path."""

    def build(folder: Path) -> None:
        from molp2s_stats import store
        from molp2s_stats.ingest import load

        con = store.connect(folder / "db.duckdb")
        load(con, benchmark=write_benchmark(folder / "bench"), responses=write_responses(folder / "responses"))
        con.execute("CHECKPOINT")
        con.close()

    return _shared(tmp_path_factory, "tiny", build) / "db.duckdb"


@pytest.fixture(scope="session")
def small_fit(tmp_path_factory) -> tuple[Path, Path]:
    """One short fit (2 chains × 100 draws after 100 tuning, one attempt: it misses the gate, as a
    behaviour test wants) on 40 simulated families × 2 channels, 3 models: ``(database, fit file)``.
    For tests of what reads a fit (pages, commands), not of what the fit estimates."""

    def build(folder: Path) -> None:
        from molp2s_stats import simulate, store
        from molp2s_stats.bayes import data as bayes_data
        from molp2s_stats.bayes import fit as bayes_fit
        from molp2s_stats.bayes import provenance
        from tests.support.simulated_benchmark import write_simulated

        db, _ = write_simulated(
            folder, families=40, channels=("dipole_norm", "ir"), models=simulate.DEFAULT_MODELS[:3], seed=4
        )
        con = store.connect(db, read_only=True)
        idata = bayes_fit.fit(
            bayes_data.read_model_data(con), draws=100, tune=100, chains=2, seed=1, loo=False, budget=0
        )
        provenance.record(idata, con)
        con.close()
        idata.to_netcdf(str(folder / "fit.nc"))
        (folder / "database").write_text(str(db))

    folder = _shared(tmp_path_factory, "small-fit", build)
    return Path((folder / "database").read_text()), folder / "fit.nc"


@pytest.fixture
def copy_of(tmp_path) -> Callable[[Path], Path]:
    """``copy_of(path)``: a copy of a shared file in this test's own folder, to change freely."""

    def copy(path: Path) -> Path:
        target = tmp_path / path.name
        shutil.copy(path, target)
        return target

    return copy
