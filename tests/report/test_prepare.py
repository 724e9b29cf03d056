"""The prepare step: the pages read a database and a fit that were made, whole, before they ran,
and a fit made on other data than its database holds is refitted (ours) or flagged (the user's)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import arviz as az
import numpy as np
import pytest

from molp2s_stats import store
from molp2s_stats.bayes import provenance
from molp2s_stats.defaults import REPORTS
from molp2s_stats.ingest import load
from molp2s_stats.report import prepare
from tests.support.tiny_benchmark import write_benchmark, write_responses


@pytest.fixture
def tiny_db(tmp_path) -> Path:
    """The tiny benchmark with model m1 loaded (m2's file is left for a test to load later)."""
    responses = write_responses(tmp_path / "responses")
    db = tmp_path / "runs.duckdb"
    con = store.connect(db)
    load(con, benchmark=write_benchmark(tmp_path / "benchmark"), responses=[responses[0]])
    con.close()
    return db


def saved_fit(path: Path, db: Path | None) -> Path:
    """A stand-in fit (no sampling: what is checked here is the record it carries), recorded
    against ``db``'s contents, or carrying no record when ``db`` is None."""
    idata = az.from_dict(posterior={"x": np.zeros((1, 2))})
    if db is not None:
        con = store.connect(db, read_only=True)
        provenance.record(idata, con)
        con.close()
    idata.to_netcdf(str(path))
    return path


def load_m2(db: Path, tmp_path: Path) -> None:
    con = store.connect(db)
    load(con, responses=[tmp_path / "responses" / "m2.csv"])
    con.close()


def test_a_fit_records_the_database_it_was_fitted_on_and_matches_it(tiny_db):
    fit = saved_fit(tiny_db.with_suffix(".fit.nc"), tiny_db)
    record = provenance.recorded(az.from_netcdf(str(fit)))
    assert record["models"] == ["m1"] and len(record["loads"]) == 1 and len(record["benchmark"]) == 1
    assert prepare.stale_reason(fit, tiny_db) is None


def test_a_model_loaded_after_the_fit_makes_it_stale_and_says_which(tiny_db, tmp_path):
    fit = saved_fit(tiny_db.with_suffix(".fit.nc"), tiny_db)
    load_m2(tiny_db, tmp_path)
    assert prepare.stale_reason(fit, tiny_db) == f"{fit} may not describe {tiny_db} (models loaded since: m2)"


def test_a_fit_without_a_record_is_not_trusted(tiny_db):
    fit = saved_fit(tiny_db.with_suffix(".fit.nc"), None)
    assert "does not record which database" in prepare.stale_reason(fit, tiny_db)
    assert prepare.stale_reason(tiny_db.with_suffix(".none.nc"), tiny_db).startswith("no fit at ")


@pytest.fixture
def fits(monkeypatch):
    """prepare's fitting step replaced by one that writes a recorded stand-in (the sampler is
    tested in tests/bayes), so that what is checked is when prepare fits, not how."""
    calls = []

    def fake_fit(database, fit, *, seed=0, log=print, on_sampled=None):
        calls.append(fit)
        return saved_fit(fit, database)

    monkeypatch.setattr(prepare, "fit_database", fake_fit)
    return calls


def test_prepare_fits_when_missing_reuses_when_current_and_refits_after_a_load(tiny_db, tmp_path, fits):
    first = prepare.prepare(tiny_db, log=lambda line: None)
    assert first.fitted and first.fit == tiny_db.with_suffix(".fit.nc") and fits == [first.fit]
    again = prepare.prepare(tiny_db, log=lambda line: None)
    assert not again.fitted and len(fits) == 1
    load_m2(tiny_db, tmp_path)
    said = []
    third = prepare.prepare(tiny_db, log=said.append)
    assert third.fitted and len(fits) == 2
    assert said == [
        f"{third.fit} may not describe {tiny_db} (models loaded since: m2): "
        "fitting the model with its defaults (a few minutes)"
    ]


def test_a_fit_the_user_names_is_never_refitted(tiny_db, tmp_path, fits):
    theirs = saved_fit(tmp_path / "theirs.nc", tiny_db)
    load_m2(tiny_db, tmp_path)
    prepared = prepare.prepare(tiny_db, theirs, log=lambda line: None)
    assert prepared.fit == theirs and not prepared.fitted and fits == []
    with pytest.raises(FileNotFoundError, match="no such fit file"):
        prepare.prepare(tiny_db, tmp_path / "missing.nc")


def test_pages_that_read_no_fit_get_none_made(tiny_db, fits):
    prepared = prepare.prepare(tiny_db, needs_fit=False)
    assert prepared.fit is None and fits == []


def test_a_failed_fit_leaves_the_old_fit_file_whole(tiny_db, tmp_path, monkeypatch):
    fit = saved_fit(tiny_db.with_suffix(".fit.nc"), None)  # stale: no record
    before = fit.read_bytes()

    def interrupted(database, path, *, seed=0, log=print, on_sampled=None):
        from molp2s_stats.output import replacing

        with replacing(path) as partial:
            partial.write_bytes(b"half a fit")
            raise KeyboardInterrupt

    monkeypatch.setattr(prepare, "fit_database", interrupted)
    with pytest.raises(KeyboardInterrupt):
        prepare.prepare(tiny_db, log=lambda line: None)
    assert fit.read_bytes() == before and [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_the_pre_render_script_is_told_which_pages_render(monkeypatch, tmp_path):
    monkeypatch.setenv("QUARTO_PROJECT_INPUT_FILES", "leaderboard.qmd\nsub/posterior.qmd\n")
    assert prepare.pages_to_render() == ["leaderboard.qmd", "posterior.qmd"]
    listing = tmp_path / "inputs.txt"
    listing.write_text("index.qmd\n")
    monkeypatch.setenv("QUARTO_USE_FILE_FOR_PROJECT_INPUT_FILES", str(listing))
    assert prepare.pages_to_render() == ["index.qmd"]


def test_every_page_that_reads_the_fit_is_listed():
    """A page that opens the fit but is missing from the list would render, alone, without one."""
    reading = sorted(p.name for p in REPORTS.glob("*.qmd") if re.search(r"context\.fit\(", p.read_text()))
    assert reading == sorted(prepare.PAGES_READING_THE_FIT)


def test_the_report_project_runs_prepare_before_its_pages():
    import yaml

    config = yaml.safe_load((REPORTS / "_quarto.yml").read_text())
    assert config["project"]["pre-render"] == ["_prepare.py"]
    assert "from molp2s_stats.report.prepare import main" in (REPORTS / "_prepare.py").read_text()


def test_the_record_survives_netcdf_as_json(tiny_db, tmp_path):
    fit = saved_fit(tmp_path / "f.nc", tiny_db)
    text = az.from_netcdf(str(fit)).posterior.attrs[provenance.ATTRIBUTE]
    assert set(json.loads(text)) == {"benchmark", "loads", "models", "channels"}


def test_an_installed_package_builds_the_report_in_the_working_folder(monkeypatch, tmp_path):
    """In a checkout the default database and site live under reports/; an installed package's reports/
    is inside site-packages, so there they go to molp2s-report/ in the folder the user works in
    (tests/report/test_wheel.py renders the report that way, with no --out)."""
    from molp2s_stats import defaults
    from molp2s_stats.report import prepare as prepare_module

    assert defaults.in_checkout() and defaults.report_folder() == defaults.REPORTS
    monkeypatch.setattr(defaults, "REPORTS", defaults._PACKAGE / "reports")  # the wheel's layout
    monkeypatch.chdir(tmp_path)
    assert not defaults.in_checkout()
    assert prepare_module.default_database() == tmp_path / "molp2s-report" / "_build" / "default.duckdb"


def test_the_reports_fit_says_where_each_attempt_stopped(tiny_db, tmp_path, monkeypatch):
    """The progress lines name the next reading of the gate; the attempt's own line, as `molp2s fit`
    prints it, says how many draws it kept and what the gate saw."""
    from molp2s_stats.bayes import fit as bayes_fit
    from molp2s_stats.bayes import health

    row = {
        "attempt": 1,
        "action": "first run",
        "seed": 0,
        "chains": 4,
        "tune": 300,
        "draws_per_chain": 1000,
        "target_accept": 0.8,
        "low_rank": False,
        "seconds": 61.0,
        "chains_kept": 4,
        "r_hat_max": 1.004,
        "ess_bulk_min": 452.0,
        "ess_bulk_min_parameter": "family_channel_sd",
        "ess_tail_min": 610.0,
        "divergences": 0,
        "bfmi_min": 0.8,
        "passed": True,
    }

    def one_attempt(data, *, on_attempt, **options):
        on_attempt(row)
        return az.from_dict(posterior={"x": np.zeros((1, 2))})

    monkeypatch.setattr(bayes_fit, "fit", one_attempt)
    said = []
    prepare.fit_database(tiny_db, tmp_path / "f.nc", log=said.append)
    assert said == [
        "attempt 1 (first run): 4 chains × (300 + 1000), target acceptance 0.8, 61 s; gate passed on 4 chains: "
        "max R-hat 1.004, min bulk ESS 452 (family_channel_sd), min tail ESS 610, 0 divergences"
    ]
    assert said[0] == health.attempt_line(row)


# --- the report site: prepared, then rendered ----------------------------------------------------


@pytest.fixture
def renders(monkeypatch):
    """render.render_site replaced by one that records its environment and writes a page, so that
    what is checked is what the render is given, not the pages."""
    from molp2s_stats.report import render

    calls = []

    def fake_render(project, out, env, *, engine="auto", log=print, **jupyter):
        if jupyter.get("begin") is not None:  # the Jupyter route starts its kernels at once: pages wait
            jupyter["begin"].wait()
        # the pages run only once the database and the fit they read are there, whole (this fit's
        # stand-in never says its sampling is over: test_pages_render_beside_the_end_of_a_fit)
        assert Path(env["MOLP2S_DB"]).exists() and Path(env["MOLP2S_FIT"]).exists()
        calls.append({"env": dict(env), "out": out, "engine": engine, **jupyter})
        (out / "index.html").write_text("a page")
        return engine

    monkeypatch.setattr(render, "render_site", fake_render)
    return calls


def test_the_report_is_fitted_before_its_pages_and_replaces_the_site_when_done(tiny_db, tmp_path, fits, renders):
    from molp2s_stats.report import site

    out = tmp_path / "site"
    used = site.render_report(
        REPORTS, out, {"MOLP2S_SEED": "3"}, database=tiny_db, fit=None, seed=3, engine="jupyter", log=lambda _: None
    )
    (call,) = renders
    assert used == "jupyter" and fits == [tiny_db.with_suffix(".fit.nc")]
    assert call["env"]["MOLP2S_FIT"] == str(fits[0].resolve()) and call["env"]["MOLP2S_SEED"] == "3"
    assert call["env"]["MOLP2S_DB"] == str(tiny_db.resolve())
    assert call["env"]["MOLP2S_REPORT_TABLES"] == str((call["out"] / "tables").resolve())
    assert call["out"] != out and not call["out"].exists() and (out / "index.html").read_text() == "a page"


def test_a_fit_the_user_names_is_rendered_as_it_is(tiny_db, tmp_path, fits, renders):
    from molp2s_stats.report import site

    theirs = saved_fit(tmp_path / "theirs.nc", tiny_db)
    load_m2(tiny_db, tmp_path)  # the fit no longer matches: the Posterior page says so, nothing refits
    site.render_report(REPORTS, tmp_path / "a", {}, database=tiny_db, fit=theirs, engine="jupyter", log=lambda _: None)
    assert fits == [] and renders[0]["env"]["MOLP2S_FIT"] == str(theirs.resolve())


# --- pages beside the end of a fit ----------------------------------------------------------------


class FitInTwoParts:
    """prepare's fitting step as a stand-in in two parts: "sampling", then ``on_sampled``, then the
    rest (the LOO refit in the real one), which waits until a page has rendered and then writes
    the fit or, with ``fails``, raises."""

    def __init__(self, fails: bool = False):
        self.fails = fails
        self.render_called = threading.Event()
        self.page_rendered = threading.Event()

    def __call__(self, database, fit, *, seed=0, log=print, on_sampled=None):
        # the render (its kernels, on the Jupyter route) starts while the fit samples
        assert self.render_called.wait(timeout=60), "the render did not start before the end of sampling"
        on_sampled()
        assert self.page_rendered.wait(timeout=60), "no page rendered while the fit was being finished"
        if self.fails:
            raise RuntimeError("the sampler died")
        return saved_fit(fit, database)


@pytest.fixture
def pages_of(monkeypatch):
    """render.render_site replaced by one that renders the overview at once and the Posterior page
    when its gate lets it, recording what it saw; returns the record and a way to pair it with a fit."""
    from molp2s_stats.report import render

    seen = {}

    def fake_render(
        project, out, env, *, engine="auto", log=print, gates=None, begin=None, yield_until=None, pre_render=True
    ):
        seen["pre_render"] = pre_render
        seen["fit"].render_called.set()
        begin.wait()
        fit = Path(env["MOLP2S_FIT"])
        seen["fit_there_at_the_first_page"] = fit.exists()
        (out / "index.html").write_text("the overview")
        seen["fit"].page_rendered.set()
        gates["posterior.qmd"].wait()
        seen["fit_there_at_posterior"] = fit.exists()
        (out / "posterior.html").write_text("the posterior")
        return engine

    monkeypatch.setattr(render, "render_site", fake_render)

    def with_fit(fit: FitInTwoParts) -> dict:
        monkeypatch.setattr(prepare, "fit_database", fit)
        seen["fit"] = fit
        return seen

    return with_fit


def test_pages_render_beside_the_end_of_a_fit_and_the_posterior_waits_for_it(tiny_db, tmp_path, pages_of):
    from molp2s_stats.report import site

    seen = pages_of(FitInTwoParts())
    out = tmp_path / "site"
    used = site.render_report(REPORTS, out, {}, database=tiny_db, fit=None, engine="jupyter", log=lambda _: None)
    assert used == "jupyter" and {p.name for p in out.iterdir()} == {"index.html", "posterior.html"}
    assert not seen["fit_there_at_the_first_page"] and seen["fit_there_at_posterior"]
    assert seen["pre_render"] is False  # the prepare step, which the pre-render script would repeat, is done


def test_a_fit_that_fails_after_its_sampling_stops_the_render_and_leaves_the_old_site(tiny_db, tmp_path, pages_of):
    from molp2s_stats.report import site

    pages_of(FitInTwoParts(fails=True))
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("the old overview")
    with pytest.raises(RuntimeError, match="the sampler died"):
        site.render_report(REPORTS, out, {}, database=tiny_db, fit=None, engine="jupyter", log=lambda _: None)
    assert [p.name for p in out.iterdir()] == ["index.html"] and (out / "index.html").read_text() == "the old overview"
    assert not tiny_db.with_suffix(".fit.nc").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


def test_a_fit_that_fails_before_its_sampling_ends_renders_no_page_and_leaves_the_old_site(tiny_db, tmp_path, pages_of):
    from molp2s_stats.report import site

    class FailsWhileSampling(FitInTwoParts):
        def __call__(self, database, fit, *, seed=0, log=print, on_sampled=None):
            assert self.render_called.wait(timeout=60)
            raise RuntimeError("the sampler died while sampling")

    seen = pages_of(FailsWhileSampling())
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("the old overview")
    with pytest.raises(RuntimeError, match="died while sampling"):
        site.render_report(REPORTS, out, {}, database=tiny_db, fit=None, engine="jupyter", log=lambda _: None)
    assert not seen["fit"].page_rendered.is_set()  # the render waited for the end of sampling, which never came
    assert [p.name for p in out.iterdir()] == ["index.html"] and (out / "index.html").read_text() == "the old overview"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".site")] == []


