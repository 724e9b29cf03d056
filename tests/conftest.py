"""What the whole suite shares, built once a run: the default database, a tiny one, one small fit.

Each is built the first time a test asks for it. Under pytest-xdist the workers share it
through a file lock in the run's common temporary folder (the first worker builds it, the
others wait and open it), so a run pays for each once, not once a worker or a module.
They are read-only by contract: open the databases with ``read_only=True``, and copy a file
before changing it (``copy_of``).
"""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support.tiny_benchmark import write_benchmark, write_responses

# `make test` runs pytest-xdist with --dist loadscope, whose scope is here a test module: a module's tests
# stay on one worker, in order, so its module fixtures (a fit, a loaded database, a chain of examples)
# are built once. The exceptions are these modules, whose tests share nothing and are each a few
# minutes of subprocesses (one page of the docs each): each test is its own scope, so the two workers
# take them as they come free instead of one worker running every page in turn.
INDEPENDENT_TESTS = {"tests/docs/test_docs.py"}


# The modules that take longest (minutes of fits, renders and subprocesses on 2 cores), slowest
# first: they start the run, so that the many quick modules fill the workers' last minutes instead
# of one worker finishing a long module alone. Only the order changes; every test runs.
SLOWEST_FIRST = [
    "tests/docs/test_docs.py",
    "tests/cli/test_cli_help.py",
    "tests/bayes/test_warm.py",
    "tests/benchmarks/test_fitting_scripts.py",
    "tests/bayes/test_attempts.py",
    "tests/report/test_report.py",
    "tests/report/test_wheel.py",
    "tests/benchmarks/test_benchmarks.py",
    "tests/bayes/test_model.py",
    "tests/report/test_quarto_route.py",
    "tests/store/test_store_faults.py",
]


# A worker's heap holds what every module before imported (JAX, PyMC, ArviZ, polars: millions of
# objects), and each full collection of Python's cyclic garbage collector walks all of it again:
# about 0.3 s each, 50–80 a worker, plus the tests' own gc.collect() that release DuckDB files. At
# the start of each test module what is alive is collected once and then frozen (``gc.freeze``: left
# out of every later collection); the module's own objects, its fixtures' included, stay
# collectable. On tests/ingest, tests/stats and tests/bayes with two workers: full collections
# took 8.2 s instead of 24.4 s, the run 240 CPU-s instead of 264 (one run each, side by side).
_module_now: dict[str, str | None] = {"module": None}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    module = item.nodeid.split("::", 1)[0]
    if module != _module_now["module"]:
        _module_now["module"] = module
        gc.collect()  # what the modules before left in cycles goes now, not into the frozen heap
        gc.freeze()


def pytest_collection_modifyitems(config, items) -> None:
    rank = {module: i for i, module in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: in-module order kept


def pytest_xdist_make_scheduler(config, log):
    """xdist's loadscope, its scope a test module (the independent modules' tests each alone), in
    the collection's order (slowest modules first) rather than by number of tests.

    Not xdist_group marks with --dist loadgroup: xdist 3.8 names the groups by rewriting
    ``item._nodeid``, which pytest 9.2 no longer reads (``nodeid`` comes from ``item._id``), so
    every test was its own group, and a module's fixtures were built again on each worker (a
    module of fits paid for them twice)."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module in INDEPENDENT_TESTS else module

    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)


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
def shared(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    """``shared(name, build)``: a folder built by ``build(folder)`` once for all the workers of this run
    (for what one test module shares with the rest; the fixtures below use it)."""
    return lambda name, build: _shared(tmp_path_factory, name, build)


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


@pytest.fixture(scope="session")
def warm_commands(tmp_path_factory) -> Iterator[Path]:
    """A folder holding a `molp2s` that runs each command forked from an interpreter that has imported
    the package already (tests/support/warm_cli.py), for the front of PATH: one server a worker, for the
    tests that run dozens of commands as a reader types them."""
    from tests.support.warm_cli import warm_molp2s

    with warm_molp2s(tmp_path_factory.mktemp("warm-commands")) as folder:
        yield folder


@pytest.fixture
def warm_kernels(warm_commands, monkeypatch) -> None:
    """This test's report kernels started by the warm server (tests/support/warm_cli.py)."""
    from tests.support.warm_cli import warm_jupyter_path

    monkeypatch.setenv("JUPYTER_PATH", warm_jupyter_path(warm_commands))


@pytest.fixture
def copy_of(tmp_path) -> Callable[[Path], Path]:
    """``copy_of(path)``: a copy of a shared file in this test's own folder, to change freely."""

    def copy(path: Path) -> Path:
        target = tmp_path / path.name
        shutil.copy(path, target)
        return target

    return copy
