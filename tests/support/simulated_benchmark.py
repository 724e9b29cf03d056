"""A synthetic benchmark answered by simulated models with known truth, loaded into DuckDB."""

from __future__ import annotations

from molp2s_stats import simulate, store
from molp2s_stats.ingest import load, read_benchmark


def write_simulated(root, *, families: int, channels: tuple[str, ...], models, seed: int):
    """``simulate.synthetic_benchmark`` written out, answered and loaded. Returns (database path, truth)."""
    folder = root / "bench"
    folder.mkdir()
    for name, frame in simulate.synthetic_benchmark(families=families, channels=channels).items():
        frame.write_parquet(folder / f"{name}.parquet")
    responses, truth = simulate.simulate(read_benchmark(folder), models=models, seed=seed)
    paths = simulate.write(responses, truth, root / "responses", models=models, seed=seed, samples=1)
    db = root / "sim.duckdb"
    con = store.connect(db)
    load(con, benchmark=folder, responses=paths)
    con.close()
    return db, truth
