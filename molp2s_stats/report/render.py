"""Render the reports/ Quarto project: with Quarto where it is installed, else with the
libraries Quarto drives (a Jupyter kernel through nbclient, HTML through nbconvert).

No library reads ``.qmd`` without the Quarto binary (jupytext hands the format to
Quarto), so ``read_qmd`` does the small part needed here: YAML front matter,
```` ```{python} ```` cells with their ``#|`` options, and Markdown between them. The
pages keep to exactly that, so both routes render the same sources.

The fallback page is self-contained: nbconvert's ``basic`` template (the cells'
outputs, no scripts, no CDN links) wrapped in a page with inline CSS and the site's
navigation; charts arrive as inline SVG, tables as HTML with inline styles. Its ``<body>``
carries the class ``molp2s-fallback``, to which styles.css scopes the rules for the page's
frame (nav, main): under Quarto the same stylesheet leaves Quarto's navbar and grid alone.
"""

from __future__ import annotations

import ast
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from ..bayes.convergence import usable_cores
from ..errors import UsageError

_CELL = re.compile(r"^```\{python\}[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_OPTION = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")

# Quarto's execution options that decide what of a cell reaches the page, with its defaults for
# HTML (quarto-cli src/core/jupyter/tags.ts: a cell's own option wins over the page's and the
# project's `execute`; src/resources/jupyter/notebook.py, cell_execute, for `eval`).
EXECUTE_DEFAULTS = {"eval": True, "echo": True, "output": True, "include": True, "warning": True}


class RenderError(RuntimeError):
    """A page could not be rendered: names the page and what went wrong."""


@dataclass(frozen=True)
class Page:
    source: str  # the .qmd file, relative to the project
    text: str  # its label: the navbar's text, else its title, else its file name

    @property
    def html_name(self) -> str:
        return Path(self.source).with_suffix(".html").as_posix()


def navigation(project: Path, config: dict) -> list[tuple[str, str]]:
    """The navbar's links, left then right: (href, text), a link without text named by its
    page's title (quarto-cli src/project/types/website/website-navigation.ts: an item may be
    a bare href, and its text falls back to the target's title)."""
    navbar = config.get("website", {}).get("navbar", {}) or {}
    entries = [
        {"href": e} if isinstance(e, str) else e for side in ("left", "right") for e in navbar.get(side, []) or []
    ]
    links = []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("href"):
            target = project / entry["href"]
            title = _front_matter(target.read_text()).get("title") if target.exists() else None
            links.append((entry["href"], str(entry.get("text") or title or entry["href"])))
    return links


def _render_list(project: Path, config: dict) -> list[str]:
    """The pages Quarto renders: ``project.render`` in its order (globs allowed, ``!`` excludes),
    else every .qmd not under a folder or file named with ``_`` or ``.`` (quarto-cli
    src/project/project-context.ts: the project's input files)."""
    output_dir = config.get("project", {}).get("output-dir")
    entries = config.get("project", {}).get("render")
    if not entries:
        found = sorted(p.relative_to(project) for p in project.rglob("*.qmd"))
        return [
            p.as_posix()
            for p in found
            if not any(part.startswith(("_", ".")) for part in p.parts)
            and not (output_dir and p.parts[0] == Path(output_dir).name)
        ]
    chosen: list[str] = []
    for entry in entries:
        pattern = entry[1:] if entry.startswith("!") else entry
        matches = (
            sorted(p.relative_to(project).as_posix() for p in project.glob(pattern))
            if any(c in pattern for c in "*?[")
            else [pattern]
        )
        if entry.startswith("!"):
            chosen = [c for c in chosen if c not in matches]
        else:
            chosen.extend(m for m in matches if m not in chosen)
    return chosen


