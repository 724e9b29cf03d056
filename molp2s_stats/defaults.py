"""Where the package's own files live, and the defaults the command line shows before it imports anything heavy.

A wheel carries data/ and reports/ inside the package; a checkout has them at the top
of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _resource(name: str) -> Path:
    inside = _PACKAGE / name
    return inside if inside.is_dir() else _PACKAGE.parent / name


DATA = _resource("data")
REPORTS = _resource("reports")


def in_checkout() -> bool:
    """Whether the package runs from a source checkout (``reports/`` beside the project's
    ``pyproject.toml``) rather than from an installed wheel (``reports/`` inside the package)."""
    return REPORTS.parent != _PACKAGE and (REPORTS.parent / "pyproject.toml").exists()


def report_folder() -> Path:
    """Where the report's default database and site go unless told otherwise: ``reports/`` in a
    checkout; ``molp2s-report/`` in the working folder for an installed package, whose own folder
    (site-packages) is no place to write."""
    return REPORTS if in_checkout() else Path.cwd() / "molp2s-report"


DEFAULT_BENCHMARK = DATA / "benchmark"
DEFAULT_RESPONSES = DATA / "responses"

# Defaults the command line shows before it imports the statistics.
DEFAULT_DB = "molp2s.duckdb"
DB_ENV_VAR = "MOLP2S_DB"
DEFAULT_DRAWS = 2000  # family-bootstrap replicates of every metric
DEFAULT_PAIRED_DRAWS = 10_000  # paired input comparisons (the paper's check figure)
# A paired difference within ±2 pp is called equivalent (when its 1 − 2α interval lies inside):
# on a 136-family cohort of one task a family, about 2.7 families' answers
DEFAULT_MARGIN = 0.02
DEFAULT_MAX_PEAKS = 20  # IR and Raman peaks shown in a prompt
SIMULATION_SEED = 20261129
# Which interval a row carries, in words, for --help and the report pages (the method column names it).
INTERVAL_HELP = (
    "Intervals: the family bootstrap's percentile interval in the middle of the range; near 0% or "
    "100%, where 5 families' worth of answers or fewer go the other way and the bootstrap collapses "
    "towards a point, Wilson's score interval on the effective number of families, and for a "
    "difference (RM, a paired or model-pair difference) the MOVER interval of its two discordant "
    "parts; between 5 and 15 families' worth, the two intervals' ends weighted by how many, so that "
    "one more answer never makes an interval jump. The method column says which a row carries."
)
CONDITIONS = ("none", "source", "shuffled", "cf")


def shown_path(path: Path) -> str:
    """A package path as a user in the current folder would type it: ``data/benchmark`` from a
    checkout's root (or beside a ``data`` link to it), else relative when below, else absolute."""
    import os

    here = Path.cwd()
    if path.is_relative_to(DATA.parent):
        typed = path.relative_to(DATA.parent)  # data/benchmark
        if (here / typed).resolve() == path.resolve():
            return typed.as_posix()
    relative = os.path.relpath(path, here)
    return relative if not relative.startswith("..") else str(path)


def default_data_options() -> str:
    """The options of ``molp2s load`` that load the package's default data, as typed from the current
    folder: ``--benchmark data/benchmark --responses data/responses`` from a checkout's root, else
    ``--example`` (an installed package's data lie deep in site-packages: no path to type)."""
    benchmark, responses = shown_path(DEFAULT_BENCHMARK), shown_path(DEFAULT_RESPONSES)
    if Path(benchmark).is_absolute() or benchmark.startswith(".."):
        return "--example"
    return f"--benchmark {benchmark} --responses {responses}"
