"""Quarto's post-render step: copy tables/ (CSV and LaTeX of every table) into the site.

The pages write tables/ while they run; Quarto resolves `project.resources` before any page
runs (quarto-cli src/project/project-resources.ts, projectResourceFiles) and copies that list
after rendering, so a resource entry would ship only the tables an earlier render left
behind. Quarto runs this script after rendering, in the project folder, on its Python (the
one `QUARTO_PYTHON` names, else `python3`: src/core/run/python.ts), with the site's folder in
QUARTO_PROJECT_OUTPUT_DIR (src/command/render/project.ts, runScripts). Standard library only.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def copy_tables(project: Path, site: Path) -> list[Path]:
    """Copy every file of ``project/tables`` into ``site/tables``; returns the copies."""
    source = project / "tables"
    if not source.is_dir():
        return []
    target = site / "tables"
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for path in sorted(source.iterdir()):
        if path.is_file():
            copied.append(Path(shutil.copy2(path, target / path.name)))
    return copied


if __name__ == "__main__":
    site = os.environ.get("QUARTO_PROJECT_OUTPUT_DIR")
    if not site:
        sys.exit("_copy_tables.py: QUARTO_PROJECT_OUTPUT_DIR is not set (Quarto sets it for post-render scripts)")
    copied = copy_tables(Path(__file__).resolve().parent, Path(site))
    print(f"copied {len(copied)} table files into {Path(site) / 'tables'}")