def read_project(project: Path) -> tuple[dict, list[Page]]:
    """``_quarto.yml`` and the pages it renders, in ``project.render`` order (the navbar only names them)."""
    config_file = project / "_quarto.yml"
    if not config_file.exists():
        raise FileNotFoundError(f"{project}: not a Quarto project (no _quarto.yml)")
    config = yaml.safe_load(config_file.read_text()) or {}
    sources = _render_list(project, config)
    missing = [s for s in sources if not (project / s).exists()]
    if missing:
        raise FileNotFoundError(f"{config_file}: pages listed but not found: {', '.join(missing)}")
    labels = dict(navigation(project, config))
    pages = []
    for source in sources:
        title = _front_matter((project / source).read_text()).get("title")
        pages.append(Page(source, labels.get(source) or title or Path(source).stem))
    return config, pages


def _front_matter(text: str) -> dict:
    if not text.startswith("---\n"):
        return {}
    return yaml.safe_load(text[4 : text.index("\n---", 4)]) or {}


def page_execute(config: dict, front: dict) -> dict:
    """The execution options a page runs with: Quarto's defaults, then the project's ``execute``,
    then the page's (its ``execute`` and execute keys written at the top of its front matter)."""
    options = dict(EXECUTE_DEFAULTS)
    options.update(config.get("execute", {}) or {})
    options.update({k: v for k, v in front.items() if k in EXECUTE_DEFAULTS})
    options.update(front.get("execute", {}) or {})
    return options


def cell_options(source: str) -> dict:
    """A cell's ``#|`` options, their values read as YAML (``false`` is False, ``"fenced"`` a string)."""
    options = {}
    for match in map(_OPTION.match, source.splitlines()):
        if match:
            try:
                options[match.group(1)] = yaml.safe_load(match.group(2))
            except yaml.YAMLError:
                options[match.group(1)] = match.group(2)
    return options


def _shows(cell: dict, page: dict, key: str) -> bool:
    # the cell's own option wins over the page's (tags.ts, shouldInclude); "fenced" echoes
    return bool(cell[key] if key in cell else page[key])


def _shows_warnings(cell: dict, page: dict) -> bool:
    # tags.ts, includeWarnings: under a page-wide `output: false`, a cell that turns its output
    # back on shows warnings only if it asks for them
    if page.get("output") is False and cell.get("output") is not False:
        return bool(cell.get("warning", False))
    return _shows(cell, page, "warning")


def read_qmd(path: Path, *, execute: dict | None = None) -> nbformat.NotebookNode:
    """A ``.qmd`` file as a notebook: front matter → metadata and a title cell, code cells tagged
    by the options Quarto reads (``execute``: the project's execute options).

    Each code cell's ``#|`` lines leave its source (Quarto does not show them either) and its
    metadata records what reaches the page: tags ``remove_input`` (``echo: false``),
    ``remove_output`` (``output: false``), ``remove_cell`` (``include: false``), and
    ``molp2s`` with ``label``, ``eval`` and ``warning``.
    """
    text = path.read_text()
    front = _front_matter(text)
    if text.startswith("---\n"):
        text = text[text.index("\n---", 4) + 4 :].lstrip("\n")
    page = page_execute({"execute": execute or {}}, front)
    cells = []
    if front.get("title"):
        cells.append(nbformat.v4.new_markdown_cell(f"# {front['title']}"))
    position = 0
    for match in _CELL.finditer(text):
        prose = text[position : match.start()].strip()
        if prose:
            cells.append(nbformat.v4.new_markdown_cell(prose))
        source = match.group(1).rstrip("\n")
        options = cell_options(source)
        code = "\n".join(line for line in source.splitlines() if not _OPTION.match(line)).strip("\n")
        cell = nbformat.v4.new_code_cell(code)
        tags = [
            tag
            for key, tag in (("echo", "remove_input"), ("output", "remove_output"), ("include", "remove_cell"))
            if not _shows(options, page, key)
        ]
        if tags:
            cell.metadata["tags"] = tags
        cell.metadata["molp2s"] = {
            "label": options.get("label"),
            "eval": _shows(options, page, "eval"),
            "warning": _shows_warnings(options, page),
        }
        cells.append(cell)
        position = match.end()
    rest = text[position:].strip()
    if rest:
        cells.append(nbformat.v4.new_markdown_cell(rest))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["quarto"] = front
    return notebook


