"""The report site for a database: its files prepared (``prepare``), then its pages rendered (``render``).

What ``molp2s report`` does, callable from Python with the same guarantees: the database and
the fit each written whole before any page reads it, and the site replaced only once every page
is done.

When the fit has to be made, the pages that do not read it render while the fit's last part
runs (on Jupyter, where the render is ours): the LOO comparison and the saving, 10–15% of the
fit's time. Sampling keeps both cores of a 2-core machine busy, and rendering pages beside
it was slower (203 s against 190 s fitting first, measured side by side on the default data,
2026-12-07); the last part leaves a little of them idle, and rendering beside it took the
stretch from the end of sampling to the site from 54.6 to 53.0 s and from 62.8 to 57.0 s (two
paired runs, 2026-12-07). The Posterior page waits for the fit file.

The page workers start before all that: each starts its kernel and imports what the pages
import (a second core is free while the database is built), so the first pages begin at the
end of sampling without a kernel's start and the pages' imports. From the end of sampling to
the site: 69.5, 57.4, 55.7 s before, 64.6, 54.9, 51.6 s after (three rounds alternated, the
default database built and the fit made each run, 2026-12-07).

Until the fit is made, the page kernels run at a lower CPU priority (``render.YIELDING_NICENESS``),
their scheduler group too where Linux groups processes by session (each kernel has a session of
its own, so a thread's priority alone counted only inside it): the LOO comparison, which the
Posterior page waits for, took 13–23 s beside two page kernels at the kernels' own lower thread
priority, 7.4 s with their group's, and 6.5 s alone. From the end of sampling to the site: 49.3,
52.6, 54.1 s with the threads' priority only, 48.6, 42.7, 42.6 s with the group's (three rounds
alternated, 2026-12-08).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .. import store
from ..errors import UsageError
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
    log: Callable[[str], None] = print,
) -> str:
    """Prepare the database and the fit (``prepare.prepare``) and render ``project`` into ``out``,
    which is replaced only once every page is done; returns the engine used. ``env`` carries the
    pages' other variables (bootstrap replicates; the seed, ``seed`` where it has none); the
    database and fit paths are set here, absolute (Quarto runs each page in its own folder, not in
    the caller's). A database or fit that is not there is a ``UsageError`` naming it."""
    if database is not None and not database.exists():
        raise UsageError(store.missing_database(database))
    database_path = database if database is not None else prepare.default_database()  # built by prepare_fit
    fit_path = fit if fit is not None else prepare.default_fit_path(database_path)
    env = {
        "MOLP2S_SEED": str(seed),
        **env,
        "MOLP2S_DB": str(database_path.resolve()),
        "MOLP2S_FIT": str(fit_path.resolve()),
    }

    def prepare_fit(on_sampled: Callable[[], None] | None = None) -> None:
        try:
            prepare.prepare(database, fit, seed=seed, log=log, on_sampled=on_sampled)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from exc

    def render_site(**jupyter) -> str:
        return render.render_site_replacing(
            project, out, env, engine=engine, log=log, tables_variable="MOLP2S_REPORT_TABLES", **jupyter
        )

    if render.chosen_engine(engine) != "jupyter":
        prepare_fit()  # Quarto's own pre-render step then finds it made
        return render_site()
    return _render_beside_the_fit(prepare_fit, render_site)


def _render_beside_the_fit(prepare_fit: Callable, render_site: Callable) -> str:
    """``prepare_fit``, with the site rendering in a thread started at once: its workers start their
    kernels and import what the pages import while the database is built and the fit samples,
    and take their first pages once the fit's sampling is over (or, where no fit is made, once the
    prepare step is done); the pages that read the fit wait for it. A failed fit stops the render
    and is raised; the old site stays as it was."""
    sampled, fit_made = render.Gate(), render.Gate()
    outcome: dict[str, object] = {}

    def rendering() -> None:
        try:
            outcome["engine"] = render_site(
                gates={page: fit_made for page in prepare.PAGES_READING_THE_FIT},
                begin=sampled,
                yield_until=fit_made,  # the fit's last part (LOO, the saving) before the pages that can wait
                pre_render=False,  # the prepare step is this function's own
            )
        except BaseException as exc:  # raised in the caller's thread below
            outcome["error"] = exc

    renderer = threading.Thread(target=rendering, name="molp2s-report-pages")
    renderer.start()
    try:
        prepare_fit(on_sampled=sampled.open)
        fit_made.open()  # first: a worker woken by `sampled` (no fit was made) finds nothing to yield to
        sampled.open()
    except BaseException as exc:  # an interrupt included: no worker is left waiting on a gate
        for gate in (sampled, fit_made):  # no page starts, if none has; the pages under way finish
            if not gate.settled:
                gate.fail(exc)
        renderer.join()
        raise
    renderer.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["engine"]
