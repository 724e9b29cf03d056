#!/usr/bin/env python
"""Benchmark: does `molp2s audit` find defects planted in a benchmark, and only those?

Per seed: a synthetic benchmark (``simulate.synthetic_benchmark``: four candidates a
family, two channels, dipole values 0, 1, 2 and 3 D for A–D so that every family is
input-validated), answered by the eight simulated models of ``simulate.DEFAULT_MODELS``
(skills from chance to strong), then defects planted in distinct families:

- wrong keys (``--wrong-keys``, a share of the families): the answers were made with A
  as the source; the benchmark is then rewritten to say B is (its P0, source and shuffled
  tasks target B, its B counterfactual becomes an A one): what a key written for the
  wrong label looks like to the audit;
- duplicate candidates: D's molecule written as B's;
- indistinguishable properties: C's dipole set 0.05 D from the source A's (the cutoff is 0.3 D).

Printed per flag over the seeds: planted, flagged, precision and recall at the default
threshold (wrong keys at a false-discovery rate of 0.05), and precision among the top 20
findings by score; and how many families have no signal (not planted: every model right,
or wrong, on every answer). For wrong keys, which score ranks the planted families first:
of the N families each ranks highest (N the number planted), how many were planted, for
the audit's likelihood ratio (ability × difficulty model) and for a plain count (the most
chosen other label's share of the answers less the key's).

    .venv/bin/python benchmarks/bench_audit.py [--seeds 5] [--families 136] [--wrong-keys 0.04]
        [--duplicates 3] [--indistinguishable 3] [--samples 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from molp2s_stats import simulate, store
from molp2s_stats.ingest import load, read_benchmark
from molp2s_stats.stats import audit

CHANNELS = ("dipole_norm", "gap")
DIPOLES = {"A": 0.0, "B": 1.0, "C": 2.0, "D": 3.0}


def planted_benchmark(
    root: Path, *, families: int, seed: int, wrong_keys: float, duplicates: int, indistinguishable: int, samples: int
) -> tuple[Path, list[Path], dict[str, set]]:
    tables = simulate.synthetic_benchmark(families=families, channels=CHANNELS)
    ids = tables["families"]["family_id"].to_list()
    tables["properties"] = pl.DataFrame(
        [(f, label, "dipole_norm", str(value)) for f in ids for label, value in DIPOLES.items()],
        schema=["family_id", "label", "channel", "value"],
        orient="row",
    )
    clean = root / "clean"
    clean.mkdir()
    for name, frame in tables.items():
        frame.write_parquet(clean / f"{name}.parquet")
    models = simulate.DEFAULT_MODELS
    responses, truth = simulate.simulate(read_benchmark(clean), models=models, seed=seed, samples=samples)
    paths = simulate.write(responses, truth, root / "responses", models=models, seed=seed, samples=samples)
    rng = np.random.default_rng(seed)
    chosen = rng.permutation(ids)
    n_keys = max(1, round(wrong_keys * families))
    planted = {
        "wrong_key": set(chosen[:n_keys]),
        "duplicate_candidates": set(chosen[n_keys : n_keys + duplicates]),
        "indistinguishable": {
            (f, "dipole_norm") for f in chosen[n_keys + duplicates : n_keys + duplicates + indistinguishable]
        },
    }
    keys = list(planted["wrong_key"])
    tasks = tables["tasks"]
    cf_b = pl.col("family_id").is_in(keys) & (pl.col("condition") == "cf") & (pl.col("target") == "B")
    tables["families"] = tables["families"].with_columns(
        pl.when(pl.col("family_id").is_in(keys)).then(pl.lit("B")).otherwise(pl.col("source")).alias("source")
    )
    tables["tasks"] = tasks.with_columns(
        pl.when(pl.col("family_id").is_in(keys) & pl.col("condition").is_in(["none", "source", "shuffled"]))
        .then(pl.lit("B"))
        .when(cf_b)
        .then(pl.lit("A"))
        .otherwise(pl.col("target"))
        .alias("target"),
        pl.when(pl.col("shown_family").is_in(keys) & pl.col("condition").is_in(["source", "shuffled"]))
        .then(pl.lit("B"))
        .when(cf_b)
        .then(pl.lit("A"))
        .otherwise(pl.col("shown_label"))
        .alias("shown_label"),
    )
    duplicated = list(planted["duplicate_candidates"])
    b_molecule = dict(tables["candidates"].filter(pl.col("label") == "B").select("family_id", "molecule").iter_rows())
    tables["candidates"] = tables["candidates"].with_columns(
        pl.when(pl.col("family_id").is_in(duplicated) & (pl.col("label") == "D"))
        .then(pl.col("family_id").replace_strict(b_molecule, default=None))
        .otherwise(pl.col("molecule"))
        .alias("molecule")
    )
    close = [f for f, _ in planted["indistinguishable"]]
    tables["properties"] = tables["properties"].with_columns(
        pl.when(pl.col("family_id").is_in(close) & (pl.col("label") == "C"))
        .then(pl.lit("0.05"))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    folder = root / "bench"
    folder.mkdir()
    for name, frame in tables.items():
        frame.write_parquet(folder / f"{name}.parquet")
    return folder, paths, planted


def plain_count(con) -> pl.Series:
    """Families ranked by the most chosen non-key label's share of the key-target answers less the key's."""
    choices = audit.key_target_choices(con)
    keys = con.sql("SELECT family_id, source_label AS key FROM stg_families").pl()
    shares = (
        choices.join(keys, on="family_id")
        .group_by("family_id", "label", "key")
        .agg(pl.col("answers").sum())
        .with_columns((pl.col("answers") / pl.col("answers").sum().over("family_id")).alias("share"))
    )
    key_share = shares.filter(pl.col("label") == pl.col("key")).select("family_id", pl.col("share").alias("key_share"))
    other = shares.filter(pl.col("label") != pl.col("key")).group_by("family_id").agg(pl.col("share").max())
    scored = other.join(key_share, on="family_id", how="left").with_columns(
        (pl.col("share") - pl.col("key_share").fill_null(0.0)).alias("score")
    )
    return scored.sort("score", descending=True)["family_id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--families", type=int, default=136)
    parser.add_argument("--wrong-keys", type=float, default=0.04, help="share of the families with a wrong key")
    parser.add_argument("--duplicates", type=int, default=3)
    parser.add_argument("--indistinguishable", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1, help="answers per task")
    args = parser.parse_args()
    scores = {
        flag: {"planted": 0, "flagged": 0, "hits": 0, "top": 0, "top_hits": 0}
        for flag in ("wrong_key", "duplicate_candidates", "indistinguishable")
    }
    no_signal, seconds = [], []
    ranking = {"likelihood ratio": 0, "plain count": 0, "planted": 0}
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            folder, paths, planted = planted_benchmark(
                Path(tmp),
                families=args.families,
                seed=seed,
                wrong_keys=args.wrong_keys,
                duplicates=args.duplicates,
                indistinguishable=args.indistinguishable,
                samples=args.samples,
            )
            con = store.connect(Path(tmp) / "db.duckdb")
            load(con, benchmark=folder, responses=paths)
            started = time.perf_counter()
            findings = audit.audit(con, seed=seed)
            seconds.append(time.perf_counter() - started)
            n = len(planted["wrong_key"])
            ratio = audit.key_swap_scores(con).sort("score", descending=True)["family_id"].head(n)
            ranking["likelihood ratio"] += sum(f in planted["wrong_key"] for f in ratio)
            ranking["plain count"] += sum(f in planted["wrong_key"] for f in plain_count(con).head(n))
            ranking["planted"] += n
            con.close()
        for flag, truth in planted.items():
            part = findings.filter(pl.col("flag") == flag).sort("score", descending=True)
            keys = (
                list(part["family_id"])
                if flag != "indistinguishable"
                else list(part.select("family_id", "channel").iter_rows())
            )
            hits = sum(k in truth for k in keys)
            top = keys[:20]
            scores[flag]["planted"] += len(truth)
            scores[flag]["flagged"] += len(keys)
            scores[flag]["hits"] += hits
            scores[flag]["top"] += len(top)
            scores[flag]["top_hits"] += sum(k in truth for k in top)
        no_signal.append(findings.filter(pl.col("flag") == "no_signal").height)
        print(f"seed {seed}: {findings.height} findings in {seconds[-1]:.1f} s", flush=True)
    print(f"\n{args.seeds} seeds × {args.families} families, 8 simulated models, {args.samples} answer(s) a task")
    print(f"{'flag':<22} {'planted':>7} {'flagged':>7} {'precision':>9} {'recall':>7} {'top-20 precision':>16}")
    for flag, s in scores.items():
        precision = s["hits"] / s["flagged"] if s["flagged"] else float("nan")
        recall = s["hits"] / s["planted"] if s["planted"] else float("nan")
        top = s["top_hits"] / s["top"] if s["top"] else float("nan")
        print(f"{flag:<22} {s['planted']:>7} {s['flagged']:>7} {precision:>9.0%} {recall:>7.0%} {top:>16.0%}")
    print(
        f"wrong keys among the top-ranked families (as many as planted, {ranking['planted']} over the seeds): "
        f"likelihood ratio {ranking['likelihood ratio'] / ranking['planted']:.0%}, "
        f"plain count {ranking['plain count'] / ranking['planted']:.0%}"
    )
    print(
        f"no_signal (not planted): {np.mean(no_signal):.1f} family × channel cells a seed; "
        f"audit time median {np.median(seconds):.1f} s"
    )


if __name__ == "__main__":
    main()