def pandoc_identifier(text: str) -> str:
    """The id pandoc gives a heading (its ``auto_identifiers``), which Quarto keeps: formatting
    dropped, lower case, punctuation other than ``_-.`` removed, spaces to hyphens, everything
    before the first letter dropped; ``section`` when nothing is left."""
    text = re.sub(r"<[^>]+>|`", "", html.unescape(text)).lower()
    kept = "".join(c if c.isalnum() or c in "_-." else (" " if c.isspace() else "") for c in text)
    kept = re.sub(r"\s+", "-", kept.strip())
    while kept and not kept[0].isalpha():
        kept = kept[1:]
    return kept or "section"


FALLBACK_CLASS = "molp2s-fallback"  # styles.css scopes the page-frame rules to it: Quarto draws its own frame


def _page_html(title: str, body: str, links: list[tuple[str, str]], current: Page, css: str, site_title: str) -> str:
    here = Path(current.source).parent
    anchors = []
    for href, text in links:
        relative = os.path.relpath(Path(href).with_suffix(".html"), here).replace(os.sep, "/")
        mark = ' class="current"' if href == current.source else ""
        anchors.append(f'<a href="{html.escape(relative)}"{mark}>{html.escape(text)}</a>')
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} – {html.escape(site_title)}</title><style>{css}</style></head>"
        f'<body class="{FALLBACK_CLASS}"><nav><strong>{html.escape(site_title)}</strong> {" ".join(anchors)}</nav>'
        f"<main>{body}</main></body></html>\n"
    )


_HEADING = re.compile(r'<h([1-6]) id="[^"]*">(.*?)</h\1>', re.DOTALL)
_CELL_ID = re.compile(r' id="cell-id=([^"]*)"')
# a relative link to a page's source: no scheme (no ':'), a .qmd path, perhaps an anchor
_SOURCE_LINK = re.compile(r'href="([^":?#]+)\.qmd(#[^"]*)?"')


def _output_links(body: str) -> str:
    """A link to another page's .qmd points at its .html, as Quarto rewrites links to the project's
    inputs into links to their outputs (quarto-cli src/project/types/website/website-navigation.ts,
    the navigation postprocessor's resolveInputTarget)."""
    return _SOURCE_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', body)


def _quarto_ids(body: str, labels: dict[str, str]) -> str:
    """Give the page the ids Quarto gives it: headings pandoc's identifiers (a repeat gets
    ``-1``, ``-2``), a labelled cell its label (quarto-cli src/core/jupyter/jupyter.ts writes
    the label on the cell's div), other cells none; ``labels`` maps a cell's notebook id to its label."""
    used: dict[str, int] = {}

    def heading(match: re.Match) -> str:
        level, inner = match.groups()
        inner = re.sub(r'<a class="anchor-link"[^>]*>.*?</a>', "", inner, flags=re.DOTALL)
        ident = pandoc_identifier(inner)
        if ident in used:
            used[ident] += 1
            ident = f"{ident}-{used[ident]}"
        else:
            used[ident] = 0
        return f'<h{level} id="{ident}">{inner}</h{level}>'

    body = _output_links(_HEADING.sub(heading, body))
    return _CELL_ID.sub(lambda m: f' id="{html.escape(labels[m.group(1)])}"' if m.group(1) in labels else "", body)


def _fresh_page_cell(folder: Path) -> nbformat.NotebookNode:
    """The cell run before each page's own on a kernel that may have run another page: the
    namespace emptied (``%reset -f``: no variable of the last page is left, the imported modules
    are), the working folder the page's own, and warnings that were shown once shown again
    (``warnings``' registries stale). It defines no name, and its output is never on a page."""
    return nbformat.v4.new_code_cell(
        "get_ipython().run_line_magic('reset', '-f')\n"
        f"__import__('os').chdir({str(folder)!r})\n"
        "getattr(__import__('warnings'), '_filters_mutated', lambda: None)()"
    )


