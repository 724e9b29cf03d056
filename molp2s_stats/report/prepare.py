"""Everything the report's pages read, made before any page runs: the database and the fit.

The pages only open files (``report.context``); this step makes them. ``molp2s report``
calls ``prepare`` before it renders, and the report project runs it as Quarto's pre-render
script (``reports/_prepare.py``), so ``quarto render reports/`` gets the same files.

- No database given: the default one, built from the embedded data under
  ``reports/_build/`` the first time.
- No fit given: ``<database>.fit.nc``, fitted with the defaults when it is missing or was
  made on other data than the database now holds (a model loaded since, say).
  A fit the user names is theirs: never refitted; the Posterior page says at its top when
  it does not match the database.

Each file is written beside its final name and renamed into place only when whole, so an
interrupted build or fit leaves nothing that a later run would trust.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..defaults import report_folder
from ..output import replacing


def default_database() -> Path:
    """The default data's database: ``_build/default.duckdb`` in the report folder (``reports/`` in a
    checkout, ``molp2s-report/`` in the working folder for an installed package)."""
    return report_folder() / "_build" / "default.duckdb"


# The report's pages that read the fit (tests/report/test_prepare.py checks the list against
# the pages): rendering only other pages needs no fit, so none is made for them.
PAGES_READING_THE_FIT = ("posterior.qmd",)


@dataclass(frozen=True)
class Prepared:
    database: Path
    fit: Path | None  # None when no page to be rendered reads one
    fitted: bool  # whether this call ran the fit


def default_fit_path(database: Path) -> Path:
    return database.with_suffix(".fit.nc")


def build_default_database(path: Path | None = None) -> Path:
    """The default database at ``path`` (default: ``default_database()``), built from the embedded
    data when it is not there yet."""
    path = path or default_database()
    if path.exists():
        return path
    from ..ingest.default_data import load_default_data

    path.parent.mkdir(parents=True, exist_ok=True)
    # DuckDB writes its own file (and a .wal beside it) by name: build under a temporary name,
    # closed before the rename, so a failed build leaves no database behind
    partial = path.with_name(f".{path.stem}.partial-{os.getpid()}.duckdb")
    try:
        con = store.connect(partial)
        try:
            load_default_data(con)
        finally:
            con.close()
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
        partial.with_name(partial.name + ".wal").unlink(missing_ok=True)
    return path


def prepared_database(database: Path | None) -> Path:
    """``database``, which must exist, or the default database, built the first time."""
    if database is None:
        return build_default_database()
    if not database.exists():
        raise FileNotFoundError(store.missing_database(database))
    return database


def stale_reason(fit: Path, database: Path) -> str | None:
    """Why ``fit`` cannot serve ``database`` (missing, or made on other data); None when it can."""
    if not fit.exists():
        return f"no fit at {fit}"
    import arviz as az

    from ..bayes import provenance

    con = store.connect(database, read_only=True)
    try:
        mismatch = provenance.mismatch(az.from_netcdf(str(fit)), con)
    finally:
        con.close()
    return None if mismatch is None else f"{fit} may not describe {database} ({mismatch})"


def fit_database(
    database: Path,
    fit: Path,
    *,
    seed: int = 0,
    log: Callable[[str], None] = print,
    on_sampled: Callable[[], None] | None = None,
) -> Path:
    """Fit the model with its defaults to ``database`` (LOO included: the Posterior page shows it)
    and save it at ``fit``, recording what it was fitted on; the old file is replaced only once the
    new one is whole. ``on_sampled``: ``bayes.fit.fit``'s, called once the attempts are over."""
    from ..bayes import data as bayes_data
    from ..bayes import fit as bayes_fit
    from ..bayes import health, provenance
    from ..bayes.progress import Progress

    con = store.connect(database, read_only=True)
    try:
        data = bayes_data.read_model_data(con)
        progress = Progress()
        idata = bayes_fit.fit(
            data,
            seed=seed,
            loo=True,
            progress=progress,
            on_estimate=lambda estimate: log(
                f"fitting the model for the report: {estimate.line(bayes_fit.default_budget(estimate))}"
            ),
            # where each attempt stopped and what its gate saw (the progress lines name the next
            # reading of the gate, not the one that ended the run), as `molp2s fit` prints it
            on_attempt=lambda row: log(health.attempt_line(row)),
            on_sampled=on_sampled,
        )
        provenance.record(idata, con)
    finally:
        con.close()
    with replacing(fit) as partial:
        idata.to_netcdf(str(partial))
    return fit


def prepare(
    database: Path | None = None,
    fit: Path | None = None,
    *,
    seed: int = 0,
    needs_fit: bool = True,
    log: Callable[[str], None] = print,
    on_sampled: Callable[[], None] | None = None,
) -> Prepared:
    """The database and the fit the pages will read, made or remade where needed (module docstring);
    ``needs_fit=False`` (no page to render reads the fit) leaves a missing or stale fit alone.
    ``on_sampled`` is called during a fit, once its sampling is over (``fit_database``); never
    when no fit is made."""
    database = prepared_database(database)
    if fit is not None:
        if not fit.exists():
            raise FileNotFoundError(f"{fit}: no such fit file")
        return Prepared(database, fit, fitted=False)
    fit = default_fit_path(database)
    if not needs_fit:
        return Prepared(database, fit if fit.exists() else None, fitted=False)
    reason = stale_reason(fit, database)
    if reason is None:
        return Prepared(database, fit, fitted=False)
    log(f"{reason}: fitting the model with its defaults (a few minutes)")
    return Prepared(database, fit_database(database, fit, seed=seed, log=log, on_sampled=on_sampled), fitted=True)


def pages_to_render() -> list[str] | None:
    """The pages Quarto is about to render, as it tells a pre-render script: newline-separated in
    ``QUARTO_PROJECT_INPUT_FILES``, or in the file ``QUARTO_USE_FILE_FOR_PROJECT_INPUT_FILES`` names
    (quarto.org/docs/projects/scripts.html); None when neither is set (everything, then)."""
    listing_file = os.environ.get("QUARTO_USE_FILE_FOR_PROJECT_INPUT_FILES")
    listing = Path(listing_file).read_text() if listing_file else os.environ.get("QUARTO_PROJECT_INPUT_FILES")
    if listing is None:
        return None
    return [Path(line.strip()).name for line in listing.splitlines() if line.strip()]


def main() -> int:
    """Quarto's pre-render step: prepare what ``MOLP2S_DB`` and ``MOLP2S_FIT`` name (or the defaults)."""
    from .environment import given_path, seed

    pages = pages_to_render()
    try:
        database = given_path("MOLP2S_DB", "database", "make one with `molp2s load`")
        fit = given_path("MOLP2S_FIT", "fit file", "make one with `molp2s fit`")
        prepared = prepare(
            database,
            fit,
            seed=seed(),
            needs_fit=pages is None or any(page in PAGES_READING_THE_FIT for page in pages),
            log=lambda line: print(line, file=sys.stderr),
        )
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"report data: {prepared.database}; fit: {prepared.fit}", file=sys.stderr)
    return 0
