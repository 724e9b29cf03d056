"""What a report page reads: the database, the saved fit and the seed, from the environment.

``molp2s report`` sets these variables before it renders; ``quarto render reports/``
reads the same ones, and where they are unset a page builds the default database
from data/ (and fits the default model) under ``reports/_build/`` by itself.

- ``MOLP2S_DB``: the DuckDB database (read-only here);
- ``MOLP2S_FIT``: a fit saved by ``molp2s fit`` (NetCDF); default ``<database>.fit.nc``;
- ``MOLP2S_SEED``: the seed of every bootstrap and subsample on the pages (default 0);
- ``MOLP2S_BOOTSTRAP``: bootstrap replicates (default: metrics.DEFAULT_DRAWS).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import duckdb

from .. import metrics, store
from ..defaults import REPORTS, load_default_data
from ..notices import silence_known_notices

silence_known_notices()  # every page imports this module first

BUILD = REPORTS / "_build"


def seed() -> int:
    return int(os.environ.get("MOLP2S_SEED", "0"))


def bootstrap_draws() -> int:
    return int(os.environ.get("MOLP2S_BOOTSTRAP", str(metrics.DEFAULT_DRAWS)))


def database_path() -> Path:
    """``$MOLP2S_DB``, else the default database, built from data/ on first use."""
    if os.environ.get("MOLP2S_DB"):
        return Path(os.environ["MOLP2S_DB"])
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


@functools.cache
def database() -> duckdb.DuckDBPyConnection:
    path = database_path()
    con = store.connect(path, read_only=True)
    store.require_benchmark(con, str(path))
    return con


@functools.cache
def channel_table():
    """The database's channel names, spanners and labels (``metrics.read_channel_table``)."""
    return metrics.read_channel_table(database())


def fit_path() -> Path:
    """``$MOLP2S_FIT``, else ``<database>.fit.nc`` beside the database, sampled with the defaults on first use."""
    if os.environ.get("MOLP2S_FIT"):
        path = Path(os.environ["MOLP2S_FIT"])
        if not path.exists():
            raise FileNotFoundError(f"MOLP2S_FIT={path}: no such fit file (make one with `molp2s fit`)")
        return path
    path = database_path().with_suffix(".fit.nc")
    if not path.exists():
        from ..bayes import data as bayes_data
        from ..bayes import fit as bayes_fit

        # the posterior page shows LOO against the model without family effects: ask for it
        bayes_fit.fit(bayes_data.read_model_data(database()), seed=seed(), loo=True,
                      progressbar=bayes_fit.show_progress()).to_netcdf(str(path))
    return path


@functools.cache
def fit():
    import arviz as az

    return az.from_netcdf(str(fit_path()))