def page_imports(sources: list[str]) -> list[str]:
    """The modules the cells ``sources`` import at their top level (``import a.b``; ``from a.b import
    c``: a.b, and a.b.c in case c is a module), each once, in the order they first appear. A cell
    that is not plain Python (a magic, a shell escape) is left out."""
    modules: dict[str, None] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                modules.update(dict.fromkeys(alias.name for alias in node.names))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules[node.module] = None  # and each name, which may be a module of that package
                modules.update(
                    dict.fromkeys(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
                )
    return list(modules)


def _runnable(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells of a page read by ``read_qmd`` that run: code, not ``eval: false`` by its own options,
    the page's or the project's."""
    return [c for c in notebook.cells if c.cell_type == "code" and c.metadata["molp2s"]["eval"]]


def _code_of(path: Path, config: dict) -> list[nbformat.NotebookNode]:
    """The cells of the page at ``path`` that run (``_runnable``), under the project's ``config``."""
    return _runnable(read_qmd(path, execute=config.get("execute")))


def _warm_up_cell(modules: list[str]) -> nbformat.NotebookNode:
    """A cell that imports ``modules`` on a kernel before its first page. A module that fails to
    import is passed over: the page that imports it fails there, with the page named.

    What it imported is then frozen (``gc.freeze``: left out of Python's later garbage collections,
    which would otherwise walk ArviZ's, Altair's and polars' millions of objects again each time;
    the pages' own objects stay collectable). The default data's eight pages in one process:
    full collections took 0.4 s instead of 6.3 s, the pages 27.0 CPU-s instead of 31.2."""
    return nbformat.v4.new_code_cell(
        "import importlib as _importlib\n"
        "_name = None\n"
        f"for _name in {modules!r}:\n"
        "    try:\n"
        "        _importlib.import_module(_name)\n"
        "    except Exception:\n"
        "        pass\n"
        "del _importlib, _name\n"
        "__import__('gc').collect()\n"
        "__import__('gc').freeze()"
    )


# How much lower a page kernel's CPU priority is while the caller's own work goes first (nice +10: on
# Linux's scheduler a tenth of the CPU share of a process at the default priority).
YIELDING_NICENESS = 10


def _autogroup(pid: int | str) -> tuple[str, int] | None:
    """(name, nice) of the scheduler group of process ``pid`` ("self": this one) where Linux groups
    processes by session (``/proc/<pid>/autogroup``, present where autogrouping is on); else None."""
    try:
        name, _, nice = Path(f"/proc/{pid}/autogroup").read_text().split()
        return name, int(nice)
    except (OSError, ValueError):
        return None


def _set_niceness(kernel, niceness: int, own_niceness: int = 0) -> bool:
    """Set every thread of ``kernel``'s process to ``niceness`` (Linux counts a priority per thread);
    False where the system refuses (a raise back needs the privilege) or there is no process.

    A kernel runs in a session of its own (jupyter_client starts it so), and where Linux groups
    processes by session, a thread's priority counts only against the other threads of its group:
    the groups share the CPU by their own priorities. The kernel's group is set ``niceness −
    own_niceness`` from this process's group, too; without it a yielding kernel still took a third
    of the CPU (the LOO comparison after the fit's sampling, 6.5 s alone, took 13–17 s beside two)."""
    pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
    if pid is None or not hasattr(os, "setpriority"):
        return False
    tasks = Path(f"/proc/{pid}/task")
    threads = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [pid]
    done = False
    for thread in threads:
        try:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
            done = True
        except ProcessLookupError:  # a thread that has ended since
            continue
        except PermissionError:
            return False
    ours, theirs = _autogroup("self"), _autogroup(pid)
    if done and ours is not None and theirs is not None and theirs[0] != ours[0]:
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(max(-20, min(19, ours[1] + niceness - own_niceness))))
        except PermissionError:
            return False
        except OSError:  # the kernel has ended since
            pass
    return done


def _stop_kernel(kernel) -> None:
    """Stop a worker's kernel (nbclient's own clean-up, for a kernel it does not own), at once.

    Not by a shutdown request: ipykernel answers one on its control channel and then publishes its
    status while its sockets close, and that race (ipykernel 7.4, ``_publish_status_and_flush`` on
    the closed control stream; its iopub half was mended in ipython/ipykernel#1518) now and then
    printed a ZMQError traceback on the report's stderr. A page kernel holds nothing to save when it
    is stopped: its last page's output is read and its files are written."""
    from jupyter_core.utils import ensure_async, run_sync

    async def stop() -> None:
        try:
            if await ensure_async(kernel.is_alive()):
                await ensure_async(kernel.shutdown_kernel(now=True))
        finally:
            await ensure_async(kernel.cleanup_resources())

    run_sync(stop)()


class Gate:
    """Whether what a page reads is made: opened when it is, failed (with the reason) when it will
    not be. ``render_with_jupyter`` holds a gated page back until then."""

    def __init__(self) -> None:
        self._settled = threading.Event()
        self.error: BaseException | None = None

    def open(self) -> None:
        self._settled.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._settled.set()

    @property
    def settled(self) -> bool:
        """Opened or failed."""
        return self._settled.is_set()

    @property
    def opened(self) -> bool:
        return self._settled.is_set() and self.error is None

    @property
    def failed(self) -> bool:
        return self.error is not None

    def wait(self) -> None:
        """Until the gate is settled; raises a ``RenderError`` if it failed."""
        self._settled.wait()
        self.check()

    def check(self) -> None:
        if self.error is not None:
            raise RenderError(f"what the page reads was not made: {self.error!r}") from self.error


def render_with_jupyter(
    project: Path,
    out: Path,
    env: dict[str, str],
    *,
    timeout: int = 1200,
    pages: list[str] | None = None,
    log=print,
    workers: int | None = None,
    gates: dict[str, Gate] | None = None,
    pre_render: bool = True,
    begin: Gate | None = None,
    yield_until: Gate | None = None,
) -> list[Path]:
    """Execute each page on a Python kernel and write self-contained HTML into ``out``.

    The pages are ``project.render``'s; each runs with the options Quarto would give it (the
    project's and the page's ``execute``, each cell's own), in the project folder, on this
    Python. ``workers`` pages at a time (default: one per CPU core, at most two), each worker
    with one kernel for all of its pages: a page starts on an empty namespace in its own folder
    (``_fresh_page_cell``), but finds the modules the worker's earlier pages imported (and
    ``report.context``'s caches, which are kept per path) where a fresh kernel would import
    them again. The kernels are shut down with the render.

    ``gates`` holds a page back until what it reads is made (a ``Gate`` per page source):
    the workers render the other pages meanwhile, and take a held page first once its gate
    opens; a gate that fails stops the render (no further page is started) with its error.
    ``pre_render`` False skips the project's pre-render scripts, for a caller that has made
    what they make (``site.render_report`` prepares the database and the fit itself).

    ``begin``: each worker starts its kernel at once and imports there what the pages import
    (``page_imports``), then waits for this gate before its first page; a caller that is still
    making what the pages read (the fit) opens it when that is done, and a failed gate stops
    the render before any page.

    ``yield_until``: until this gate settles, the workers' kernels run at a lower CPU priority
    (``YIELDING_NICENESS``), so that the caller's own work goes first (the end of the fit, which
    the Posterior page waits for, rather than the pages that can wait); back at this process's
    priority once it settles, where the system allows (it may not let an unprivileged user raise
    a priority again: the kernels then stay lower).
    """
    from jupyter_client import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    config, all_pages = read_project(project)
    chosen = [p for p in all_pages if pages is None or p.source in pages]
    links = navigation(project, config)
    site_title = config.get("website", {}).get("title", "Report")
    css_files = config.get("format", {}).get("html", {}).get("css", [])
    css = "\n".join((project / name).read_text() for name in ([css_files] if isinstance(css_files, str) else css_files))
    exporter = HTMLExporter(
        template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True, anchor_link_text=""
    )
    exporter.register_preprocessor(
        TagRemovePreprocessor(
            remove_input_tags={"remove_input"},
            remove_all_outputs_tags={"remove_output"},
            remove_cell_tags={"remove_cell"},
            enabled=True,
        ),
        True,
    )
    workers = workers or min(2, usable_cores())  # the cores this process may use, as the fit counts them
    out.mkdir(parents=True, exist_ok=True)
    if pre_render:
        run_pre_render(project, config, env, [page.source for page in chosen], log=log)
    gates = gates or {}
    # the pages' variables reach the kernels as their environment, not through os.environ: the caller's
    # other threads (the database build, the fit) run meanwhile, and setting os.environ beside them is
    # not thread-safe
    kernel_env = {**os.environ, **env}
    if begin is not None:
        warm_up = nbformat.v4.new_notebook(
            cells=[
                _warm_up_cell(page_imports([c.source for p in chosen for c in _code_of(project / p.source, config)]))
            ]
        )

    def start_kernel(sockets: Path):
        # IPC sockets, not TCP: the kernel is local, and ipykernel warns about plain TCP. The
        # socket path is absolute: the kernel runs in the page's folder (as under Quarto), not in ours.
        return AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(sockets / "kernel"))

    def warm(kernel) -> bool:
        """Start ``kernel`` and import the pages' modules on it (what a worker's first page would), at the
        yielding priority while the caller's work goes on (``yields``): the imports take a core the
        caller leaves idle rather than one it samples on. Whether the kernel yields."""
        client = NotebookClient(
            nbformat.from_dict(warm_up),
            km=kernel,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(project.resolve())}},
        )
        try:
            client.start_new_kernel(env=kernel_env)
            yielding = yields(kernel, False)
            client.execute(env=kernel_env)  # on the kernel just started
        finally:
            if client.kc is not None:
                client.kc.stop_channels()
        return yielding

    def render_page(page: Page, kernel) -> Path:
        started = time.perf_counter()
        notebook = read_qmd(project / page.source, execute=config.get("execute"))
        code = [c for c in notebook.cells if c.cell_type == "code"]
        folder = (project / page.source).parent
        # `eval: false` cells are shown (if echoed) but not run: the kernel sees only the others,
        # after the cell that gives it a fresh namespace in the page's folder
        runnable = nbformat.v4.new_notebook(
            cells=[_fresh_page_cell(folder.resolve()), *_runnable(notebook)],
            metadata=notebook.metadata,
        )
        client = NotebookClient(
            runnable,
            km=kernel,  # the worker's: nbclient starts it for the worker's first page and leaves it running
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(folder)}},
        )
        try:
            client.execute(env=kernel_env)  # where nbclient starts the kernel (it has none yet)
        except CellExecutionError as exc:
            raise RenderError(f"{project / page.source}: a cell failed: {exc.ename}: {exc.evalue}") from exc
        finally:
            if client.kc is not None:
                client.kc.stop_channels()
        labels = {}
        for cell in code:
            if not cell.metadata["molp2s"]["warning"]:  # Quarto's `warning: false`: stderr text stays out of the page
                cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
            if cell.metadata["molp2s"]["label"]:
                labels[cell.id] = str(cell.metadata["molp2s"]["label"])
        body, _ = exporter.from_notebook_node(notebook)
        title = notebook.metadata["quarto"].get("title", page.text)
        target = out / page.html_name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_page_html(title, _quarto_ids(body, labels), links, page, css, site_title))
        log(f"rendered {page.source} → {target} ({time.perf_counter() - started:.0f} s)")
        return target

    # Pages run side by side, one kernel per worker (they only read the database and the fit):
    # most of a page's time is one core's Python, so two at a time on two cores took the
    # default site's pages from 91 s to 45–50 s (`make report`). Each worker takes the next page
    # in project.render's order when it is done with one (slowest first) and runs it on its
    # kernel: of a small site's page, the kernel's start and the imports (SciPy, Altair,
    # great-tables, ArviZ) and Vega's first chart were most of the time, paid once per worker now.
    results: dict[int, Path] = {}
    errors: dict[int, BaseException] = {}
    pending = list(enumerate(chosen))
    taking = threading.Lock()

    def take() -> tuple[int, Page] | None:
        """The next page in order whose gate is open (or that has none); else the first held one,
        to wait for; None when every page is taken or a gate has failed."""
        with taking:
            if not pending or any(gate.failed for gate in gates.values()):
                return None
            for position, (_, page) in enumerate(pending):
                gate = gates.get(page.source)
                if gate is None or gate.opened:
                    return pending.pop(position)
            return pending.pop(0)

    own_niceness = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0

    def yields(kernel, yielding: bool) -> bool:
        """Whether ``kernel`` yields from now on (``yielding``: it did): while ``yield_until`` has not
        settled, and no longer once it has (a priority the system will not raise back is left)."""
        wanted = yield_until is not None and not yield_until.settled
        if wanted == yielding:
            return yielding
        changed = _set_niceness(kernel, own_niceness + (YIELDING_NICENESS if wanted else 0), own_niceness)
        return wanted and changed

    def work(sockets: Path) -> None:
        kernel, yielding = None, False
        try:
            if begin is not None:
                kernel = start_kernel(sockets)
                try:
                    yielding = warm(kernel)
                except Exception as exc:  # the first page starts a kernel afresh, and its error names the page
                    log(
                        f"a page kernel did not start ahead of the pages ({type(exc).__name__}: {exc}); starting another"
                    )
                    _stop_kernel(kernel)
                    kernel = None
                try:
                    begin.wait()
                except BaseException as exc:
                    errors[-1] = exc
                    return
            while True:
                taken = take()
                if taken is None:
                    return
                index, page = taken
                if page.source in gates:
                    try:
                        gates[page.source].wait()
                    except BaseException as exc:
                        errors[index] = exc
                        return
                if kernel is None:
                    kernel, yielding = start_kernel(sockets), False
                yielding = yields(kernel, yielding)
                try:
                    results[index] = render_page(page, kernel)
                except BaseException as exc:  # raised once every page has had its turn, as a pool's map would
                    errors[index] = exc
                    if not isinstance(exc, RenderError):  # a dead or timed-out kernel: the next page gets a new one
                        _stop_kernel(kernel)
                        kernel = None
        finally:
            if kernel is not None:
                _stop_kernel(kernel)

    with tempfile.TemporaryDirectory(prefix="molp2s-kernel-") as socket_folder:
        count = max(1, min(workers, len(chosen)))
        folders = [Path(socket_folder) / str(i) for i in range(count)]
        for folder in folders:
            folder.mkdir()
        with ThreadPoolExecutor(max_workers=count) as pool:
            list(pool.map(work, folders))
    if errors:
        raise errors[min(errors)]
    for gate in gates.values():  # pages left untaken: a gate failed
        gate.check()
    return [results[index] for index in range(len(chosen))]


