"""The report site: ``report``."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_DRAWS, REPORTS, report_folder
from ..errors import UsageError
from ..lazy import lazy_import
from .core import command, fail
from .params import SeedOption

store = lazy_import("molp2s_stats.store")


@command("report")
def report_command(
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            help="Database to report on; default: the default data, built under reports/_build in a checkout "
            "(molp2s-report/_build in the working folder for an installed package).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Folder for the site (HTML pages, tables/ with CSV and LaTeX); default: reports/_site in a "
            "checkout, molp2s-report/_site in the working folder for an installed package.",
        ),
    ] = None,
    fit_file: Annotated[
        Path | None,
        typer.Option(
            "--fit",
            help="A saved fit for the posterior page; default: <db>.fit.nc, fitted if missing or made on other data than the database holds.",
        ),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="auto (quarto if on PATH, else jupyter) | quarto | jupyter.")
    ] = "auto",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates on every page.")] = DEFAULT_DRAWS,
    seed: SeedOption = 0,
) -> None:
    """Render the report site (reports/*.qmd) for a database: with Quarto if installed, else on a Jupyter kernel.

    Example: molp2s report --db molp2s.duckdb --fit fit.nc --bootstrap 200 --out site
    """
    from ..report import render, site
    from ..report.environment import given_path

    if engine not in ("auto", "quarto", "jupyter"):
        raise UsageError("--engine must be auto, quarto or jupyter")
    if engine == "quarto" and not shutil.which("quarto"):
        raise UsageError("--engine quarto: quarto is not on PATH (use --engine jupyter)")
    env = {"MOLP2S_BOOTSTRAP": str(bootstrap)}  # the seed, database and fit: site.render_report sets them
    if db is not None and not db.exists():
        raise UsageError(store.missing_database(db, instead="leave out --db to report on the default data"))
    if fit_file is not None and not fit_file.exists():
        raise UsageError(f"{fit_file}: no such fit file (make one with `molp2s fit`)")
    out = out if out is not None else report_folder() / "_site"
    started = time.perf_counter()
    try:
        # MOLP2S_DB / MOLP2S_FIT from the user's environment count as given, as the pages would read them
        database = db.resolve() if db else given_path("MOLP2S_DB", "database", "make one with `molp2s load`")
        fit = fit_file.resolve() if fit_file else given_path("MOLP2S_FIT", "fit file", "make one with `molp2s fit`")
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from exc
    try:
        # the site is rendered beside --out and takes its place only when every page is done: an
        # interrupted or failed render leaves the previous site whole (tables/ included); on Quarto,
        # the kernels and the post-render script run on this Python (render.quarto_environment)
        used = site.render_report(
            REPORTS,
            out,
            env,
            database=database,
            fit=fit,
            seed=seed,
            engine=engine,
            log=lambda line: typer.echo(line, err=True),
        )
    except render.RenderError as exc:
        fail(f"{exc}; {out} is as it was")
    typer.echo(f"rendered the report into {out} with {used} in {time.perf_counter() - started:.0f} s")
