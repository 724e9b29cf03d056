"""What a report page reads: the database, the saved fit and the seed, from the environment.

Pages only open files: ``report.prepare`` makes them first (``molp2s report`` calls it, and
the report project runs it as Quarto's pre-render script). These variables name them:

- ``MOLP2S_DB``: the DuckDB database (read-only here); default: the default data's database
  under ``reports/_build/``;
- ``MOLP2S_FIT``: a fit saved by ``molp2s fit`` (NetCDF); default ``<database>.fit.nc``;
- ``MOLP2S_SEED``: the seed of every bootstrap and subsample on the pages (default 0);
- ``MOLP2S_BOOTSTRAP``: bootstrap replicates (default: metrics.DEFAULT_DRAWS).

A relative ``MOLP2S_DB`` or ``MOLP2S_FIT`` means the folder the user typed it in. Quarto
runs each page's kernel in the page's own folder (quarto-cli
``src/resources/jupyter/notebook.py``, ``notebook_execute``: ``os.chdir`` to the input's
folder), so a path relative to the kernel's working folder would point into reports/.
Neither Quarto nor Jupyter rewrites the ``PWD`` variable when it changes a child's folder,
so ``$PWD`` still names the shell's folder: a relative path is looked up there when it is
not found in the working folder, and an error that says so (and what to type instead) when
it is in neither. ``molp2s report`` passes absolute paths.

Every call reads the environment again, and the connection and the fit are cached per
path: a page that runs again with another ``MOLP2S_DB`` reads the new one.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import duckdb

from .. import store
from ..notices import silence_known_notices
from ..stats import metrics
from .environment import given_path, seed  # noqa: F401  (the pages call context.seed())
from .prepare import default_database, default_fit_path

silence_known_notices()  # every page imports this module first

NOT_PREPARED = (
    "run `molp2s report`, or render the whole report project: its pre-render step (reports/_prepare.py) makes it"
)


def bootstrap_draws() -> int:
    return int(os.environ.get("MOLP2S_BOOTSTRAP", str(metrics.DEFAULT_DRAWS)))


def database_path() -> Path:
    """``$MOLP2S_DB`` (absolute; a relative one is resolved as the module docstring says), else the
    default database, which the prepare step has built."""
    given = given_path("MOLP2S_DB", "database", "make one with `molp2s load`")
    if given is not None:
        return given
    path = default_database()
    if not path.exists():
        raise FileNotFoundError(f"the default database {path} is not built yet: {NOT_PREPARED}")
    return path


def database() -> duckdb.DuckDBPyConnection:
    """A read-only connection to ``database_path()``: a new cursor, each call, of the one connection
    kept per path for the life of the kernel. Pages share a kernel, and DuckDB refuses further work
    on a connection whose last result was not read to its end: with one connection for all, one
    page's ``fetchone()`` would stop the next page's first query."""
    return _connection(str(database_path())).cursor()


@functools.cache
def _connection(path: str) -> duckdb.DuckDBPyConnection:
    con = store.connect(path, read_only=True)
    store.require_benchmark(con, path)
    return con


def channel_table():
    """The database's channel names, spanners and labels (``metrics.read_channel_table``)."""
    return _channel_table(str(database_path()))


@functools.cache
def _channel_table(path: str):
    return metrics.read_channel_table(_connection(path))


def fit_path() -> Path:
    """``$MOLP2S_FIT``, else ``<database>.fit.nc`` beside the database, which the prepare step has fitted."""
    given = given_path("MOLP2S_FIT", "fit file", "make one with `molp2s fit`")
    if given is not None:
        return given
    path = default_fit_path(database_path())
    if not path.exists():
        raise FileNotFoundError(f"no fit at {path}: {NOT_PREPARED}")
    return path


def fit():
    """The saved fit at ``fit_path()``, read once per path."""
    return _fit(str(fit_path()))


@functools.cache
def _fit(path: str):
    import arviz as az

    return az.from_netcdf(path)


def fit_mismatch() -> str | None:
    """How the fit's data differs from the database's (``bayes.provenance.mismatch``); None when it matches."""
    return _fit_mismatch(str(fit_path()), str(database_path()))


@functools.cache
def _fit_mismatch(fit_file: str, database_file: str) -> str | None:
    from ..bayes import provenance

    return provenance.mismatch(_fit(fit_file), _connection(database_file))