# --- the render's gates, on real kernels ----------------------------------------------------------

STUB_PAGE = '---\ntitle: "{name}"\n---\n\n```{{python}}\nprint("{name}")\n```\n'


def stub_project(root: Path, names: list[str]) -> Path:
    """A project of stub pages rendered in ``names``' order, with no pre-render step."""
    import yaml

    root.mkdir()
    config = {"project": {"type": "website", "render": [f"{name}.qmd" for name in names]}, "execute": {"echo": False}}
    (root / "_quarto.yml").write_text(yaml.safe_dump(config))
    for name in names:
        (root / f"{name}.qmd").write_text(STUB_PAGE.format(name=name))
    return root


def test_a_held_page_waits_for_its_gate_and_goes_first_once_it_opens(tmp_path, warm_kernels):
    from molp2s_stats.report import render

    project = stub_project(tmp_path / "project", ["held", "one", "two"])
    gate, rendered = render.Gate(), []

    def log(line: str) -> None:
        rendered.append(line.split()[1])
        gate.open()  # what the held page reads is made once the first page is done

    render.render_with_jupyter(project, tmp_path / "site", {}, log=log, workers=1, gates={"held.qmd": gate})
    assert rendered == ["one.qmd", "held.qmd", "two.qmd"]


def test_a_failed_gate_stops_the_render_with_its_reason(tmp_path, warm_kernels):
    from molp2s_stats.report import render

    project = stub_project(tmp_path / "project", ["held", "one", "two"])
    gate, rendered = render.Gate(), []

    def log(line: str) -> None:
        rendered.append(line.split()[1])
        gate.fail(RuntimeError("the sampler died"))

    with pytest.raises(render.RenderError, match="the sampler died"):
        render.render_with_jupyter(project, tmp_path / "site", {}, log=log, workers=1, gates={"held.qmd": gate})
    assert rendered == ["one.qmd"]


