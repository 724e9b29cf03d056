"""A synthetic benchmark answered by simulated models with known truth, loaded into DuckDB."""

from __future__ import annotations

import polars as pl

from molp2s_stats import simulate, store
from molp2s_stats.ingest import load, read_benchmark

FRAGMENTS = ["[*]CCC", "[*]C(C)C", "[*]OCC", "[*]COC"]
TASK_SCHEMA = {c: pl.String for c in ("task_id", "family_id", "channel", "condition", "target", "shown_family",
                                      "shown_label")}


def write_simulated(root, *, families: int, channels: tuple[str, ...], models, seed: int):
    """Families of four candidates (source A), every condition in each channel; no property
    values, so every family passes input validation. Returns (database path, truth)."""
    fams, cands, tasks = [], [], []
    ids = [f"F{i:03d}" for i in range(families)]
    for i, f in enumerate(ids):
        fams.append((f, "c1ccc(cc1)[*]", "A"))
        for fragment, label in zip(FRAGMENTS, "ABCD"):
            cands.append((f, label, fragment, "c1ccc(cc1)" + fragment.replace("[*]", "")))
        tasks.append((f"{f}-p0", f, "none", "none", "A", None, None))
        for channel in channels:
            tasks.append((f"{f}-{channel}-s", f, channel, "source", "A", f, "A"))
            tasks.append((f"{f}-{channel}-sh", f, channel, "shuffled", "A", ids[(i + 1) % families], "A"))
            for k in "BCD":
                tasks.append((f"{f}-{channel}-cf-{k}", f, channel, "cf", k, f, k))
    folder = root / "bench"
    folder.mkdir()
    pl.DataFrame(fams, schema=["family_id", "scaffold", "source"], orient="row").write_parquet(folder / "families.parquet")
    pl.DataFrame(cands, schema=["family_id", "label", "fragment", "molecule"], orient="row").write_parquet(
        folder / "candidates.parquet")
    pl.DataFrame([("F000", "A", channels[0], "1.0")], schema=["family_id", "label", "channel", "value"],
                 orient="row").write_parquet(folder / "properties.parquet")
    pl.DataFrame(tasks, schema=TASK_SCHEMA, orient="row").write_parquet(folder / "tasks.parquet")
    responses, truth = simulate.simulate(read_benchmark(folder), models=models, seed=seed)
    paths = simulate.write(responses, truth, root / "responses", models=models, seed=seed, samples=1)
    db = root / "sim.duckdb"
    con = store.connect(db)
    load(con, benchmark=folder, responses=paths)
    con.close()
    return db, truth
