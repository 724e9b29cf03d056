"""The report site for a database: its files prepared (``prepare``), then its pages rendered (``render``).

Where the model must be fitted first (no fit given, none beside the database or one made on
other data) and the pages run on Jupyter, the pages that do not read the fit render while it
is made, one at a time, and the Posterior page once it is saved: the fit takes most of a
default report's time, and it leaves part of the two cores idle (its chains wait on each other
and on Python). ``benchmarks/bench_report.py --overlap-pairs N`` times the two ways side by
side. Quarto renders its whole project at once, after its pre-render step has fitted: nothing
to overlap there.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from . import prepare, render


def render_report(
    project: Path,
    out: Path,
    env: dict[str, str],
    *,
    database: Path | None,
    fit: Path | None,
    seed: int = 0,
    engine: str = "auto",
    overlap: bool = True,
    log: Callable[[str], None] = print,
) -> str:
    """Prepare the database and the fit (``prepare.prepare``) and render ``project`` into ``out``,
    which is replaced only once every page is done; returns the engine used. ``env`` carries the
    pages' other variables (seed, bootstrap); the database and fit paths are set here, absolute.
    ``overlap=False`` fits first and renders after, as Quarto does (what the benchmark compares)."""
    on_jupyter = engine == "jupyter" or (engine == "auto" and not shutil.which("quarto"))
    if fit is None and on_jupyter and overlap:
        ready = prepare.prepare(database, None, seed=seed, needs_fit=False, log=log)
        target = prepare.default_fit_path(ready.database)
        reason = prepare.stale_reason(target, ready.database)
        if reason is not None:
            log(f"{reason}: fitting the model with its defaults (a few minutes); the other pages render meanwhile")
            return _render_while_fitting(project, out, env, ready.database, target, seed=seed, log=log)
    prepared = prepare.prepare(database, fit, seed=seed, log=log)
    env = {**env, "MOLP2S_DB": str(prepared.database.resolve()), "MOLP2S_FIT": str(prepared.fit.resolve())}
    return render.render_site_replacing(
        project, out, env, engine=engine, log=log, tables_variable="MOLP2S_REPORT_TABLES"
    )


def _render_while_fitting(
    project: Path, out: Path, env: dict[str, str], database: Path, fit: Path, *, seed: int, log
) -> str:
    from ..output import replacing_folder

    _, pages = render.read_project(project)
    reading_fit = [p.source for p in pages if p.source in prepare.PAGES_READING_THE_FIT]
    other = [p.source for p in pages if p.source not in prepare.PAGES_READING_THE_FIT]
    with replacing_folder(out) as partial:
        env = {
            **env,
            "MOLP2S_DB": str(database.resolve()),
            "MOLP2S_REPORT_TABLES": str((partial / "tables").resolve()),
        }
        said = lambda line: log(line.replace(str(partial), str(out)))  # noqa: E731
        failed: list[BaseException] = []

        def pages_without_fit() -> None:
            try:
                # one page at a time: the fit's chains have the rest of the cores
                render.render_with_jupyter(project, partial, env, pages=other, workers=1, log=said)
            except BaseException as exc:  # raised in the caller's thread once the fit is done
                failed.append(exc)

        worker = threading.Thread(target=pages_without_fit, name="pages without the fit")
        worker.start()
        try:
            prepare.fit_database(database, fit, seed=seed, log=log)
        finally:
            worker.join()
        if failed:
            raise failed[0]
        if reading_fit:
            render.render_with_jupyter(
                project, partial, {**env, "MOLP2S_FIT": str(fit.resolve())}, pages=reading_fit, log=said
            )
    return "jupyter"