def test_page_imports_are_the_top_level_imports_of_the_cells():
    from molp2s_stats.report import render

    cells = [
        "import polars as pl, json\nfrom molp2s_stats.report import context, tables\n",
        "%matplotlib inline\nimport math",  # a magic: not Python, passed over
        "def f():\n    import tabnanny\nfrom . import here\nfrom os.path import *\nimport json",
    ]
    assert render.page_imports(cells) == [
        "polars",
        "json",
        "molp2s_stats.report",
        "molp2s_stats.report.context",
        "molp2s_stats.report.tables",
        "os.path",
    ]


FIRST_SEEN_PAGE = """---
title: "first"
---

```{python}
import sys
print("imported before the page:", "tabnanny" in sys.modules)
```

```{python}
import tabnanny
```
"""


def test_with_begin_the_kernels_import_the_pages_modules_before_the_first_page(tmp_path, warm_kernels):
    from molp2s_stats.report import render

    project = stub_project(tmp_path / "project", ["first"])
    (project / "first.qmd").write_text(FIRST_SEEN_PAGE)
    begin, rendered, raised = render.Gate(), [], []

    def rendering() -> None:
        try:
            render.render_with_jupyter(project, tmp_path / "site", {}, log=rendered.append, workers=1, begin=begin)
        except BaseException as exc:  # seen by the test below, not lost with the thread
            raised.append(exc)

    render_thread = threading.Thread(target=rendering)
    render_thread.start()
    time.sleep(3)  # a warm kernel starts in about 0.3 s and this page runs in about 0.5 s
    assert rendered == []  # no page before the gate opens
    begin.open()
    render_thread.join(timeout=120)
    assert not render_thread.is_alive() and raised == []
    assert "imported before the page: True" in (tmp_path / "site" / "first.html").read_text()
    # the same page without a begin gate: its kernel imports the module only when the page does
    render.render_with_jupyter(project, tmp_path / "site2", {}, log=lambda _: None, workers=1)
    assert "imported before the page: False" in (tmp_path / "site2" / "first.html").read_text()