def run_pre_render(project: Path, config: dict, env: dict[str, str], pages: list[str], *, log=print) -> None:
    """The project's ``pre-render`` scripts, as Quarto runs them before the pages: each in the
    project folder, on this Python (the one ``quarto_environment`` names in QUARTO_PYTHON), told
    the pages about to render in QUARTO_PROJECT_INPUT_FILES; a script that fails stops the render. Quarto also runs shell commands here; our projects list
    Python scripts only, and anything else is refused rather than guessed at."""
    scripts = config.get("project", {}).get("pre-render") or []
    for script in [scripts] if isinstance(scripts, str) else scripts:
        if not script.endswith(".py"):
            raise RenderError(
                f"{project / '_quarto.yml'}: pre-render {script!r}: only Python scripts run without Quarto"
            )
        completed = subprocess.run(
            [sys.executable, script],
            cwd=project,
            env={**os.environ, **env, "QUARTO_PROJECT_INPUT_FILES": "\n".join(pages)},
            capture_output=True,
            text=True,
        )
        for line in (completed.stdout + completed.stderr).splitlines():
            log(line)
        if completed.returncode != 0:
            raise RenderError(f"{project / script} (pre-render) failed with exit code {completed.returncode}")


PATH_VARIABLES = ("MOLP2S_DB", "MOLP2S_FIT", "MOLP2S_REPORT_TABLES")


