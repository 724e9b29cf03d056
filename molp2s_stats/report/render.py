"""Render the reports/ Quarto project: with Quarto where it is installed, else with the
libraries Quarto drives (a Jupyter kernel through nbclient, HTML through nbconvert).

No library reads ``.qmd`` without the Quarto binary (jupytext hands the format to
Quarto), so ``read_qmd`` does the small part needed here: YAML front matter,
```` ```{python} ```` cells with their ``#|`` options, and Markdown between them. The
pages keep to exactly that, so both routes render the same sources.

The fallback page is self-contained: nbconvert's ``basic`` template (the cells'
outputs, no scripts, no CDN links) wrapped in a page with inline CSS and the site's
navigation; charts arrive as inline SVG, tables as HTML with inline styles.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml

from ..errors import UsageError

_CELL = re.compile(r"^```\{python\}[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_OPTION = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")


class RenderError(RuntimeError):
    """A page could not be rendered: names the page and what went wrong."""


@dataclass(frozen=True)
class Page:
    source: str  # the .qmd file name, relative to the project
    text: str  # the navigation label

    @property
    def html_name(self) -> str:
        return Path(self.source).with_suffix(".html").name


def read_project(project: Path) -> tuple[dict, list[Page]]:
    """``_quarto.yml`` and its pages, in navigation order."""
    config_file = project / "_quarto.yml"
    if not config_file.exists():
        raise FileNotFoundError(f"{project}: not a Quarto project (no _quarto.yml)")
    config = yaml.safe_load(config_file.read_text())
    entries = config.get("website", {}).get("navbar", {}).get("left", [])
    pages = [Page(e["href"], e.get("text", e["href"])) for e in entries]
    missing = [p.source for p in pages if not (project / p.source).exists()]
    if missing:
        raise FileNotFoundError(f"{config_file}: pages listed but not found: {', '.join(missing)}")
    return config, pages


def read_qmd(path: Path, *, echo: bool = False) -> nbformat.NotebookNode:
    """A ``.qmd`` file as a notebook: front matter → metadata and a title cell, code cells tagged by their options."""
    text = path.read_text()
    front: dict = {}
    if text.startswith("---\n"):
        end = text.index("\n---", 4)
        front = yaml.safe_load(text[4:end]) or {}
        text = text[end + 4:].lstrip("\n")
    cells = []
    if front.get("title"):
        cells.append(nbformat.v4.new_markdown_cell(f"# {front['title']}"))
    position = 0
    for match in _CELL.finditer(text):
        prose = text[position:match.start()].strip()
        if prose:
            cells.append(nbformat.v4.new_markdown_cell(prose))
        source = match.group(1).rstrip("\n")
        options = {m.group(1): m.group(2) for m in map(_OPTION.match, source.splitlines()) if m}
        cell = nbformat.v4.new_code_cell(source)
        if options.get("echo", str(echo).lower()) == "false":
            cell.metadata["tags"] = ["remove_input"]
        cells.append(cell)
        position = match.end()
    rest = text[position:].strip()
    if rest:
        cells.append(nbformat.v4.new_markdown_cell(rest))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["quarto"] = front
    return notebook


@contextmanager
def _environment(values: dict[str, str]):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _page_html(title: str, body: str, pages: list[Page], current: Page, css: str, site_title: str) -> str:
    marks = {p: ' class="current"' if p == current else "" for p in pages}
    links = " ".join(f'<a href="{p.html_name}"{marks[p]}>{html.escape(p.text)}</a>' for p in pages)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)} – {html.escape(site_title)}</title><style>{css}</style></head>"
            f"<body><nav><strong>{html.escape(site_title)}</strong> {links}</nav><main>{body}</main></body></html>\n")


def render_with_jupyter(project: Path, out: Path, env: dict[str, str], *, timeout: int = 1200,
                        pages: list[str] | None = None, log=print, workers: int | None = None) -> list[Path]:
    """Execute each page on a Python kernel and write self-contained HTML into ``out``.

    ``workers`` pages at a time (default: one per CPU core, at most two).
    """
    from nbclient import NotebookClient
    from traitlets.config import Config
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    config, all_pages = read_project(project)
    chosen = [p for p in all_pages if pages is None or p.source in pages]
    site_title = config.get("website", {}).get("title", "Report")
    echo = bool(config.get("execute", {}).get("echo", True))
    css_files = config.get("format", {}).get("html", {}).get("css", [])
    css = "\n".join((project / name).read_text() for name in ([css_files] if isinstance(css_files, str) else css_files))
    show_warnings = bool(config.get("execute", {}).get("warning", True))
    exporter = HTMLExporter(template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True,
                            anchor_link_text="")
    exporter.register_preprocessor(TagRemovePreprocessor(remove_input_tags={"remove_input"}, enabled=True), True)
    workers = workers or min(2, os.cpu_count() or 1)
    out.mkdir(parents=True, exist_ok=True)

    def render_page(page: Page, sockets: Path) -> Path:
        started = time.perf_counter()
        notebook = read_qmd(project / page.source, echo=echo)
        try:
            # IPC sockets, not TCP: the kernel is local, and ipykernel warns about plain TCP. The
            # socket path is absolute: the kernel runs in the project folder, not in ours.
            # nbclient keeps owning the kernel manager (so it shuts the kernel down after the page)
            config = Config()
            config.KernelManager.transport = "ipc"
            config.KernelManager.ip = str(sockets / "kernel")
            NotebookClient(notebook, config=config, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(project)}}).execute()
        except CellExecutionError as exc:
            raise RenderError(f"{project / page.source}: a cell failed: {exc.ename}: {exc.evalue}") from exc
        if not show_warnings:  # Quarto's `warning: false`: stderr text stays out of the page
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr")]
        body, _ = exporter.from_notebook_node(notebook)
        title = notebook.metadata["quarto"].get("title", page.text)
        target = out / page.html_name
        target.write_text(_page_html(title, body, all_pages, page, css, site_title))
        log(f"rendered {page.source} → {target} ({time.perf_counter() - started:.0f} s)")
        return target

    # Pages run side by side, one kernel each (they only read the database and the fit):
    # most of a page's time is one core's Python, so two at a time on two cores took the
    # default site's pages from 91 s to 45–50 s (`make report`).
    with _environment(env), tempfile.TemporaryDirectory(prefix="molp2s-kernel-") as socket_folder:
        folders = [Path(socket_folder) / str(i) for i in range(len(chosen))]
        for folder in folders:
            folder.mkdir()
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(chosen)))) as pool:
            return list(pool.map(render_page, chosen, folders))


def render_with_quarto(project: Path, out: Path, env: dict[str, str]) -> None:
    """``quarto render`` with the same environment (where Quarto is installed)."""
    completed = subprocess.run(["quarto", "render", str(project), "--output-dir", str(out.resolve())],
                               env={**os.environ, **env})
    if completed.returncode != 0:
        raise RenderError(f"quarto render {project} failed with exit code {completed.returncode} (its output is above)")


def render_site(project: Path, out: Path, env: dict[str, str], *, engine: str = "auto", log=print) -> str:
    """Render with Quarto if it is on PATH (``engine="auto"``), else with Jupyter; returns the engine used."""
    if engine not in ("auto", "quarto", "jupyter"):
        raise UsageError("engine must be auto, quarto or jupyter")
    if engine == "quarto" or (engine == "auto" and shutil.which("quarto")):
        # Quarto owns its output folder: tables go to reports/tables/ and arrive as a resource
        render_with_quarto(project, out, {k: v for k, v in env.items() if k != "MOLP2S_REPORT_TABLES"})
        return "quarto"
    render_with_jupyter(project, out, env, log=log)
    return "jupyter"
