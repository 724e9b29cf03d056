"""A stand-in for the `quarto` command, for tests on machines where Quarto cannot be installed.

It renders a website project (`quarto render DIR|FILE [--output-dir DIR]`) doing what Quarto
does at each point the report depends on, and nothing else: the HTML it writes is only a
record of what the pages produced (cell ids, headings, outputs), not Quarto's page. Each
behaviour names the quarto-cli source (tags 1.5 to 1.8) it is read from:

- the project's pages are ``project.render`` (src/project/project-context.ts); ``--output-dir``
  replaces ``project.output-dir``, and QUARTO_PROJECT_OUTPUT_DIR is that folder, absolute
  (src/project/project-shared.ts, projectOutputDir);
- ``project.resources`` globs are resolved when the project context is made, before any page
  runs, and the files found are copied into the site after rendering
  (src/project/project-resources.ts, projectResourceFiles; src/command/render/project.ts);
- the kernel's Python is ``QUARTO_PYTHON``, else ``python3`` on PATH; ``VIRTUAL_ENV`` plays no
  part (src/core/jupyter/capabilities.ts, jupyterCapabilities; the conda ``python`` step is
  left out: no conda here). The notebook is executed by that Python (src/resources/jupyter/
  jupyter.py run by it, src/execute/jupyter/jupyter-kernel.ts, execJupyter), so a Python
  without nbclient or without the package fails the page;
- the kernel runs in the page's folder (src/resources/jupyter/notebook.py, notebook_execute,
  ``os.chdir(Path(original_input).parent)``), unless ``project.execute-dir: project``;
  the environment passes through unchanged, PWD included, with QUARTO_BIN_PATH set (the
  launcher package/scripts/common/quarto exports it) and QUARTO_PROJECT_DIR
  (src/command/render/render-shared.ts);
- a kept-alive kernel: with ``execute.daemon`` unset, an interactive session (stderr a
  terminal; here QUARTO_DOUBLE_INTERACTIVE=1 stands in for one) outside CI keeps the
  kernel for 300 s (src/execute/jupyter/jupyter.ts, jupyter-kernel.ts kDefaultTimeout), but
  never for a render of more than 3 files (src/command/render/project.ts sets executeDaemon
  to 0). It restarts only when the Python changes (notebook.py, check_for_kernel_restart) or
  an imported module's file does. The double records the environment of the kernel's
  first run in QUARTO_DOUBLE_STATE and runs later renders of the same file, within the
  timeout, with that environment, as the live kernel would see it;
- cell ids: a labelled cell's div gets the label as its id (src/core/jupyter/jupyter.ts,
  labels.ts cellLabel), headings pandoc's auto identifiers;
- every raw HTML ``<table>`` not marked ``data-quarto-disable-processing="true"`` is re-parsed
  and restyled unless ``html-table-processing: none`` (src/resources/filters/normalize/
  astpipeline.lua; parsehtml.lua in 1.5 and 1.6); the double marks such a table ``data-double-reprocessed``;
- ``project.pre-render`` scripts run before the pages (and before the render list and resources
  are read: Quarto 1.5 recomputes them after pre-render), in the project folder, a ``.py`` one on
  the same Python, with QUARTO_PROJECT_INPUT_FILES (the pages about to render, newline-separated,
  relative to the project) and QUARTO_PROJECT_RENDER_ALL=1 when the whole project is rendered
  (quarto.org/docs/projects/scripts.html; src/command/render/project.ts, kProjectPreRender);
- ``project.post-render`` scripts run after the pages, in the project folder, a ``.py`` one on
  the same Python, with QUARTO_PROJECT_OUTPUT_DIR, QUARTO_PROJECT_RENDER_ALL=1 when the whole
  project is rendered, and QUARTO_PROJECT_OUTPUT_FILES (src/command/render/project.ts,
  renderProject and runScripts; src/core/run/python.ts).

Cell options honoured: eval, echo, output, include, warning (src/core/jupyter/tags.ts).
"""

from __future__ import annotations

import glob
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import yaml

