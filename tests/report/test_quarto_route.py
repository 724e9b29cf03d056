"""The report on the Quarto route, pinned without Quarto (it cannot be installed here).

`quarto_double/quarto.py` stands in for the `quarto` command: it does what quarto-cli
(tags 1.5 to 1.8) does at each point the report depends on, and its docstring names the
source file of each behaviour. The tests render small projects made of the real
`_quarto.yml`, `styles.css` and post-render script with stub pages (the real pages take
minutes), and check the sources themselves where the point is a setting. The fallback
renderer is held to the same options by rendering one project both ways.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from molp2s_stats.defaults import REPORTS
from molp2s_stats.report import context, render, tables
from tests.support import QUARTO_DOUBLE as DOUBLE
from tests.support.html import element_ids

CONFIG = yaml.safe_load((REPORTS / "_quarto.yml").read_text())

TABLE_PAGE = """---
title: "{name}"
---

```{{python}}
#| label: table
import polars as pl
from molp2s_stats.report import tables

frame = pl.DataFrame({{"model": ["a"], "estimate": [1.5]}})
tables.show(frame, tables.plain_table(frame, title="t"), "{name}_table")
```
"""


@pytest.fixture
def quarto(tmp_path, monkeypatch, warm_kernels):
    """The double, first on PATH as `quarto`; its kept-alive kernels recorded under tmp_path. The
    double's page kernels are the warm server's (a `python3` kernel spec found first through
    JUPYTER_PATH, forked with the pages' libraries imported): a stub page's kernel started in about
    0.2 s instead of 1.5 s, and the double starts one a page, as Quarto does."""
    bin_dir = tmp_path / "quarto-bin"
    bin_dir.mkdir()
    launcher = bin_dir / "quarto"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{DOUBLE}" "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("QUARTO_DOUBLE_STATE", str(tmp_path / "kernels"))
    for name in ("QUARTO_PYTHON", "MOLP2S_DB", "MOLP2S_FIT", "MOLP2S_REPORT_TABLES", "QUARTO_BIN_PATH", "CI"):
        monkeypatch.delenv(name, raising=False)
    return launcher


TRIVIAL_PAGE = '---\ntitle: "{name}"\n---\n\n```{{python}}\nprint("{name}")\n```\n'


# The stub pages a mini project renders: the real project's first and the overview, which the tests
# read. The double starts a kernel a page, as Quarto does (about 1.3 s each on 2 busy cores), and no
# test here reads another page: six more pages were 8 s a render.
MINI_RENDER = [CONFIG["project"]["render"][0], "index.qmd"]


def mini_project(root: Path, pages: dict[str, str] | None = None) -> Path:
    """reports/'s configuration, stylesheet and scripts, with stub pages under real page names
    (``MINI_RENDER``): the overview writes a table, the other prints its name."""
    project = root / "reports"
    project.mkdir(parents=True)
    for path in REPORTS.iterdir():
        if path.is_file() and path.suffix != ".qmd":
            shutil.copy2(path, project / path.name)
    # the stub pages read no database and no fit: nothing to prepare (test_prepare.py runs that step)
    config = yaml.safe_load((project / "_quarto.yml").read_text())
    del config["project"]["pre-render"]
    config["project"]["render"] = MINI_RENDER
    (project / "_quarto.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    for name in MINI_RENDER:
        stem = Path(name).stem
        default = TABLE_PAGE if stem == "index" else TRIVIAL_PAGE
        (project / name).write_text((pages or {}).get(stem, default.format(name=stem)))
    return project


def run_quarto(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    # PWD as the shell sets it in the folder the user typed the command in
    environment = {**os.environ, "PWD": str(cwd), **env}
    return subprocess.run(["quarto", "render", *args], cwd=cwd, env=environment, capture_output=True, text=True)


# 1. relative paths --------------------------------------------------------------------------

PATHS_PAGE = """---
title: "paths"
---

```{python}
#| label: paths
from molp2s_stats.report import context
print("db:", context.database_path())
print("fit:", context.fit_path())
```
"""


def test_relative_db_and_fit_are_read_from_the_folder_quarto_ran_in(quarto, tmp_path):
    """`MOLP2S_DB=runs.duckdb MOLP2S_FIT=fit.nc quarto render reports/` from the folder that holds
    them: the kernel runs in reports/ (notebook.py chdir), the paths still mean the user's folder."""
    work = tmp_path / "work"
    project = mini_project(work, {"index": PATHS_PAGE})
    (work / "runs.duckdb").touch()
    (work / "fit.nc").touch()
    done = run_quarto("reports/", cwd=work, MOLP2S_DB="runs.duckdb", MOLP2S_FIT="fit.nc", QUARTO_PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    page = (project / "_site" / "index.html").read_text()
    assert f"db: {work / 'runs.duckdb'}" in page and f"fit: {work / 'fit.nc'}" in page


def test_a_missing_relative_db_says_what_to_type(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path))
    monkeypatch.setenv("MOLP2S_DB", "runs.duckdb")
    with pytest.raises(FileNotFoundError) as error:
        context.database_path()
    assert str(error.value) == (
        f"MOLP2S_DB=runs.duckdb: no such database in {tmp_path}. Quarto runs each page in the page's own folder, "
        'so give the path from the folder you ran it in as an absolute one, e.g. MOLP2S_DB="$PWD/runs.duckdb" '
        "quarto render reports/ (or use `molp2s report`); make one with `molp2s load`"
    )


def test_molp2s_report_stops_on_a_missing_relative_db_with_the_advice(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from molp2s_stats.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path))
    result = CliRunner().invoke(
        app, ["report", "--engine", "jupyter", "--out", str(tmp_path / "site")], env={"MOLP2S_DB": "runs.duckdb"}
    )
    assert result.exit_code != 0
    assert 'MOLP2S_DB="$PWD/runs.duckdb"' in result.output


