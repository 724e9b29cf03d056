#!/usr/bin/env python
"""Benchmark: loading a paper-size benchmark with 10 M responses, and the metrics on it.

Run from the repository root (``make bench`` does the same)::

    .venv/bin/python benchmarks/bench_load_and_metrics.py [--rows N] [--seed S] [--keep DIR]

It generates, in a temporary folder (``--keep DIR`` writes there instead and keeps
everything), a paper-size benchmark: 7 models, the 12 single channels, 136 families of
4 candidates (labels A-D), so per family and channel one source, one shuffled and three
cf tasks, plus one P0 task per family (136 x (12 x 5 + 1) = 8,296 tasks). Every family
is input-validated in every channel (the candidates' property values are far apart),
and every model answers every task, so each channel's cohort is all 136 families.

Responses: ``--rows`` rows (default 10 M) of Parquet, one file per model, with a parsed
``choice`` and many samples per task (``sample``); and a separate JSONL file of raw
``response`` text (default 100 k rows) for the JSONL + parsing throughput. Generating
the files is not part of any measured figure.

Measured and printed:

1. ``ingest.load`` of the benchmark and all Parquet response files into a fresh
   on-disk DuckDB file, in one call (seconds). Run once: it is the expensive step.
2. All point metrics, ``metrics.metrics_from_db(con, draws=0)``, on that database
   (median of 3 runs, seconds).
3. (1) + (2) against the 60 s target.
4. Peak RSS (``ru_maxrss``) of the child process that ran (1) and (2), against the
   4 GiB target up to 40 M rows and 8 GiB up to 100 M; the child is started with
   'spawn', so generation memory does not count.
5. The paper-size bootstrap: all metrics with draws = 2,000 (7 models, 12 channels,
   136 families) on a database with ONE sample per task, so the bootstrap matches
   the paper's size (median of 3, seconds), against the 10 s target.
6. JSONL + parsing load throughput (rows/s) of the raw-text file, loaded on its own
   into a database that already holds the benchmark (median of 3 fresh databases).
7. ``compare.paired_inputs`` with 10,000 draws (ir -> raman, every model; median of 3).

Timings depend on the machine (cores, disk, other load); the script prints what it ran
on. It exits 1 when a target is missed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from molp2s_stats import ingest, simulate, store
from molp2s_stats.stats import compare, metrics

# --- the paper-size design ---------------------------------------------------------

N_MODELS = 7
N_FAMILIES = 136
LABELS = ("A", "B", "C", "D")
CHANNELS = (
    "dipole_norm",
    "dipole_vector",
    "gap",
    "uvvis",
    "ir",
    "raman",
    "h1_peaks",
    "h1_peaks_int",
    "h1_atomwise",
    "c13_peaks",
    "c13_peaks_deg",
    "c13_atomwise",
)
MODELS = tuple(f"bench-model-{i}" for i in range(1, N_MODELS + 1))
RAW_MODEL = "bench-raw-text"  # the JSONL file's model, so its keys never clash

TARGET_LOAD_PLUS_METRICS_S = 60.0
TARGET_RSS_GIB = 4.0  # up to 40 M rows
TARGET_RSS_GIB_LARGE = 8.0  # beyond, up to 100 M rows (the memory must not grow with the data)


def rss_target_gib(rows: int) -> float:
    return TARGET_RSS_GIB if rows <= 40_000_000 else TARGET_RSS_GIB_LARGE


TARGET_BOOTSTRAP_S = 10.0
REPEATS = 3


def _property_value(channel: str, f: int, i: int, rng: np.random.Generator) -> object:
    """A value in its channel's format for candidate ``i`` (0 = A) of family ``f``.

    Every channel has a value, sized like a real molecule's (about 40 IR/Raman peaks,
    10 UV-Vis states, 10 1H and 7 13C shieldings), so loading pays for every pair
    distance, as with the real benchmark. Candidate i is candidate 0 shifted by a
    multiple of a step far above the channel's cutoff, so every pair of every family
    is separated and every family is input-validated.
    """
    if channel == "dipole_norm":
        return 1.0 * i + 0.5  # cutoff 0.30 D
    if channel == "dipole_vector":
        return [1.0 * i, 0.5, -0.5]  # cutoff 0.30 D
    if channel == "gap":
        return round(0.20 + 0.01 * i, 6)  # cutoff 0.0005 Ha
    if channel == "uvvis":  # cutoff 0.05; a 1 eV shift at sigma = 0.2 eV
        energies = 4.0 + 0.25 * np.arange(10) + 1.0 * i
        return {"energies": energies.round(4).tolist(), "strengths": rng.uniform(0.01, 1.0, 10).round(4).tolist()}
    if channel in ("ir", "raman"):  # cutoff 0.05; a 60 cm-1 shift at FWHM 20 cm-1
        freqs = np.sort(rng.uniform(400, 3500, 40)) + 60.0 * i
        return {"frequencies": freqs.round(2).tolist(), "intensities": rng.uniform(0.01, 100, 40).round(3).tolist()}
    if channel.startswith("h1_"):  # cutoff 0.02 ppm; W1 of a 0.1 ppm shift is 0.1
        return {"shieldings": (rng.uniform(24.0, 31.0, 10) + 0.1 * i).round(4).tolist()}
    # c13_*: cutoff 0.10 ppm; W1 of a 1 ppm shift is 1.0
    return {"shieldings": (rng.uniform(20.0, 180.0, 7) + 1.0 * i).round(3).tolist()}


def write_benchmark(directory: Path, rng: np.random.Generator) -> simulate.Design:
    """The package's synthetic benchmark at paper size, with a value for every candidate in
    every channel (``_property_value``), written as Parquet; its tasks as the simulator's design."""
    directory.mkdir(parents=True, exist_ok=True)
    tables = simulate.synthetic_benchmark(families=N_FAMILIES, channels=CHANNELS)
    families = tables["families"]["family_id"].to_list()
    tables["properties"] = pl.DataFrame(
        [
            (fid, label, channel, json.dumps(_property_value(channel, f, i, rng)))
            for f, fid in enumerate(families)
            for i, label in enumerate(LABELS)
            for channel in CHANNELS
        ],
        schema=["family_id", "label", "channel", "value"],
        orient="row",
    )
    for name, frame in tables.items():
        frame.write_parquet(directory / f"{name}.parquet")
    return simulate.task_design(tables)