def quarto_environment(env: dict[str, str]) -> dict[str, str]:
    """The environment ``quarto render`` runs with: ours, the paths absolute, and this Python.

    Quarto starts each page's kernel in the page's folder (quarto-cli
    src/resources/jupyter/notebook.py), so a relative path would point into reports/; and it
    picks the kernel's Python from ``QUARTO_PYTHON``, else a conda ``python``, else ``python3``
    on PATH, never from ``VIRTUAL_ENV`` (src/core/jupyter/capabilities.ts,
    ``jupyterCapabilities``): ``QUARTO_PYTHON`` names the Python this package runs on, which
    has the package and Jupyter. The post-render script runs on the same Python
    (src/core/run/python.ts).
    """
    merged = {**os.environ, **env}
    for name in PATH_VARIABLES:
        if merged.get(name):
            merged[name] = str(Path(merged[name]).expanduser().resolve())
    merged["QUARTO_PYTHON"] = sys.executable
    return merged


def render_with_quarto(project: Path, out: Path, env: dict[str, str]) -> None:
    """``quarto render`` with the same environment (where Quarto is installed), on this Python."""
    completed = subprocess.run(
        ["quarto", "render", str(project), "--output-dir", str(out.resolve())], env=quarto_environment(env)
    )
    if completed.returncode != 0:
        raise RenderError(f"quarto render {project} failed with exit code {completed.returncode} (its output is above)")


