"""What a report page reads: the database, the saved fit and the seed, from the environment.

``molp2s report`` sets these variables before it renders; ``quarto render reports/``
reads the same ones, and where they are unset a page builds the default database
from data/ (and fits the default model) under ``reports/_build/`` by itself.

- ``MOLP2S_DB``: the DuckDB database (read-only here);
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

from ..stats import metrics
from .. import store
from ..defaults import REPORTS
from ..ingest.default_data import load_default_data
from ..notices import silence_known_notices

silence_known_notices()  # every page imports this module first

BUILD = REPORTS / "_build"


def seed() -> int:
    return int(os.environ.get("MOLP2S_SEED", "0"))


def bootstrap_draws() -> int:
    return int(os.environ.get("MOLP2S_BOOTSTRAP", str(metrics.DEFAULT_DRAWS)))


def _user_path(variable: str, what: str, make_it: str) -> Path:
    """``$variable`` as an absolute path that exists, relative ones read as the user meant them."""
    given = Path(os.environ[variable]).expanduser()
    if given.is_absolute():
        if not given.exists():
            raise FileNotFoundError(f"{variable}={given}: no such {what} ({make_it})")
        return given
    here = Path.cwd()
    shell = Path(os.environ["PWD"]) if os.environ.get("PWD") else None
    for folder in (here, shell):
        if folder is not None and (folder / given).exists():
            return (folder / given).resolve()
    looked = ", ".join(dict.fromkeys(str(f) for f in (here, shell) if f is not None))
    raise FileNotFoundError(
        f"{variable}={given}: no such {what} in {looked}. Quarto runs each page in the page's own folder, "
        f"so give the path from the folder you ran it in as an absolute one, e.g. "
        f"{variable}=\"$PWD/{given}\" quarto render reports/ (or use `molp2s report`); {make_it}")


def database_path() -> Path:
    """``$MOLP2S_DB`` (absolute; a relative one is resolved as the module docstring says), else the
    default database, built from data/ on first use."""
    if os.environ.get("MOLP2S_DB"):
        return _user_path("MOLP2S_DB", "database", "make one with `molp2s load`")
    path = BUILD / "default.duckdb"
    if not path.exists():
        # built under another name and renamed: a build that fails leaves no half-made database behind
        BUILD.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.duckdb")
        partial.unlink(missing_ok=True)
        con = store.connect(partial)
        try:
            load_default_data(con)
        finally:
            con.close()
        partial.rename(path)
    return path


def database() -> duckdb.DuckDBPyConnection:
    """A read-only connection to ``database_path()``, one per path for the life of the kernel."""
    return _connection(str(database_path()))


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
    """``$MOLP2S_FIT``, else ``<database>.fit.nc`` beside the database, sampled with the defaults on first use."""
    if os.environ.get("MOLP2S_FIT"):
        return _user_path("MOLP2S_FIT", "fit file", "make one with `molp2s fit`")
    path = database_path().with_suffix(".fit.nc")
    if not path.exists():
        from ..bayes import data as bayes_data
        from ..bayes import fit as bayes_fit

        # the posterior page shows LOO against the model without family effects: ask for it
        from ..bayes.progress import Progress

        progress = Progress()
        bayes_fit.fit(bayes_data.read_model_data(database()), seed=seed(), loo=True, progress=progress,
                      on_estimate=lambda estimate: progress.say(f"fitting the model for the report: {estimate.line(bayes_fit.default_budget(estimate))}"),
                      ).to_netcdf(str(path))
    return path


def fit():
    """The saved fit at ``fit_path()``, read once per path."""
    return _fit(str(fit_path()))


@functools.cache
def _fit(path: str):
    import arviz as az

    return az.from_netcdf(path)
