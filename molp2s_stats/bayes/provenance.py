"""What a fit was fitted on, recorded in the fit, so that a fit and a database can be matched.

A fit saved beside a database goes stale the moment another response file is loaded: the
posterior would silently leave the new model out. So a fit records the database's
contents when it was read (the benchmark's fingerprint, the SHA-256 of every loaded
response file, the models and the channels with a cohort) in its posterior attributes,
and ``mismatch`` says, in words, how a database differs from what its fit saw.
"""

from __future__ import annotations

import json

import duckdb

ATTRIBUTE = "fitted_on"  # the posterior attribute holding the record, as JSON


def database_contents(con: duckdb.DuckDBPyConnection) -> dict:
    """The benchmark fingerprint, loads, models and cohort channels of the database (sorted lists)."""

    def column(sql: str) -> list:
        return sorted(value for (value,) in con.sql(sql).fetchall())

    return {
        "benchmark": column("SELECT fingerprint FROM benchmark"),
        "loads": column("SELECT sha256 FROM response_files"),
        "models": column("SELECT DISTINCT model FROM responses"),
        "channels": column("SELECT channel FROM cohort_summary WHERE cohort > 0"),
    }


def record(idata, con: duckdb.DuckDBPyConnection) -> None:
    """Write the database's contents into the fit's posterior attributes (NetCDF keeps strings)."""
    idata.posterior.attrs[ATTRIBUTE] = json.dumps(database_contents(con))


def recorded(idata) -> dict | None:
    """The record a fit carries, or None for a fit saved before fits recorded it."""
    text = idata.posterior.attrs.get(ATTRIBUTE)
    return json.loads(text) if text else None


def mismatch(idata, con: duckdb.DuckDBPyConnection) -> str | None:
    """None when the fit was made on this database's current contents; else what differs, in words."""
    was = recorded(idata)
    if was is None:
        return "the fit does not record which database it was fitted on"
    now = database_contents(con)
    if was == now:
        return None
    differences = []
    if was["benchmark"] != now["benchmark"]:
        differences.append("the benchmark was loaded again with other contents")
    added = [m for m in now["models"] if m not in was["models"]]
    removed = [m for m in was["models"] if m not in now["models"]]
    if added:
        differences.append(f"models loaded since: {', '.join(added)}")
    if removed:
        differences.append(f"models no longer in the database: {', '.join(removed)}")
    if not added and not removed and was["loads"] != now["loads"]:
        differences.append("response files loaded or removed since (the same models)")
    if was["channels"] != now["channels"] and not differences:
        differences.append("the channels with a cohort changed")
    return "; ".join(differences)