def test_a_failed_begin_stops_the_render_before_any_page(tmp_path, warm_kernels):
    from molp2s_stats.report import render

    project = stub_project(tmp_path / "project", ["one", "two"])
    begin, rendered = render.Gate(), []
    begin.fail(RuntimeError("the database could not be built"))
    with pytest.raises(render.RenderError, match="the database could not be built"):
        render.render_with_jupyter(project, tmp_path / "site", {}, log=rendered.append, begin=begin)
    assert rendered == []


def test_kernels_yield_the_cpu_until_the_gate_settles_then_take_their_own_priority_back(tmp_path):
    """While the fit finishes, the page kernels run at a lower priority, from their start (the imports of
    the warm-up included); once it is made they run at this process's again, where the system lets it
    raise a priority back. The same for the kernel's scheduler group where Linux groups processes by
    session (a kernel has a session of its own; a thread's priority counts only within its group). On
    ipykernel's own kernels: the warm server's are forked from it, not the process the kernel manager
    started."""
    from molp2s_stats.report import render

    project = stub_project(tmp_path / "project", ["one", "two"])
    # imported by the warm-up, before any page: what priority the kernel had then
    (project / "probe_priority.py").write_text("import os\nAT_IMPORT = os.getpriority(os.PRIO_PROCESS, 0)\n")
    for name in ("one", "two"):
        (project / f"{name}.qmd").write_text(
            f'---\ntitle: "{name}"\n---\n\n```{{python}}\nimport os\nimport probe_priority\n'
            'print("niceness", os.getpriority(os.PRIO_PROCESS, 0), "at import", probe_priority.AT_IMPORT)\n'
            'print("group", *(open("/proc/self/autogroup").read().split() if os.path.exists("/proc/self/autogroup") else []))\n```\n'
        )
    own = os.getpriority(os.PRIO_PROCESS, 0)
    made = render.Gate()

    def log(line: str) -> None:
        made.open()  # the fit is made once the first page is done

    begin = render.Gate()
    begin.open()
    render.render_with_jupyter(project, tmp_path / "site", {}, log=log, workers=1, begin=begin, yield_until=made)
    first, second = ((tmp_path / "site" / f"{n}.html").read_text() for n in ("one", "two"))
    lowered = min(own + render.YIELDING_NICENESS, 19)  # Linux's lowest priority is nice 19
    may_raise = _may_raise_a_priority()
    raised = own if may_raise else lowered
    assert f"niceness {lowered} at import {lowered}" in first
    assert f"niceness {raised} at import {lowered}" in second
    ours = render._autogroup("self")
    theirs = [re.search(r"group (\S+) nice (-?\d+)", page) for page in (first, second)]
    if ours is not None:  # where the kernel has a group of its own (not under the warm server's kernels)
        assert all(theirs), "the kernels print their scheduler group"
    if ours is not None and theirs[0].group(1) != ours[0]:
        group_lowered = min(ours[1] + render.YIELDING_NICENESS, 19)
        assert int(theirs[0].group(2)) == group_lowered
        assert int(theirs[1].group(2)) == (ours[1] if may_raise else group_lowered)