KERNEL = Path(__file__).with_name("kernel.py")
KEEPALIVE_SECONDS = 300
CELL = re.compile(r"^```\{python\}[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
OPTION = re.compile(r"^#\|\s*([\w-]+)\s*:\s*(.*?)\s*$")
DEFAULTS = {"eval": True, "echo": True, "output": True, "include": True, "warning": True}


def fail(message: str) -> None:
    print(f"ERROR: {message}", file=sys.stderr)
    sys.exit(1)


def find_project(target: Path) -> Path:
    folder = target if target.is_dir() else target.parent
    for candidate in (folder, *folder.parents):
        if (candidate / "_quarto.yml").exists():
            return candidate
    fail(f"{target}: no _quarto.yml (the double renders projects only)")


def python_for_kernel() -> str:
    chosen = os.environ.get("QUARTO_PYTHON")
    if chosen:
        path = Path(chosen)
        if path.is_dir():  # QUARTO_PYTHON may name the folder that holds python3
            path = path / "python3"
        if not path.exists():
            fail(f"QUARTO_PYTHON={chosen}: not found")
        return str(path)
    found = shutil.which("python3")
    if not found:
        fail("no python3 on PATH")
    return found


def front_matter(text: str) -> tuple[dict, str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.index("\n---", 4)
    return yaml.safe_load(text[4:end]) or {}, text[end + 4 :]


def as_notebook(text: str, execute: dict) -> tuple[nbformat.NotebookNode, list[dict]]:
    cells, options = [], []
    position = 0
    for match in CELL.finditer(text):
        prose = text[position : match.start()].strip()
        if prose:
            cells.append(nbformat.v4.new_markdown_cell(prose))
            options.append({})
        source = match.group(1)
        cell_options = {m.group(1): yaml.safe_load(m.group(2)) for m in map(OPTION.match, source.splitlines()) if m}
        cell = nbformat.v4.new_code_cell(source.rstrip("\n"))
        cell.metadata["double"] = {"eval": bool(cell_options.get("eval", execute["eval"]))}
        cells.append(cell)
        options.append(cell_options)
        position = match.end()
    rest = text[position:].strip()
    if rest:
        cells.append(nbformat.v4.new_markdown_cell(rest))
        options.append({})
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook, options


def pandoc_identifier(text: str) -> str:
    text = re.sub(r"`", "", text).lower()
    kept = "".join(c if c.isalnum() or c in "_-." else (" " if c.isspace() else "") for c in text)
    kept = re.sub(r"\s+", "-", kept.strip())
    while kept and not kept[0].isalpha():
        kept = kept[1:]
    return kept or "section"


def shows(cell: dict, page: dict, key: str) -> bool:
    return bool(cell[key] if key in cell else page[key])


def kernel_environment(page: Path, python: str, daemon: bool) -> dict[str, str]:
    env = dict(os.environ)
    if not daemon:
        return env
    state = Path(os.environ.get("QUARTO_DOUBLE_STATE", tempfile.gettempdir())) / "quarto-double-kernels"
    state.mkdir(parents=True, exist_ok=True)
    record = state / (hashlib.md5(str(page).encode()).hexdigest() + ".json")
    if record.exists():
        kept = json.loads(record.read_text())
        if kept["python"] == python and time.time() - kept["started"] < KEEPALIVE_SECONDS:
            return kept["env"]  # the live kernel still has the environment it started with
    record.write_text(json.dumps({"python": python, "started": time.time(), "env": env}))
    return env


def render_page(project: Path, config: dict, page: Path, out_dir: Path, python: str, many: bool) -> Path:
    front, body = front_matter(page.read_text())
    execute = {**DEFAULTS, **(config.get("execute") or {}), **(front.get("execute") or {})}
    daemon = execute.get("daemon")
    if daemon is None:  # unset: kept alive in a terminal, not in CI
        daemon = os.environ.get("QUARTO_DOUBLE_INTERACTIVE") == "1" and not os.environ.get("CI")
    daemon = bool(daemon) and not many  # a render of more than 3 files gets one-shot kernels
    notebook, options = as_notebook(body, execute)
    cwd = project if config.get("project", {}).get("execute-dir") == "project" else page.parent
    with tempfile.TemporaryDirectory(prefix="quarto-double-") as scratch:
        ipynb = Path(scratch) / (page.stem + ".ipynb")
        nbformat.write(notebook, ipynb)
        env = kernel_environment(page.resolve(), python, daemon)
        env.update({"QUARTO_BIN_PATH": str(Path(__file__).parent), "QUARTO_PROJECT_DIR": str(project)})
        completed = subprocess.run([python, str(KERNEL), str(ipynb)], cwd=cwd, env=env)
        if completed.returncode != 0:
            fail(f"{page}: the kernel failed (exit code {completed.returncode})")
        executed = nbformat.read(ipynb, as_version=4)
    table_processing = (config.get("format", {}).get("html", {}) or {}).get("html-table-processing")
    parts = [f'<h1 class="title">{html.escape(str(front.get("title", page.stem)))}</h1>']
    used: set[str] = set()
    for cell, cell_options in zip(executed.cells, options):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                heading = re.match(r"^(#{1,6})\s+(.*)$", line)
                if heading:
                    ident = pandoc_identifier(heading.group(2))
                    ident, n = ident, 0
                    while ident in used:
                        n += 1
                        ident = f"{pandoc_identifier(heading.group(2))}-{n}"
                    used.add(ident)
                    level = len(heading.group(1))
                    parts.append(f'<h{level} id="{ident}">{html.escape(heading.group(2))}</h{level}>')
                elif line.strip():
                    parts.append(f"<p>{html.escape(line)}</p>")
            continue
        if not shows(cell_options, execute, "include"):
            continue
        label = cell_options.get("label")
        inner = []
        if shows(cell_options, execute, "echo"):
            code = "\n".join(line for line in cell.source.splitlines() if not OPTION.match(line))
            inner.append(f'<pre class="cell-code"><code>{html.escape(code)}</code></pre>')
        if shows(cell_options, execute, "output"):
            for output in cell.outputs:
                if output.output_type == "stream":
                    if output.name == "stderr" and not shows(cell_options, execute, "warning"):
                        continue
                    inner.append(f'<pre class="cell-output-{output.name}">{html.escape(output.text)}</pre>')
                elif output.output_type in ("display_data", "execute_result"):
                    data = output.data
                    if "text/html" in data:
                        inner.append(data["text/html"])
                    elif "image/svg+xml" in data:
                        inner.append(data["image/svg+xml"])
                    elif "text/plain" in data:
                        inner.append(f"<pre>{html.escape(data['text/plain'])}</pre>")
        ident = f' id="{html.escape(str(label))}"' if label else ""
        parts.append(f'<div{ident} class="cell">{"".join(inner)}</div>')
    page_html = "\n".join(parts)
    if table_processing != "none":
        page_html = re.sub(
            r"<table(?![^>]*data-quarto-disable-processing=\"true\")",
            '<table data-double-reprocessed="true"',
            page_html,
        )
    target = out_dir / page.relative_to(project).with_suffix(".html")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>{page_html}</body></html>\n')
    return target


def resource_files(project: Path, config: dict, out_dir: Path) -> list[Path]:
    found: list[Path] = []
    for entry in config.get("project", {}).get("resources", []) or []:
        for match in glob.glob(str(project / entry), recursive=True):
            path = Path(match)
            files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
            found.extend(f for f in files if out_dir not in f.parents)
    return found


def run_scripts(step: str, project: Path, scripts: list[str], python: str, env: dict[str, str]) -> None:
    for script in scripts:
        args = script.split()
        command = [python, *args] if args[0].endswith(".py") else args
        completed = subprocess.run(command, cwd=project, env={**os.environ, **env})
        if completed.returncode != 0:
            fail(f"{step} {script} failed (exit code {completed.returncode})")


def scripts_of(config: dict, step: str) -> list[str]:
    scripts = config.get("project", {}).get(step) or []
    return [scripts] if isinstance(scripts, str) else scripts


def main(argv: list[str]) -> None:
    if not argv or argv[0] != "render":
        fail("the double knows `quarto render` only")
    args = argv[1:]
    output_dir = None
    if "--output-dir" in args:
        i = args.index("--output-dir")
        output_dir = args[i + 1]
        del args[i : i + 2]
    target = Path(args[0] if args else ".").resolve()
    project = find_project(target)
    config = yaml.safe_load((project / "_quarto.yml").read_text()) or {}
    out_dir = Path(output_dir).resolve() if output_dir else project / config.get("project", {}).get("output-dir", ".")
    render_all = target.is_dir()
    if render_all:
        pages = [project / p for p in config.get("project", {}).get("render", [])]
    else:
        pages = [target]
    python = python_for_kernel()
    if scripts_of(config, "pre-render"):
        env = {"QUARTO_PROJECT_INPUT_FILES": "\n".join(os.path.relpath(p, project) for p in pages)}
        if render_all:
            env["QUARTO_PROJECT_RENDER_ALL"] = "1"
        run_scripts("pre-render", project, scripts_of(config, "pre-render"), python, env)
    resources = resource_files(project, config, out_dir)  # before any page runs
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = [render_page(project, config, page, out_dir, python, len(pages) > 3) for page in pages]
    for resource in resources:
        destination = out_dir / resource.relative_to(project)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(resource, destination)
    if scripts_of(config, "post-render"):
        env = {
            "QUARTO_PROJECT_OUTPUT_DIR": str(out_dir),
            "QUARTO_PROJECT_OUTPUT_FILES": "\n".join(os.path.relpath(o, project) for o in outputs),
        }
        if render_all:
            env["QUARTO_PROJECT_RENDER_ALL"] = "1"
        run_scripts("post-render", project, scripts_of(config, "post-render"), python, env)
    print(f"Output created: {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1:])