def test_render_with_quarto_passes_absolute_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = render.quarto_environment({"MOLP2S_DB": "runs.duckdb", "MOLP2S_FIT": "sub/fit.nc"})
    assert env["MOLP2S_DB"] == str(tmp_path / "runs.duckdb") and env["MOLP2S_FIT"] == str(tmp_path / "sub" / "fit.nc")


# 2. the kernel's Python ---------------------------------------------------------------------


def test_render_with_quarto_runs_the_kernel_on_this_python(quarto, tmp_path, monkeypatch):
    """`make report` runs .venv/bin/molp2s without activating the venv: python3 on PATH is a
    Python without the package (and without Jupyter), and Quarto never reads VIRTUAL_ENV."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    (bare / "python3").symlink_to(Path(sys.base_prefix) / "bin" / "python3")
    probe = subprocess.run(
        [str(bare / "python3"), "-c", "import nbclient, molp2s_stats"], cwd=tmp_path, capture_output=True
    )
    assert probe.returncode != 0, "the base Python has Jupyter and the package: this test needs one without"
    # the kernel spec Jupyter finds for this Python, not the warm server's: the kernel's Python is the point
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    monkeypatch.setenv("PATH", f"{quarto.parent}{os.pathsep}{bare}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    project = mini_project(tmp_path)
    render.render_with_quarto(project, tmp_path / "site", {})
    assert "a" in (tmp_path / "site" / "index.html").read_text()


# 3. tables/ in the site ---------------------------------------------------------------------


def test_tables_reach_the_site_on_the_first_render(quarto, tmp_path):
    project = mini_project(tmp_path)
    assert not (project / "tables").exists()
    done = run_quarto(str(project), cwd=tmp_path, QUARTO_PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    assert (project / "_site" / "tables" / "index_table.csv").read_text().startswith("model,estimate")
    assert "\\begin" in (project / "_site" / "tables" / "index_table.tex").read_text()


def test_post_render_script_copies_into_quarto_project_output_dir(tmp_path):
    """The script on its own, as Quarto runs it: in the project folder, the site's folder in the variable."""
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "x.csv").write_text("a\n1\n")
    shutil.copy2(REPORTS / "_copy_tables.py", tmp_path)
    site = tmp_path / "elsewhere" / "site"
    done = subprocess.run(
        [sys.executable, "_copy_tables.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "QUARTO_PROJECT_OUTPUT_DIR": str(site), "QUARTO_PROJECT_RENDER_ALL": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert (site / "tables" / "x.csv").read_text() == "a\n1\n"


# 4. a kept-alive kernel ---------------------------------------------------------------------


def test_a_page_rendered_twice_reads_the_new_database(quarto, tmp_path):
    """`quarto render reports/index.qmd` twice in a terminal, with another MOLP2S_DB the second time."""
    project = mini_project(tmp_path, {"index": PATHS_PAGE})
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    for path in (first, second):
        path.touch()
        path.with_suffix(".fit.nc").touch()
    for db in (first, second):
        done = run_quarto(
            str(project / "index.qmd"),
            cwd=tmp_path,
            MOLP2S_DB=str(db),
            QUARTO_PYTHON=sys.executable,
            QUARTO_DOUBLE_INTERACTIVE="1",
        )
        assert done.returncode == 0, done.stderr
        assert f"db: {db}" in (project / "_site" / "index.html").read_text()


def test_context_reads_the_environment_on_every_call(tmp_path, monkeypatch):
    """In one kernel, a changed MOLP2S_DB gives the new database and channel table, not the first one's."""
    from molp2s_stats import store
    from molp2s_stats.ingest import load
    from tests.support.tiny_benchmark import write_benchmark

    paths = []
    for name in ("one", "two"):
        db = tmp_path / f"{name}.duckdb"
        con = store.connect(db)
        load(con, benchmark=write_benchmark(tmp_path / f"{name}-bench"))
        con.close()
        paths.append(db)
    monkeypatch.setenv("MOLP2S_DB", str(paths[0]))
    one = context.database()
    monkeypatch.setenv("MOLP2S_DB", str(paths[1]))
    two = context.database()
    assert one is not two
    assert two.sql("PRAGMA database_list").fetchall()[0][2] == str(paths[1])


def test_a_page_that_leaves_a_result_unread_does_not_stop_the_next_page(tmp_path, monkeypatch):
    """Pages share a kernel and its cached connection: each page's connection is its own cursor, so
    an ``execute(...).fetchone()`` on one (the Health page once had one) leaves the next page free."""
    from molp2s_stats import store
    from molp2s_stats.ingest import load
    from tests.support.tiny_benchmark import write_benchmark

    db = tmp_path / "runs.duckdb"
    con = store.connect(db)
    load(con, benchmark=write_benchmark(tmp_path / "bench"))
    con.close()
    monkeypatch.setenv("MOLP2S_DB", str(db))
    first_page = context.database()
    first_page.execute("SELECT family_id FROM families").fetchone()  # one row of several: the result unfinished
    next_page = context.database()
    assert next_page.sql("SELECT count(*) FROM families").fetchall()[0][0] > 1
    assert context.channel_table().height > 0  # the kept connection is free too


# 5. no embed-resources ----------------------------------------------------------------------


def test_the_site_does_not_embed_resources():
    """Quarto's maintainers do not support embed-resources for websites (quarto-cli #11316); the
    fallback's pages stay self-contained on their own (test_report: no fetch, no script)."""
    html_format = CONFIG.get("format", {}).get("html", {})
    assert "embed-resources" not in html_format and "self-contained" not in html_format
    assert "embed-resources" not in CONFIG


# 6. one stylesheet --------------------------------------------------------------------------


def test_stylesheet_styles_no_bare_element_outside_the_fallback():
    """Under Quarto the same styles.css is on the page: a rule on bare nav, main, body, figure or
    pre would restyle Quarto's navbar and grid. Every selector starts from a class."""
    css = re.sub(r"/\*.*?\*/", "", (REPORTS / "styles.css").read_text(), flags=re.S)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]
    assert selectors
    bare = [s for s in selectors if not re.match(r"^[a-z]*\.[\w-]+", s)]
    assert bare == []


def test_fallback_page_carries_the_class_the_stylesheet_scopes_to():
    page = render.Page("a.qmd", "A")
    written = render._page_html("A", "<p>x</p>", [("a.qmd", "A")], page, "", "Site")
    assert f'<body class="{render.FALLBACK_CLASS}">' in written
    assert f".{render.FALLBACK_CLASS} > nav" in (REPORTS / "styles.css").read_text()


# 7. unique ids ------------------------------------------------------------------------------


def pandoc_slug(heading: str) -> str:
    """pandoc's auto identifier, read from its manual ("Extension: auto_identifiers"), written
    here apart from the package's render.pandoc_identifier so each checks the other."""
    text = re.sub(r"[`*_]{1,2}(?=\w)|(?<=\w)[`*_]{1,2}|\[|\]", "", heading).lower()
    text = re.sub(r"[^\w\s.-]", "", text)
    text = re.sub(r"\s+", "-", text.strip())
    return re.sub(r"^[^a-zà-ÿ]*", "", text) or "section"


def _headings_and_labels(text: str) -> tuple[list[str], list[str]]:
    cells = re.findall(r"^```\{python\}[^\n]*\n(.*?)^```", text, flags=re.S | re.M)
    prose = re.sub(r"^```\{python\}.*?^```", "", text, flags=re.S | re.M)
    headings = [pandoc_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", prose, re.M)]
    labels = [m.group(1) for cell in cells for m in re.finditer(r"^#\|\s*label:\s*(\S+)\s*$", cell, re.M)]
    return headings, labels


@pytest.mark.parametrize("page", sorted(p.name for p in REPORTS.glob("*.qmd")))
def test_no_cell_label_repeats_a_heading_id(page):
    """Quarto writes a cell's label as its div's id (quarto-cli src/core/jupyter/labels.ts, jupyter.ts)
    and gives each heading pandoc's identifier: the two must not meet on one page."""
    headings, labels = _headings_and_labels((REPORTS / page).read_text())
    assert len(set(labels)) == len(labels), "Quarto stops on a repeated cell label"
    assert set(headings) & set(labels) == set()


@pytest.mark.parametrize(
    "heading, identifier",
    [
        # pandoc's manual, "Extension: auto_identifiers": its own examples
        ("Heading identifiers in HTML", "heading-identifiers-in-html"),
        ("Maître d'hôtel", "maître-dhôtel"),
        ("*Dogs*?--in *my* house?", "dogs--in-my-house"),
        ("[HTML], [S5], or [RTF]?", "html-s5-or-rtf"),
        ("3. Applications", "applications"),
        ("33", "section"),
        # this project's headings
        ("P(reliance of A > reliance of B)", "preliance-of-a-reliance-of-b"),
        ("Ranking stability per channel at n = 100 (Table 11)", "ranking-stability-per-channel-at-n-100-table-11"),
    ],
)
def test_pandoc_identifiers(heading, identifier):
    assert pandoc_slug(heading) == identifier
    assert render.pandoc_identifier(heading.replace("*", "").replace("[", "").replace("]", "")) == identifier


def test_double_page_of_a_clashing_label_has_a_duplicate_id(quarto, tmp_path):
    """The check the site's pages get (test_report) catches the clash as Quarto would make it."""
    clash = '---\ntitle: "x"\n---\n\n## Reliance\n\n```{python}\n#| label: reliance\n1\n```\n'
    project = mini_project(tmp_path, {"index": clash})
    done = run_quarto(str(project / "index.qmd"), cwd=tmp_path, QUARTO_PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    ids = element_ids((project / "_site" / "index.html").read_text())
    assert ids.count("reliance") == 2


# 8. LaTeX the same on both routes -----------------------------------------------------------


def test_exported_latex_does_not_depend_on_quarto(tmp_path, monkeypatch):
    frame = pl.DataFrame({"model": ["a"], "estimate": [1.5]})
    table = tables.plain_table(frame, title="t")
    monkeypatch.setenv(tables.TABLES_ENV, str(tmp_path / "plain"))
    monkeypatch.delenv("QUARTO_BIN_PATH", raising=False)
    tables.save(frame, table, "x")
    monkeypatch.setenv(tables.TABLES_ENV, str(tmp_path / "quarto"))
    monkeypatch.setenv("QUARTO_BIN_PATH", "/opt/quarto/bin")  # what Quarto's launcher exports
    tables.save(frame, table, "x")
    plain = (tmp_path / "plain" / "x.tex").read_text()
    assert plain == (tmp_path / "quarto" / "x.tex").read_text()
    assert "\\begin{table}[!t]" in plain
    assert os.environ["QUARTO_BIN_PATH"] == "/opt/quarto/bin"  # left as it was


# 9. html-table-processing -------------------------------------------------------------------


def test_quarto_leaves_great_tables_html_as_rendered(quarto, tmp_path):
    assert CONFIG["format"]["html"].get("html-table-processing") == "none"
    project = mini_project(tmp_path)
    done = run_quarto(str(project / "index.qmd"), cwd=tmp_path, QUARTO_PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    page = (project / "_site" / "index.html").read_text()
    assert "gt_table" in page and "data-double-reprocessed" not in page


# 10. the fallback reads Quarto's options ----------------------------------------------------

OPTIONS_CONFIG = """project:
  type: website
  output-dir: _site
  render:
    - b.qmd
    - a.qmd
    - sub/unlisted.qmd
website:
  title: "t"
  navbar:
    left:
      - href: a.qmd
        text: The A page
      - href: b.qmd
execute:
  echo: false
  warning: false
"""

PAGE_A = """---
title: "A"
execute:
  output: false
---

```{python}
print("A-silent")
```

```{python}
#| output: true
import sys
print("A-shown")
print("A-warning", file=sys.stderr)
```

```{python}
#| output: true
#| warning: true
print("A-warning-asked", file=sys.stderr)
```
"""

PAGE_B = """---
title: "B"
---

```{python}
#| echo: true
#| label: shown-code
value = 6 * 7
print("B-code-and-output")
```

```{python}
#| include: false
hidden = value + 1
print("B-included-not")
```

```{python}
#| eval: false
#| echo: true
raise SystemExit("B-never-run")
```

```{python}
import sys
print("B-uses-hidden", hidden)
print("B-warning-dropped", file=sys.stderr)
```

```{python}
#| warning: true
print("B-warning-kept", file=sys.stderr)
```
"""

PAGE_UNLISTED = """---
title: "Not in the navbar"
---

```{python}
import os
print("U-cwd", os.path.basename(os.getcwd()))
```
"""

MARKERS = [
    "A-silent",
    "A-shown",
    "A-warning",
    "A-warning-asked",
    "B-code-and-output",
    "value = 6 * 7",
    "B-included-not",
    "B-never-run",
    "B-uses-hidden 43",
    "B-warning-dropped",
    "B-warning-kept",
    "U-cwd sub",
]


def _options_project(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "_quarto.yml").write_text(OPTIONS_CONFIG)
    (root / "a.qmd").write_text(PAGE_A)
    (root / "b.qmd").write_text(PAGE_B)
    (root / "sub" / "unlisted.qmd").write_text(PAGE_UNLISTED)
    return root


def _markers(site: Path) -> dict[str, set[str]]:
    found = {}
    for page in ("a", "b", "sub/unlisted"):
        # the text a reader sees: no tags (nbconvert highlights code in spans), entities decoded
        text = html.unescape(re.sub(r"<[^>]+>", "", (site / f"{page}.html").read_text()))
        found[page] = {m for m in MARKERS if re.search(re.escape(m) + r"(?![\w-])", text)}
    return found


def test_fallback_honours_the_options_quarto_reads(quarto, tmp_path):
    """One project, rendered by the double (Quarto's rules) and by the fallback: the same outputs
    reach each page, the pages are project.render's (one is in no navbar), the navbar names them."""
    project = _options_project(tmp_path / "project")
    done = run_quarto(str(project), cwd=tmp_path, QUARTO_PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    expected = {
        "a": {"A-shown", "A-warning-asked"},
        "b": {"B-code-and-output", "value = 6 * 7", "B-never-run", "B-uses-hidden 43", "B-warning-kept"},
        "sub/unlisted": {"U-cwd sub"},
    }
    assert _markers(project / "_site") == expected
    out = tmp_path / "fallback"
    written = render.render_with_jupyter(project, out, {}, workers=1, log=lambda line: None)
    assert written == [out / "b.html", out / "a.html", out / "sub" / "unlisted.html"]
    assert _markers(out) == expected
    nav = re.search(r"<nav>(.*?)</nav>", (out / "b.html").read_text()).group(1)
    assert re.findall(r'href="([^"]+)"[^>]*>([^<]+)<', nav) == [("a.html", "The A page"), ("b.html", "B")]
    # a page in a folder links back up
    assert 'href="../a.html"' in (out / "sub" / "unlisted.html").read_text()
    assert 'id="shown-code"' in (out / "b.html").read_text()