def _may_raise_a_priority() -> bool:
    """Whether this user may raise a process's priority back (root, or RLIMIT_NICE allows it)."""
    import subprocess

    child = subprocess.Popen(["sleep", "10"])
    try:
        own = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, child.pid, own + 1)
        os.setpriority(os.PRIO_PROCESS, child.pid, own)
        return True
    except PermissionError:
        return False
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("modules", [[], ["json", "no_such_module_here", "os.path"]])
def test_the_warm_up_cell_runs_with_no_module_and_passes_over_one_that_fails(modules):
    from molp2s_stats.report import render

    namespace: dict = {}
    exec(render._warm_up_cell(modules).source, namespace)  # as the kernel runs it: no error either way
    assert "_name" not in namespace and "_importlib" not in namespace  # it leaves no name behind


def test_the_warm_up_cell_freezes_what_it_imported():
    """Left out of the page kernel's later garbage collections (in a fresh process: none is frozen there)."""
    import subprocess
    import sys

    from molp2s_stats.report import render

    code = (
        "import gc, sys\n"
        "before = gc.get_freeze_count()\n"
        f"exec({render._warm_up_cell(['fractions']).source!r}, {{}})\n"
        "print(before, gc.get_freeze_count(), 'fractions' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after, imported = done.stdout.split()
    assert before == "0" and int(after) > 0 and imported == "True"


def test_a_page_kernel_is_stopped_at_once_and_its_files_cleaned_up():
    """Not by a shutdown request, whose answer races with the kernel's closing sockets (ipykernel 7.4)
    and now and then printed a ZMQError traceback on the report's stderr."""
    from molp2s_stats.report import render

    calls = []

    class Kernel:
        def is_alive(self):
            return True

        def shutdown_kernel(self, now=False):
            calls.append(("shutdown", now))

        def cleanup_resources(self):
            calls.append(("cleanup",))

    render._stop_kernel(Kernel())
    assert calls == [("shutdown", True), ("cleanup",)]
