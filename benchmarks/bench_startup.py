#!/usr/bin/env python
"""Benchmark: how long a `molp2s` command takes as a whole process (targets: --help ≤ 0.5 s,
sql and cohort on the default database ≤ 1.5 s).

Builds the default database (data/benchmark and data/responses) in a temporary folder
once, then times each command as a fresh process, medians of ``--repeats`` runs.

    .venv/bin/python benchmarks/bench_startup.py [--repeats 3] [--db FILE]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MOLP2S = [sys.executable, "-m", "molp2s_stats.cli"]


def seconds(command: list[str], repeats: int) -> tuple[float, list[float]]:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--db", type=Path, help="an existing database (default: the default data, built here)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            db = Path(tmp) / "default.duckdb"
            subprocess.run([*MOLP2S, "demo", "--db", str(db), "--bootstrap", "0"], check=True, capture_output=True)
        cases = [
            ("molp2s --help", [*MOLP2S, "--help"], 0.5),
            ("molp2s sql (one count)", [*MOLP2S, "sql", "--db", str(db), "SELECT count(*) FROM responses"], 1.5),
            ("molp2s cohort", [*MOLP2S, "cohort", "--db", str(db)], 1.5),
            ("python -c 'import molp2s_stats.cli'", [sys.executable, "-c", "import molp2s_stats.cli"], None),
        ]
        print(f"whole-process wall time, median of {args.repeats} ({time.strftime('%Y-%m-%d')})")
        failed = 0
        for name, command, target in cases:
            median, runs = seconds(command, args.repeats)
            verdict = "" if target is None else f"  target <= {target} s: {'pass' if median <= target else 'FAIL'}"
            failed += target is not None and median > target
            print(f"  {name:<38} {median:5.2f} s  {[round(r, 2) for r in runs]}{verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
