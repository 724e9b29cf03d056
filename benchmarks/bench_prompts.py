#!/usr/bin/env python
"""Benchmark: rendering every task of the embedded benchmark as prompts (issue target: ≤ 5 s).

Reads data/benchmark once, then renders all tasks (``prompts.render_prompts``) and
writes them in each export format. Medians of 3 runs in one process.

    .venv/bin/python benchmarks/bench_prompts.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from molp2s_stats import prompts
from molp2s_stats.defaults import DEFAULT_BENCHMARK
from molp2s_stats.ingest import read_benchmark


def timed(function, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--benchmark", type=Path, default=DEFAULT_BENCHMARK)
    args = parser.parse_args(argv)
    read_s, tables = timed(lambda: read_benchmark(args.benchmark), args.repeats)
    render_s, rendered = timed(lambda: prompts.render_prompts(tables), args.repeats)
    print(f"benchmark {args.benchmark}: {rendered.height:,} tasks, median of {args.repeats}")
    print(f"  read the benchmark folder      {read_s:6.2f} s")
    print(f"  render every task              {render_s:6.2f} s   (target <= 5 s)")
    with tempfile.TemporaryDirectory() as folder:
        for fmt in prompts.EXPORT_FORMATS:
            out = Path(folder) / f"prompts.{fmt}"
            write_s, _ = timed(lambda: prompts.write_prompts(rendered, out, fmt=fmt, model="model"), args.repeats)  # noqa: B023
            print(f"  write {fmt:<16}         {write_s:6.2f} s   ({out.stat().st_size / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