# The package's simulator answers: models of graded skill that use the properties alike
# (every generated answer, choice or text, comes from molp2s_stats.simulate).
SIMULATED = tuple(
    simulate.SimulatedModel(name, 0.25 * (m - N_MODELS // 2), {"*": 0.8}, {"*": 0.4}, invalid=0.0, raw_text_share=0.0)
    for m, name in enumerate(MODELS)
)
DIFFICULTY_SEED = 20261201  # the families' difficulties, shared by every model
SIMULATED_RAW = simulate.SimulatedModel(RAW_MODEL, 0.0, {"*": 0.8}, {"*": 0.4}, invalid=0.02, raw_text_share=1.0)


def _answers(
    design: simulate.Design, model: simulate.SimulatedModel, counts: np.ndarray, rng: np.random.Generator
) -> simulate.Answers:
    return simulate.draw_answers(
        design, model, _difficulty(len(design.candidates)), counts, rng, np.random.default_rng([DIFFICULTY_SEED, 1])
    )  # texts: a stream of their own


@functools.cache
def _difficulty(n_families: int) -> np.ndarray:
    """One difficulty per family, shared by every model, as in ``simulate.simulate``."""
    return np.random.default_rng([DIFFICULTY_SEED, 0]).normal(0.0, simulate.FAMILY_SD, n_families)


def _samples_per_task(rows: int, n_tasks: int) -> np.ndarray:
    """Samples per task for one model: ``rows`` spread as evenly as possible (first tasks get one more)."""
    base, extra = divmod(rows, n_tasks)
    counts = np.full(n_tasks, base, dtype=np.int64)
    counts[:extra] += 1
    return counts


def write_parquet_responses(
    directory: Path, design: simulate.Design, rows: int, rng: np.random.Generator, *, metadata: bool = False
) -> list[Path]:
    """One Parquet file per model (``model, task_id, sample, choice``), ``rows`` rows in all."""
    directory.mkdir(parents=True, exist_ok=True)
    task_ids = pl.Series(design.task_ids, dtype=pl.String)
    paths = []
    for m, model in enumerate(SIMULATED):
        model_rows = rows // N_MODELS + (1 if m < rows % N_MODELS else 0)
        answers = _answers(design, model, _samples_per_task(model_rows, len(design.task_ids)), rng)
        columns = {
            "model": pl.repeat(model.name, answers.task.size, eager=True, dtype=pl.String),
            "task_id": task_ids.gather(answers.task),
            "sample": pl.Series(answers.sample, dtype=pl.Int64),
            # every family's candidates are A-D in order, so a position is its label
            "choice": pl.Series(LABELS, dtype=pl.String).gather(answers.choice),
        }
        if metadata:  # what real runs carry; the loader keeps it as a JSON text per row
            columns["latency_ms"] = pl.Series(rng.integers(200, 20_000, answers.task.size), dtype=pl.Int64)
            columns["output_tokens"] = pl.Series(rng.integers(5, 2_000, answers.task.size), dtype=pl.Int64)
        path = directory / f"{model.name}.parquet"
        pl.DataFrame(columns).write_parquet(path)
        paths.append(path)
    return paths


_REASONING = (
    "The scaffold keeps its ring, so only the substituent changes the properties.",
    "A larger dipole points to a more polar substituent.",
    "The shown values are closest to the second candidate's expected range.",
    "Comparing the peak positions, a shift of the strongest band is visible.",
    "The shielding pattern suggests an electron-withdrawing group next to the ring.",
    "Alkyl groups would barely move the HOMO-LUMO gap.",
    "A heteroatom directly attached to the ring fits the observed trend best.",
)


def _raw_text(rng: np.random.Generator, answer: str) -> str:
    """The simulator's answer after a few hundred characters of reasoning, almost always unique
    (the parser's throughput is measured on distinct texts)."""
    reasoning = " ".join(rng.choice(_REASONING, size=int(rng.integers(2, 6))))
    return f"{reasoning} The property score is {rng.uniform(0, 10):.4f}.\n{answer}"


def write_jsonl_responses(path: Path, design: simulate.Design, rows: int, rng: np.random.Generator) -> Path:
    """Raw ``response`` text for ``rows`` rows of one model, spread over the tasks with samples."""
    answers = _answers(design, SIMULATED_RAW, _samples_per_task(rows, len(design.task_ids)), rng)
    with path.open("w", encoding="utf-8") as out:
        for t, s, c in zip(answers.task.tolist(), answers.sample.tolist(), answers.choice.tolist()):
            candidate = design.candidates[design.family[t]][c] if c >= 0 else (None, None, None)
            text = _raw_text(rng, simulate.answer_text(*candidate, rng))
            out.write(
                json.dumps(
                    {
                        "model": RAW_MODEL,
                        "task_id": design.task_ids[t],
                        "sample": s,
                        "response": text,
                        "latency_ms": int(rng.integers(200, 20_000)),
                    }
                )
                + "\n"
            )
    return path


def write_single_sample_responses(directory: Path, design: simulate.Design, rng: np.random.Generator) -> list[Path]:
    """The paper-size response set: every model answers every task once (7 x 8,296 rows)."""
    return write_parquet_responses(directory, design, N_MODELS * len(design.task_ids), rng)


# --- measurements --------------------------------------------------------------------


def _peak_rss_gib() -> float:
    # ru_maxrss is in KiB on Linux and in bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**30


def _timed(fn, repeats: int) -> tuple[float, list[float], object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, result


def child_load_and_metrics(db: str, benchmark: str, responses: list[str]) -> dict:
    """(1), (2) and (4), run in a spawned process so that only its own memory counts."""
    start = time.perf_counter()
    con = _connect(db)
    connect_s = time.perf_counter() - start
    start = time.perf_counter()
    summary = ingest.load(con, benchmark=benchmark, responses=responses)
    load_s = time.perf_counter() - start
    rss_after_load = _peak_rss_gib()
    median_s, times, result = _timed(lambda: metrics.metrics_from_db(con, draws=0), REPEATS)
    cohort = con.execute("SELECT channel, cohort, input_validated, families_total FROM cohort_summary").fetchall()
    n_responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    start = time.perf_counter()
    con.close()
    close_s = time.perf_counter() - start
    return {
        "connect_s": connect_s,
        "load_s": load_s,
        "metrics_s": median_s,
        "metrics_runs": times,
        "close_s": close_s,
        "rss_after_load_gib": rss_after_load,
        "peak_rss_gib": _peak_rss_gib(),
        "rows_loaded": n_responses,
        "metric_rows": result.height,
        "files": [(f.path, f.rows, f.already_loaded) for f in summary.files],
        "cohort": cohort,
        "db_bytes": os.path.getsize(db),
    }


def _connect(db: str | Path):
    """``store.connect``, without DuckDB's progress bar (it would garble the printed figures)."""
    con = store.connect(db)
    con.execute("SET enable_progress_bar = false")
    return con


def _fresh_db(path: Path) -> Path:
    for suffix in ("", ".wal"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def measure_bootstrap_and_paired(
    work: Path, benchmark: Path, design: simulate.Design, rng: np.random.Generator
) -> dict:
    """(5) and (7) on a paper-size database with one sample per task."""
    files = write_single_sample_responses(work / "responses-single", design, rng)
    db = _fresh_db(work / "paper-size.duckdb")
    con = _connect(db)
    ingest.load(con, benchmark=benchmark, responses=files)
    boot_s, boot_runs, boot = _timed(lambda: metrics.metrics_from_db(con, draws=2000), REPEATS)
    # paired_inputs takes task outcomes of one condition (with each task's target), not family outcomes
    outcomes = compare.read_condition_outcomes(con, channels=["ir", "raman"], condition="source")
    paired_s, paired_runs, paired = _timed(
        lambda: compare.paired_inputs(outcomes, from_channel="ir", to_channel="raman", draws=10_000), REPEATS
    )
    shape = con.execute(
        "SELECT count(DISTINCT model), count(DISTINCT channel), max(n) FROM "
        "(SELECT model, channel, count(*) AS n FROM family_outcomes GROUP BY ALL)"
    ).fetchone()
    con.close()
    return {
        "bootstrap_s": boot_s,
        "bootstrap_runs": boot_runs,
        "bootstrap_rows": boot.height,
        "bootstrap_shape": shape,
        "paired_s": paired_s,
        "paired_runs": paired_runs,
        "paired_rows": paired.height,
    }


def measure_jsonl(work: Path, benchmark: Path, jsonl: Path) -> dict:
    """(6): load the raw-text JSONL file alone into a database that already holds the benchmark."""
    times, summary = [], None
    for run in range(REPEATS):
        db = _fresh_db(work / f"jsonl-{run}.duckdb")
        con = _connect(db)
        ingest.load(con, benchmark=benchmark)
        start = time.perf_counter()
        summary = ingest.load(con, responses=[jsonl]).files[0]
        times.append(time.perf_counter() - start)
        con.close()
        _fresh_db(db)
    median_s = statistics.median(times)
    return {
        "jsonl_s": median_s,
        "jsonl_runs": times,
        "jsonl_rows": summary.rows,
        "jsonl_parsed": summary.parsed,
        "jsonl_invalid": summary.invalid,
        "jsonl_rows_per_s": summary.rows / median_s,
        "jsonl_bytes": jsonl.stat().st_size,
    }


# --- main ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="Parquet response rows (default 10,000,000)")
    parser.add_argument("--jsonl-rows", type=int, default=100_000, help="raw-text JSONL rows (default 100,000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data (default 0)")
    parser.add_argument("--keep", metavar="DIR", help="write the generated files and databases to DIR and keep them")
    parser.add_argument(
        "--with-metadata",
        action="store_true",
        help="add two metadata columns (latency_ms, output_tokens) to the Parquet responses",
    )
    args = parser.parse_args(argv)
    if args.rows < 1 or args.jsonl_rows < 1:
        parser.error("--rows and --jsonl-rows must be positive")

    if args.keep:
        work = Path(args.keep).resolve()
        work.mkdir(parents=True, exist_ok=True)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="molp2s-bench-")
        work = Path(cleanup.name)
    try:
        return _run(args, work)
    finally:
        if cleanup is not None:
            cleanup.cleanup()


def _run(args: argparse.Namespace, work: Path) -> int:
    rng = np.random.default_rng(args.seed)
    import duckdb

    print(
        f"molp2s benchmark: python {platform.python_version()}, duckdb {duckdb.__version__}, "
        f"polars {pl.__version__}, {os.cpu_count()} CPUs, {platform.machine()} {platform.system()}"
    )
    print(f"work folder: {work}{' (kept)' if args.keep else ' (temporary)'}")

    # Generation (not measured).
    start = time.perf_counter()
    benchmark = work / "benchmark"
    design = write_benchmark(benchmark, rng)
    n_tasks = len(design.task_ids)
    parquet = write_parquet_responses(work / "responses", design, args.rows, rng, metadata=args.with_metadata)
    jsonl = write_jsonl_responses(work / "raw-responses.jsonl", design, args.jsonl_rows, rng)
    per_model = args.rows // N_MODELS
    if per_model < n_tasks:
        print(f"warning: {args.rows:,} rows are fewer than one per model and task; cohorts will be incomplete")
    parquet_bytes = sum(p.stat().st_size for p in parquet)
    print(
        f"generated in {time.perf_counter() - start:.1f} s: {N_MODELS} models, {len(CHANNELS)} channels, "
        f"{N_FAMILIES} families x {len(LABELS)} candidates, {n_tasks:,} tasks; "
        f"{args.rows:,} Parquet rows in {len(parquet)} files ({parquet_bytes / 2**20:.0f} MiB, "
        f"~{args.rows / (N_MODELS * n_tasks):.1f} samples per task); "
        f"{args.jsonl_rows:,} JSONL rows ({jsonl.stat().st_size / 2**20:.1f} MiB)"
    )
    print("every candidate has a value in every channel, far apart: every family is input-validated")

    # (1), (2), (4): a spawned child, so its ru_maxrss is its own.
    db = _fresh_db(work / "bench.duckdb")
    print(
        f"\n[1,2,4] load of the benchmark + {args.rows:,} responses (run once), then point metrics "
        f"x{REPEATS}, in a spawned child ...",
        flush=True,
    )
    with mp.get_context("spawn").Pool(1) as pool:
        child = pool.apply(child_load_and_metrics, (str(db), str(benchmark), [str(p) for p in parquet]))
    cohorts = {row[0]: row[1] for row in child["cohort"]}
    print(
        f"  load: {child['load_s']:.2f} s ({child['rows_loaded']:,} rows, "
        f"{child['rows_loaded'] / child['load_s']:,.0f} rows/s; database {child['db_bytes'] / 2**20:.0f} MiB; "
        f"connect {child['connect_s']:.2f} s, close {child['close_s']:.2f} s not included)"
    )
    print(
        f"  point metrics: median {child['metrics_s']:.2f} s of "
        f"[{', '.join(f'{t:.2f}' for t in child['metrics_runs'])}] ({child['metric_rows']:,} rows)"
    )
    print(f"  cohort sizes: {sorted(set(cohorts.values()))} over {len(cohorts)} channels")
    print(f"  peak RSS: {child['peak_rss_gib']:.2f} GiB (after the load: {child['rss_after_load_gib']:.2f} GiB)")

    print(
        f"\n[5,7] paper-size database (one sample per task), bootstrap draws=2000 x{REPEATS}, "
        f"paired_inputs draws=10000 x{REPEATS} ...",
        flush=True,
    )
    paper = measure_bootstrap_and_paired(work, benchmark, design, rng)
    models, channels, families = paper["bootstrap_shape"]
    print(
        f"  bootstrap: median {paper['bootstrap_s']:.2f} s of "
        f"[{', '.join(f'{t:.2f}' for t in paper['bootstrap_runs'])}] "
        f"({models} models x {channels} channels x {families} families, {paper['bootstrap_rows']:,} rows)"
    )
    print(
        f"  paired_inputs (ir -> raman, {models} models): median {paper['paired_s']:.3f} s of "
        f"[{', '.join(f'{t:.3f}' for t in paper['paired_runs'])}]"
    )

    print(f"\n[6] JSONL + parsing: {args.jsonl_rows:,} raw-text rows x{REPEATS} fresh databases ...", flush=True)
    raw = measure_jsonl(work, benchmark, jsonl)
    print(
        f"  load: median {raw['jsonl_s']:.2f} s of [{', '.join(f'{t:.2f}' for t in raw['jsonl_runs'])}] "
        f"= {raw['jsonl_rows_per_s']:,.0f} rows/s ({raw['jsonl_parsed']:,} parsed, "
        f"{raw['jsonl_invalid']:,} invalid)"
    )

    total = child["load_s"] + child["metrics_s"]
    table = [
        ("(1) load benchmark + responses [s]", f"{child['load_s']:.2f}", "-", "-"),
        ("(2) point metrics, draws=0 [s]", f"{child['metrics_s']:.2f}", "-", "-"),
        (
            "(3) load + point metrics [s]",
            f"{total:.2f}",
            f"<= {TARGET_LOAD_PLUS_METRICS_S:.0f}",
            total <= TARGET_LOAD_PLUS_METRICS_S,
        ),
        (
            "(4) peak RSS of (1)+(2) [GiB]",
            f"{child['peak_rss_gib']:.2f}",
            f"<= {rss_target_gib(args.rows):.0f}",
            child["peak_rss_gib"] <= rss_target_gib(args.rows),
        ),
        (
            "(5) bootstrap, draws=2000 [s]",
            f"{paper['bootstrap_s']:.2f}",
            f"<= {TARGET_BOOTSTRAP_S:.0f}",
            paper["bootstrap_s"] <= TARGET_BOOTSTRAP_S,
        ),
        ("(6) JSONL + parse [rows/s]", f"{raw['jsonl_rows_per_s']:,.0f}", "-", "-"),
        ("(7) paired_inputs, draws=10000 [s]", f"{paper['paired_s']:.3f}", "-", "-"),
    ]
    print(f"\nSummary ({args.rows:,} response rows, seed {args.seed}; (1) run once, others median of {REPEATS})")
    widths = [max(len(str(r[i])) for r in table + [("measure", "value", "target", "result")]) for i in range(3)]
    print(f"  {'measure':<{widths[0]}}  {'value':>{widths[1]}}  {'target':<{widths[2]}}  result")
    ok = True
    for name, value, target, passed in table:
        verdict = "-" if passed == "-" else ("pass" if passed else "FAIL")
        ok = ok and passed is not False
        print(f"  {name:<{widths[0]}}  {value:>{widths[1]}}  {target:<{widths[2]}}  {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
