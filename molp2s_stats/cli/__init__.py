"""The ``molp2s`` command line: parse arguments, call the package, print. Nothing else.

One module per stage, each a few commands: ``load`` (data in, prompts out), ``metrics``,
``compare`` (paired comparisons), ``ranks`` (how far the figures can be trusted), ``planning`` (the next study's design), ``bayes``, ``report``, ``database``; what
they share lives in ``app`` (the app, errors) and ``params`` (options and their checks),
and how a result is shown in ``output``. ``reference`` writes the command reference page.

The package's modules are imported lazily (``lazy.lazy_import``): ``molp2s --help``,
``sql`` and ``cohort`` start without scipy, pingouin or PyMC; a command imports what it
calls when it calls it.
"""

from __future__ import annotations

from . import bayes, compare, database, load, metrics, planning, ranks, report  # noqa: F401  (each registers its commands)
from .core import app, main

# The order `molp2s --help` and the command reference list the commands in: the flow of work,
# from loading to the report, then the database tools.
ORDER = (
    "load",
    "prompts",
    "metrics",
    "plan",
    "estimate",
    "explanations",
    "compare-inputs",
    "transitions",
    "cohort",
    "stability",
    "ranks",
    "power",
    "variance",
    "design",
    "frequentist",
    "separability",
    "audit",
    "check",
    "simulate",
    "fit",
    "posterior",
    "report",
    "sql",
    "demo",
)
app.registered_commands.sort(key=lambda info: ORDER.index(info.name))

__all__ = ["app", "main"]
