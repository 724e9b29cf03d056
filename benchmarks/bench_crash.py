#!/usr/bin/env python
"""Benchmark: loads killed at random points, and Ctrl-C, over many trials: is every one all or nothing?

Each trial starts `molp2s load` of the default data (389 families, 8 models, about 160,000
answers) into a new database, waits a random time (uniform over the time a full load
takes, measured first) and sends SIGKILL (no handler runs) or SIGINT (Ctrl-C: the load
must roll back and say so). Then it opens the database, if there is one, and counts:
a trial survives when the database holds nothing or everything a full load holds; after
SIGINT, when the load exited 130 saying nothing was loaded and left no database behind, or,
where the signal came after the commit, the database is whole and the load said so.
Printed: trials, faults survived, answers lost (a partial load), and the median time
from SIGINT to exit.

    .venv/bin/python benchmarks/bench_crash.py [--trials 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from molp2s_stats import store

DATA = Path(__file__).resolve().parents[1] / "data"
MOLP2S = Path(sys.executable).with_name("molp2s")


def load(db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            str(MOLP2S),
            "load",
            "--benchmark",
            str(DATA / "benchmark"),
            "--responses",
            *map(str, sorted((DATA / "responses").glob("*.parquet"))),
            "--db",
            str(db),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def counts(db: Path) -> tuple[int, int] | None:
    """(families, answers) in the database, or None where it cannot be opened."""
    try:
        con = store.connect(db, read_only=True)
    except store.StoreError:
        return None
    try:
        return (
            con.execute("SELECT count(*) FROM families").fetchall()[0][0],
            con.execute("SELECT count(*) FROM responses").fetchall()[0][0],
        )
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        full_process = load(root / "full.duckdb")
        full_process.communicate()
        full_seconds = time.perf_counter() - started
        full = counts(root / "full.duckdb")
        print(f"a full load: {full_seconds:.1f} s, {full[0]} families and {full[1]:,} answers", flush=True)
        survived, lost, to_exit = 0, 0, []
        for trial in range(args.trials):
            db = root / f"trial-{trial}.duckdb"
            how = "SIGINT" if trial % 2 else "SIGKILL"
            after = float(rng.uniform(0.5, full_seconds))
            process = load(db)
            time.sleep(after)
            finished_first = process.poll() is not None
            sent = time.perf_counter()
            if not finished_first:
                process.send_signal(signal.SIGINT if how == "SIGINT" else signal.SIGKILL)
            _, stderr = process.communicate()
            to_exit.append(time.perf_counter() - sent) if how == "SIGINT" and not finished_first else None
            found = counts(db) if db.exists() else (0, 0)
            whole = found in ((0, 0), full) or (found is None and not db.exists())
            if how == "SIGINT" and not finished_first:
                rolled_back = process.returncode == 130 and "nothing was loaded" in stderr and not db.exists()
                # a signal that lands after the commit: the load is whole, and it says so (or it had just ended)
                # (exit −2: the signal came as the interpreter shut down, after the load had reported itself)
                committed = found == full and (
                    process.returncode in (0, -signal.SIGINT) or "after the load was committed" in stderr
                )
                whole = rolled_back or committed
            survived += whole
            if found not in (None, (0, 0), full):
                lost += full[1] - found[1]
            print(
                f"trial {trial + 1}: {how} after {after:.1f} s{' (the load had finished)' if finished_first else ''}"
                f": {'all or nothing' if whole else 'PARTIAL'} {found}"
                + (
                    ""
                    if whole
                    else f" exit {process.returncode}: {stderr.strip().splitlines()[-1] if stderr.strip() else ''}"
                ),
                flush=True,
            )
    median_exit = f"{statistics.median(to_exit):.2f} s" if to_exit else "no SIGINT landed before the end"
    print(
        f"\n{args.trials} trials: {survived} faults survived, {lost} answers lost; "
        f"from SIGINT to exit, median {median_exit}"
    )
    sys.exit(0 if survived == args.trials else 1)


if __name__ == "__main__":
    main()
