"""Inspect AI's entry point: makes ``molp2s_stats/molp2s`` known to ``inspect eval``."""

from .inspect_task import molp2s  # noqa: F401
