"""The statistics on the cohorts' frames: metrics and their intervals, resampling, comparisons,
ranks and stability, power, subset plans and estimates, the benchmark audit, explanations.

Everything here reads frames the SQL marts produce (or a connection, through a module's
``*_from_db`` function) and returns tidy polars frames; nothing here formats for a page or
knows about the command line.
"""