def chosen_engine(engine: str) -> str:
    """The engine ``engine`` stands for: ``auto`` is Quarto where it is on PATH, else Jupyter."""
    if engine not in ("auto", "quarto", "jupyter"):
        raise UsageError("engine must be auto, quarto or jupyter")
    return "quarto" if engine == "quarto" or (engine == "auto" and shutil.which("quarto")) else "jupyter"


def render_site(project: Path, out: Path, env: dict[str, str], *, engine: str = "auto", log=print, **jupyter) -> str:
    """Render with Quarto if it is on PATH (``engine="auto"``), else with Jupyter; returns the engine used.
    ``jupyter`` (gates, pre_render) goes to ``render_with_jupyter``."""
    if chosen_engine(engine) == "quarto":
        if jupyter:
            raise ValueError(f"the Quarto route takes no {', '.join(jupyter)}")
        # Quarto owns its output folder: the pages write tables/ in reports/, and the project's
        # post-render script copies it into the site
        render_with_quarto(project, out, {k: v for k, v in env.items() if k != "MOLP2S_REPORT_TABLES"})
        return "quarto"
    render_with_jupyter(project, out, env, log=log, **jupyter)
    return "jupyter"


def render_site_replacing(
    project: Path,
    out: Path,
    env: dict[str, str],
    *,
    engine: str = "auto",
    log=print,
    tables_variable: str | None = None,
    **jupyter,
) -> str:
    """``render_site`` into a folder beside ``out`` that takes its place only once every page is done
    (``output.replacing_folder``): an interrupted or failed render leaves the previous site whole.
    ``tables_variable`` names the environment variable that points the pages' tables into the new
    site; the log names ``out``, not the folder being filled."""
    from ..output import replacing_folder

    with replacing_folder(out) as partial:
        if tables_variable:
            env = {**env, tables_variable: str((partial / "tables").resolve())}
        return render_site(
            project,
            partial,
            env,
            engine=engine,
            log=lambda line: log(line.replace(str(partial), str(out))),
            **jupyter,
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m molp2s_stats.report.render PROJECT OUT``: render a Quarto project (the docs site)
    the way `molp2s report` renders the report, into OUT, replacing it only once every page is done."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write("usage: python -m molp2s_stats.report.render PROJECT OUT\n")
        return 2
    project, out = Path(argv[0]), Path(argv[1])
    started = time.perf_counter()
    try:
        used = render_site_replacing(project, out, {}, log=lambda line: print(line, file=sys.stderr))
    except RenderError as exc:
        sys.stderr.write(f"error: {exc}; {out} is as it was\n")
        return 1
    print(f"rendered {project} into {out} with {used} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
