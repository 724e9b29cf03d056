"""Quarto's pre-render step: build what the pages read (the database and the fit) before any runs.

Quarto runs pre-render scripts before each render, whole project or one page, in the project
folder, on the Python ``QUARTO_PYTHON`` names (quarto.org/docs/projects/scripts.html; quarto-cli
src/command/render/project.ts, ``kProjectPreRender``); `molp2s report` names its own. The work
is ``molp2s_stats.report.prepare``; this file only calls it.
"""

import sys

from molp2s_stats.report.prepare import main

if __name__ == "__main__":
    sys.exit(main())
