"""molp2s-stats: cohorts, reliance metrics and family-level uncertainty for MolP2SBench.

Data flows one way: input files -> DuckDB (``sql/staging`` then ``sql/marts``)
-> statistics on polars frames (this package) -> CLI and reports.
"""

__version__ = "0.1.0"
